# Never clears x.grad in vjp: a second call on the same x adds its product to the first.
import torch


def sum_of_grads(x):
    y = x * x
    y.backward(gradient=torch.ones_like(y))
    return x.grad


def vjp(f, x, v):
    y = f(x)
    y.backward(v)
    return x.grad
