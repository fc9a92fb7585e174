# Clears x.grad between the two calls out of habit, so only one pass is left (3x^2).
import torch


def backward_twice(x):
    y = (x ** 3).sum()
    y.backward(retain_graph=True)
    x.grad.zero_()
    y.backward()
    return x.grad
