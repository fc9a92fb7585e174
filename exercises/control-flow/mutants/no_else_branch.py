# Forgets the 100 * b branch: returns b whatever the sign of b.sum().
import torch


def f(a):
    b = a * 2
    while b.norm() < 1000:
        b = b * 2
    return b


def grad_of_f(a):
    f(a).sum().backward()
    return a.grad
