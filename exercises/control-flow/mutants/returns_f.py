# Backpropagates, then returns f(a) instead of a.grad.
import torch


def f(a: torch.Tensor) -> torch.Tensor:
    b = a * 2
    while b.norm() < 1000:
        b = b * 2
    if b.sum() > 0:
        c = b
    else:
        c = 100 * b
    return c


def grad_of_f(a: torch.Tensor) -> torch.Tensor:
    out = f(a)
    out.sum().backward()
    return out
