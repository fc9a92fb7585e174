"""Drives the submission's Softplus (a torch.autograd.Function) inside the sandbox.

A class cannot leave the sandbox, so these helpers apply it to the inputs a test sends and
hand back plain results: outputs, and the gradients backward() left in x.grad. They hold no
answers and no verdicts: the tests work out the expected values, and gradcheck, themselves.
"""

import torch

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


def jacobian_data(x, eps):
    """What a gradcheck needs, as plain data: Softplus.apply at x ± eps in each element,
    and the gradient backward() gives for a one-hot upstream gradient on each output.
    The test compares them itself (a verdict computed here could be forged)."""
    x = x.detach()
    outputs = {"plus": [], "minus": []}
    for j in range(x.numel()):
        step = torch.zeros_like(x).reshape(-1)
        step[j] = eps
        for key, sign in (("plus", 1), ("minus", -1)):
            with torch.no_grad():
                outputs[key].append(submission.Softplus.apply(x + sign * step.reshape(x.shape)))
    rows = []
    for i in range(x.numel()):
        upstream = torch.zeros_like(x).reshape(-1)
        upstream[i] = 1
        rows.append(apply(x, upstream.reshape(x.shape))["grad"])
    return {**outputs, "rows": rows}
