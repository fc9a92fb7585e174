# Knows that the gradient is f(a) / a and returns it without backward(): a.grad stays empty.
import torch


def f(a):
    b = a * 2
    while b.norm() < 1000:
        b = b * 2
    if b.sum() > 0:
        c = b
    else:
        c = 100 * b
    return c


def grad_of_f(a):
    with torch.no_grad():
        return f(a) / a
