# Rebuilds b from its Python values each round: torch.tensor(b.tolist()) has no history.
import torch


def f(a):
    b = a * 2
    while b.norm().item() < 1000:
        b = torch.tensor((b * 2).tolist())
    if b.sum().item() > 0:
        c = b
    else:
        c = 100 * b
    return c


def grad_of_f(a):
    f(a).sum().backward()
    return a.grad
