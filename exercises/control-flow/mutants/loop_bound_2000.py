# Stops doubling at a norm of 2000 instead of 1000: one doubling too many wherever 2a has a norm below 1000.
import torch


def f(a: torch.Tensor) -> torch.Tensor:
    b = a * 2
    while b.norm() < 2000:
        b = b * 2
    if b.sum() > 0:
        c = b
    else:
        c = 100 * b
    return c


def grad_of_f(a: torch.Tensor) -> torch.Tensor:
    f(a).sum().backward()
    return a.grad
