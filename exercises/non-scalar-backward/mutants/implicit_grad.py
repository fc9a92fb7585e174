# Calls backward() with no argument on a non-scalar y, as if it were a scalar loss.
import torch


def sum_of_grads(x):
    y = x * x
    y.backward()
    return x.grad


def vjp(f, x, v):
    x.grad = None
    y = f(x)
    y.backward()
    return x.grad
