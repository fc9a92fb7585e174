# Compares the sum with 1 instead of 0.
import torch


def f(a: torch.Tensor) -> torch.Tensor:
    b = a * 2
    while b.norm() < 1000:
        b = b * 2
    if b.sum() > 1:
        c = b
    else:
        c = 100 * b
    return c


def grad_of_f(a: torch.Tensor) -> torch.Tensor:
    f(a).sum().backward()
    return a.grad
