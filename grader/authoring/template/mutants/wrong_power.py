import torch


def grad_of_cubes(x):
    y = (x ** 3 / 3).sum()
    y.backward()
    return x.grad
