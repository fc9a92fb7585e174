# Passes x as the gradient argument, reading "backward with respect to x" into y.backward(x).
import torch


def sum_of_grads(x):
    y = x * x
    y.backward(x)
    return x.grad


def vjp(f, x, v):
    x.grad = None
    y = f(x)
    y.backward(v)
    return x.grad
