# Reduces y with y.sum() before backward(), so v never enters: returns 1^T J.
import torch


def sum_of_grads(x):
    y = x * x
    y.sum().backward()
    return x.grad


def vjp(f, x, v):
    x.grad = None
    y = f(x)
    y.sum().backward()
    return x.grad
