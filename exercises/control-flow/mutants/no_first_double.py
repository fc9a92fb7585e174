# Starts the loop from a itself, skipping the first doubling.
import torch


def f(a: torch.Tensor) -> torch.Tensor:
    b = a
    while b.norm() < 1000:
        b = b * 2
    if b.sum() > 0:
        c = b
    else:
        c = 100 * b
    return c


def grad_of_f(a: torch.Tensor) -> torch.Tensor:
    f(a).sum().backward()
    return a.grad
