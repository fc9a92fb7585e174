"""Drives the submission's Softplus (a torch.autograd.Function) inside the sandbox.

A class cannot leave the sandbox, so these helpers apply it to the inputs a test sends and
hand back plain results: outputs, the gradients backward() left in x.grad, and whether
torch.autograd.gradcheck accepted it. They hold no answers: the tests work out the expected
values themselves.
"""

import torch
from torch.autograd.gradcheck import GradcheckError

import submission


def apply(x, upstream=None, backward=True):
    """y = Softplus.apply(x); then backpropagate (y * upstream).sum() (y.sum() without upstream)."""
    x = x.detach().clone().requires_grad_(True)
    y = submission.Softplus.apply(x)
    if backward:
        (y.sum() if upstream is None else (y * upstream).sum()).backward()
    return {"y": y, "grad": x.grad}


def extreme(values):
    """apply() on a float32 tensor built from a list of large positive and negative numbers."""
    return apply(torch.tensor(values, dtype=torch.float32))


def gradcheck(x):
    """torch.autograd.gradcheck on Softplus.apply at x (float64): passed, and the first line of why not."""
    x = x.detach().clone().requires_grad_(True)
    try:
        passed = torch.autograd.gradcheck(submission.Softplus.apply, (x,))
    except GradcheckError as err:
        return {"passed": False, "reason": str(err).strip().splitlines()[0][:200]}
    return {"passed": bool(passed), "reason": ""}
