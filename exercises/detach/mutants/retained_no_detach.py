# Keeps the graph through u with retain_graph=True instead of detaching, and never clears x.grad.
import torch


def partial_grad(x: torch.Tensor) -> torch.Tensor:
    y = x * x
    u = y.detach()
    z = u * x
    z.sum().backward()
    return x.grad


def source_grad(x):
    y = x * x
    z = y * x
    z.sum().backward(retain_graph=True)
    y.sum().backward()
    return x.grad
