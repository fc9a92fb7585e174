# Backpropagates f(x).sum() once: gets the column sums, a single row, instead of the matrix.
import torch


def jacobian(f, x):
    x = x.detach().clone().requires_grad_(True)
    f(x).sum().backward()
    return x.grad
