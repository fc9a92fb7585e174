# Reduces y with y.mean() before backward() instead of weighting it with ones: x.grad is 2x/n.
import torch


def sum_of_grads(x):
    y = x * x
    y.mean().backward()
    return x.grad


def vjp(f, x, v):
    x.grad = None
    y = f(x)
    y.backward(v)
    return x.grad
