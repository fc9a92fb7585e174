# Flattens v into a vector, since "vᵀJ" multiplies a vector, and passes that to backward().
import torch


def sum_of_grads(x):
    y = x * x
    y.backward(gradient=torch.ones_like(y))
    return x.grad


def vjp(f, x, v):
    x.grad = None
    y = f(x)
    y.backward(v.flatten())
    return x.grad
