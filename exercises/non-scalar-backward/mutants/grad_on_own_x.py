# Switches requires_grad on in the x it was given, then takes vjp with torch.autograd.grad: x.grad stays empty.
import torch


def sum_of_grads(x):
    y = x * x
    y.sum().backward()
    return x.grad


def vjp(f, x, v):
    x.requires_grad_(True)
    (g,) = torch.autograd.grad(f(x), x, grad_outputs=v)
    return g
