# Runs backward() but returns y itself, as if the function's output were the answer.
import torch


def sum_of_grads(x):
    y = x * x
    y.backward(gradient=torch.ones_like(y))
    return y


def vjp(f, x, v):
    x.grad = None
    y = f(x)
    y.backward(v)
    return x.grad
