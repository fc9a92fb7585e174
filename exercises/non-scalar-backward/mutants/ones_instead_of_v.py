# Passes a tensor of ones to backward() in vjp as well, ignoring v: returns 1^T J.
import torch


def sum_of_grads(x):
    y = x * x
    y.backward(gradient=torch.ones_like(y))
    return x.grad


def vjp(f, x, v):
    x.grad = None
    y = f(x)
    y.backward(torch.ones_like(y))
    return x.grad
