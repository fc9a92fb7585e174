# Swaps the branches: 100 * b when the sum is positive, b otherwise.
import torch


def f(a: torch.Tensor) -> torch.Tensor:
    b = a * 2
    while b.norm() < 1000:
        b = b * 2
    if b.sum() > 0:
        c = 100 * b
    else:
        c = b
    return c


def grad_of_f(a: torch.Tensor) -> torch.Tensor:
    f(a).sum().backward()
    return a.grad
