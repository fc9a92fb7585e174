import torch


def jacobian(f, x: torch.Tensor) -> torch.Tensor:
    """The (m, n) Jacobian of f at x: entry [i, j] is d f(x)[i] / d x[j]. Use autograd, one row at a time."""
    raise NotImplementedError
