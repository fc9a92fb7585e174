import torch


def sum_of_grads(x: torch.Tensor) -> torch.Tensor:
    y = x * x
    y.backward(gradient=torch.ones_like(y))
    return x.grad


def vjp(f, x: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    x.grad = None
    y = f(x)
    y.backward(v)
    return x.grad
