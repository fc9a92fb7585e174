# Switches requires_grad off on the caller's x at the end of partial_grad.
import torch


def partial_grad(x: torch.Tensor) -> torch.Tensor:
    y = x * x
    u = y.detach()
    z = u * x
    z.sum().backward()
    x.requires_grad_(False)
    return x.grad


def source_grad(x: torch.Tensor) -> torch.Tensor:
    y = x * x
    u = y.detach()
    z = u * x
    z.sum().backward()
    x.grad = None
    y.sum().backward()
    return x.grad
