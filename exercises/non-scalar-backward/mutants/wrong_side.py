# Builds the full Jacobian and multiplies v on the wrong side: J @ v instead of v @ J.
import torch


def sum_of_grads(x):
    y = x * x
    y.backward(gradient=torch.ones_like(y))
    return x.grad


def vjp(f, x, v):
    jacobian = torch.autograd.functional.jacobian(f, x)
    return jacobian @ v
