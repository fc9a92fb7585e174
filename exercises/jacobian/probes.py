"""Calls the submission's jacobian() inside the sandbox on a function chosen by name.

Functions cannot cross the sandbox wall, so the tests name one of the functions below and
send only x. Holds no answers: the tests differentiate their own copies of these functions.
"""

import torch

import submission


def _matrix(rows, cols, seed, like):
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(rows, cols, generator=generator, dtype=torch.float64).to(like.dtype).to(like.device)


def linear(x):
    """A x with a fixed, non-symmetric n x n matrix."""
    return _matrix(x.shape[0], x.shape[0], 11, x) @ x


def elementwise(x):
    return torch.sin(x) * x + x ** 3


def tall(x):
    """R^n -> R^(n+2)."""
    return _matrix(x.shape[0] + 2, x.shape[0], 23, x) @ torch.tanh(x)


def wide(x):
    """R^n -> R^2."""
    return torch.stack([(x ** 2).sum(), (x[:-1] * x[1:]).sum()])


def cycle(x):
    """R^3 -> R^3 with cross terms; its Jacobian is not symmetric."""
    return torch.stack([x[0] * x[1], x[1] * x[2] ** 2, x[2] * torch.exp(x[0])])


def cross(x):
    """R^3 -> R^4 with cross terms."""
    return torch.stack([x[0] * x[1], x[1] * x[2], x[0] + torch.sin(x[2]), x[0] * x[1] * x[2]])


FUNCTIONS = {f.__name__: f for f in (linear, elementwise, tall, wide, cycle, cross)}


def run_jacobian(name, x):
    return submission.jacobian(FUNCTIONS[name], x)
