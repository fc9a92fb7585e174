# Detaches the wrong factor: z = y * x.detach() lets the gradient through y instead of x (2x^2).
import torch


def partial_grad(x):
    y = x * x
    z = y * x.detach()
    z.sum().backward()
    return x.grad


def source_grad(x):
    y = x * x
    z = y * x.detach()
    z.sum().backward()
    x.grad.zero_()
    y.sum().backward()
    return x.grad
