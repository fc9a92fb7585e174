# Passes y itself as the gradient argument: y.backward(y), a "gradient of y's shape".
import torch


def sum_of_grads(x):
    y = x * x
    y.backward(y)
    return x.grad


def vjp(f, x, v):
    x.grad = None
    y = f(x)
    y.backward(v)
    return x.grad
