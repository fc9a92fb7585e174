# Takes the mean of 2x² where xᵀx is a sum: the gradient is 4x/n.
import torch


def grad_2xtx(x):
    y = (2 * x * x).mean()
    y.backward()
    return x.grad
