# Backpropagates z.mean() and y.mean() where the statement says z.sum() and y.sum(): every gradient is 1/n.
import torch


def partial_grad(x):
    y = x * x
    u = y.detach()
    z = u * x
    z.mean().backward()
    return x.grad


def source_grad(x):
    y = x * x
    u = y.detach()
    z = u * x
    z.mean().backward()
    x.grad = None
    y.mean().backward()
    return x.grad
