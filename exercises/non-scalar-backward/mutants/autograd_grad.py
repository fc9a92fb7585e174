# Takes both gradients with torch.autograd.grad: the values are right, x.grad stays empty.
import torch


def sum_of_grads(x):
    y = x * x
    return torch.autograd.grad(y, x, torch.ones_like(y))[0]


def vjp(f, x, v):
    return torch.autograd.grad(f(x), x, v)[0]
