# Builds a new leaf from x's values and differentiates that one instead.
import torch


def grad_2xtx(x):
    leaf = torch.tensor(x.tolist(), dtype=x.dtype, requires_grad=True)
    (2 * torch.dot(leaf, leaf)).backward()
    return leaf.grad
