# Doubles before checking (a do-while loop): one doubling too many when 2a is already large.
import torch


def f(a):
    b = a * 2
    while True:
        b = b * 2
        if b.norm() >= 1000:
            break
    if b.sum() > 0:
        c = b
    else:
        c = 100 * b
    return c


def grad_of_f(a):
    f(a).sum().backward()
    return a.grad
