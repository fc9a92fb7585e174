# Backpropagates f(a).mean() instead of f(a).sum(): a.grad is f(a) / a divided by a's size.
import torch


def f(a: torch.Tensor) -> torch.Tensor:
    b = a * 2
    while b.norm() < 1000:
        b = b * 2
    if b.sum() > 0:
        return b
    return 100 * b


def grad_of_f(a: torch.Tensor) -> torch.Tensor:
    f(a).mean().backward()
    return a.grad
