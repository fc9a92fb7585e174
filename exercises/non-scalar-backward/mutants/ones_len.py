# Uses torch.ones(len(y)) as the gradient, which has y's shape only when y is 1-D.
import torch


def sum_of_grads(x):
    y = x * x
    y.backward(gradient=torch.ones(len(y)))
    return x.grad


def vjp(f, x, v):
    x.grad = None
    y = f(x)
    y.backward(v)
    return x.grad
