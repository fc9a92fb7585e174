# Stops after the first backward(): returns the gradient of z.sum().
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
    return x.grad
