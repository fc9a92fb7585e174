# Never detaches y, so the gradient of z also flows back through y = x*x (3x^2).
import torch


def partial_grad(x):
    y = x * x
    z = y * x
    z.sum().backward()
    return x.grad


def source_grad(x):
    y = x * x
    z = y * x
    z.sum().backward()
    x.grad = None
    y.sum().backward()
    return x.grad
