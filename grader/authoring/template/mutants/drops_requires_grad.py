import torch


def grad_of_cubes(x):
    y = (x ** 3).sum()
    y.backward()
    x.requires_grad_(False)
    return x.grad
