# Tidies up after backward() by switching off requires_grad on the caller's x.
import torch


def grad_2xtx(x):
    (2 * torch.dot(x, x)).backward()
    x.requires_grad_(False)
    return x.grad
