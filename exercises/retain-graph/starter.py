import torch


def backward_twice(x: torch.Tensor) -> torch.Tensor:
    """y = (x ** 3).sum(); call backward() on this same y twice; return x.grad (it is 6 * x ** 2)."""
    raise NotImplementedError
