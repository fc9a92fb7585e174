# Differentiates on paper (3x^2, twice) and skips backward(): x.grad stays None.
import torch


def backward_twice(x):
    return 6 * x.detach() ** 2
