# Fills rows of a torch.zeros(m, n) made without dtype=: the Jacobian of a float64 x comes back float32.
import torch


def jacobian(f, x):
    x = x.detach().clone().requires_grad_(True)
    y = f(x)
    J = torch.zeros(y.shape[0], x.shape[0])
    for i in range(y.shape[0]):
        (row,) = torch.autograd.grad(y[i], x, retain_graph=True, allow_unused=True, materialize_grads=True)
        J[i] = row
    return J
