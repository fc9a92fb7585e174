# Zeroes x.grad before backward() without checking it exists: x.grad is None on a fresh x.
import torch


def sum_of_grads(x):
    y = x * x
    y.backward(gradient=torch.ones_like(y))
    return x.grad


def vjp(f, x, v):
    x.grad.zero_()
    y = f(x)
    y.backward(v)
    return x.grad
