"""Code of the exercise that runs inside the sandbox, beside the submission, when a hidden
test asks for it (``student.probe("name", ...)``). Use a probe to drive what cannot cross
the wall: here, a tensor made inside the sandbox. Only data comes back, and whatever a
probe reports is the submission's to forge: never decide a point from a fact the probe
computed about itself; return values and let the hidden test judge them."""

import torch

from submission import grad_of_cubes


def grad_on_a_fresh_leaf(values: list[float]) -> torch.Tensor:
    x = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    grad_of_cubes(x)
    return x.grad
