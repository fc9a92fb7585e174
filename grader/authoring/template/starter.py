import torch


def grad_of_cubes(x: torch.Tensor) -> torch.Tensor:
    """Return the gradient of y = sum(x ** 3) with respect to x, computed by y.backward()."""
    raise NotImplementedError
