# Does not clear x.grad between the two backward() calls: the gradients accumulate (x^2 + 2x).
import torch


def partial_grad(x):
    y = x * x
    u = y.detach()
    z = u * x
    z.sum().backward()
    return x.grad


def source_grad(x):
    y = x * x
    u = y.detach()
    z = u * x
    z.sum().backward()
    y.sum().backward()
    return x.grad
