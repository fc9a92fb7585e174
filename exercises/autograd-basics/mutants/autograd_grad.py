# Takes the gradient with torch.autograd.grad, which returns it without storing it in x.grad.
import torch


def grad_2xtx(x):
    y = 2 * torch.dot(x, x)
    return torch.autograd.grad(y, x)[0]
