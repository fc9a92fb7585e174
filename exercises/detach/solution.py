import torch


def partial_grad(x: torch.Tensor) -> torch.Tensor:
    y = x * x
    u = y.detach()
    z = u * x
    z.sum().backward()
    return x.grad


def source_grad(x: torch.Tensor) -> torch.Tensor:
    y = x * x
    u = y.detach()
    z = u * x
    z.sum().backward()
    x.grad = None
    y.sum().backward()
    return x.grad
