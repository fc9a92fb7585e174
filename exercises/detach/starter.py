import torch


def partial_grad(x: torch.Tensor) -> torch.Tensor:
    """y = x * x, u = y.detach(), z = u * x; backpropagate z.sum() and return x.grad."""
    raise NotImplementedError


def source_grad(x: torch.Tensor) -> torch.Tensor:
    """As partial_grad, then clear x.grad, backpropagate y.sum() and return x.grad."""
    raise NotImplementedError
