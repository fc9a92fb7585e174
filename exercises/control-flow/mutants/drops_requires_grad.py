# Switches requires_grad off on the caller's a after backward().
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
    f(a).sum().backward()
    a.requires_grad_(False)
    return a.grad
