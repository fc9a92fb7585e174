# Tidies up after backward() by switching off requires_grad on the caller's x.
import torch


def sum_of_grads(x):
    y = x * x
    y.backward(gradient=torch.ones_like(y))
    x.requires_grad_(False)
    return x.grad


def vjp(f, x, v):
    x.grad = None
    y = f(x)
    y.backward(v)
    return x.grad
