"""Drives the submission's train() inside the sandbox.

Builds the model, optimizer, loss function and batches from the plain arguments a
test sends, runs train(), and hands back what it returned and the trained parameters.
Holds no answers: the tests work out the expected results themselves.
"""

import numbers

import torch

import submission


def run_train(seed, inputs, targets, batch_size, lr, momentum, epochs, stale=None):
    """``stale``: gradients (weight, bias) the model arrives with, as after an earlier backward()."""
    torch.manual_seed(seed)
    model = torch.nn.Linear(inputs.shape[1], targets.shape[1]).to(inputs.device)
    if stale is not None:
        model.weight.grad, model.bias.grad = (g.clone() for g in stale)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)
    loss_fn = torch.nn.MSELoss()
    batches = [(inputs[i:i + batch_size], targets[i:i + batch_size])
               for i in range(0, inputs.shape[0], batch_size)]
    losses = submission.train(model, batches, loss_fn, optimizer, epochs)
    return {"losses": _plain(losses), "weight": model.weight, "bias": model.bias}


def _plain(value, depth=0):
    """What train() returned, in a form that can leave the sandbox (numpy floats become floats)."""
    if isinstance(value, torch.Tensor):
        return value  # as it is: whether it still carries a graph is part of the answer
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, (list, tuple)) and depth == 0:
        return [_plain(v, 1) for v in value]
    return {"unsupported": type(value).__name__}
