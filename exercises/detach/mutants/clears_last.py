# Clears x.grad but never calls y.sum().backward(), thinking detach() cut y off too.
import torch


def partial_grad(x: torch.Tensor) -> torch.Tensor:
    y = x * x
    u = y.detach()
    z = u * x
    z.sum().backward()
    return x.grad


def source_grad(x):
    y = x * x
    u = y.detach()
    z = u * x
    z.sum().backward()
    x.grad.zero_()
    return x.grad
