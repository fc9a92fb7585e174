# Returns the function value instead of its gradient.
import torch


def grad_2xtx(x):
    y = 2 * torch.dot(x, x)
    y.backward()
    return y
