# Builds the Jacobian with torch.autograd.functional.jacobian and returns it, never multiplying by v.
import torch


def sum_of_grads(x):
    y = x * x
    y.backward(gradient=torch.ones_like(y))
    return x.grad


def vjp(f, x, v):
    return torch.autograd.functional.jacobian(f, x)
