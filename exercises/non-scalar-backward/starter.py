import torch


def sum_of_grads(x: torch.Tensor) -> torch.Tensor:
    """y = x * x is a tensor, not a scalar: backpropagate it with a gradient of ones; return x.grad."""
    raise NotImplementedError


def vjp(f, x: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Return v^T J_f(x), computed by one y.backward(v) with y = f(x), and left in x.grad."""
    raise NotImplementedError
