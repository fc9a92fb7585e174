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
    trace = _Trace(model, optimizer)
    losses = submission.train(model, batches, loss_fn, optimizer, epochs)
    return {"losses": _plain(losses), "weight": model.weight, "bias": model.bias, "trace": trace.facts()}


class _Trace:
    """In what order train() ran backward() and optimizer.step(), and whether each step found
    gradients to use: the facts that tell apart the ways of leaving the parameters unmoved."""

    def __init__(self, model, optimizer):
        self.params = list(model.parameters())
        self.steps = self.steps_with_grads = 0
        self.first_step = self.first_backward = None
        self.events = 0
        optimizer.register_step_pre_hook(self._step)
        self.params[0].register_post_accumulate_grad_hook(self._backward)

    def _step(self, optimizer, args, kwargs):
        self.events += 1
        self.steps += 1
        self.first_step = self.events if self.first_step is None else self.first_step
        if any(p.grad is not None and bool(p.grad.abs().sum()) for p in self.params):
            self.steps_with_grads += 1

    def _backward(self, param):
        self.events += 1
        self.first_backward = self.events if self.first_backward is None else self.first_backward

    def facts(self):
        return {"steps": self.steps, "steps_with_grads": self.steps_with_grads,
                "step_before_backward": self.first_step is not None and (
                    self.first_backward is None or self.first_step < self.first_backward)}


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
