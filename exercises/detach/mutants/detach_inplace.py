# Uses y.detach_() (in place), believing it works like y.detach(): y itself leaves the graph.
import torch


def partial_grad(x):
    y = x * x
    u = y.detach_()
    z = u * x
    z.sum().backward()
    return x.grad


def source_grad(x):
    y = x * x
    u = y.detach_()
    z = u * x
    z.sum().backward()
    x.grad = None
    y.sum().backward()
    return x.grad
