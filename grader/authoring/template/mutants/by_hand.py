import torch


def grad_of_cubes(x):
    return 3 * x ** 2
