import torch


def f(a: torch.Tensor) -> torch.Tensor:
    """Double a (b = 2a), keep doubling while b.norm() < 1000, then return b if b.sum() > 0 else 100 * b."""
    raise NotImplementedError


def grad_of_f(a: torch.Tensor) -> torch.Tensor:
    """Backpropagate f(a).sum() and return a.grad."""
    raise NotImplementedError
