# Puts each output's gradient in a column: returns the (n, m) transpose.
import torch


def jacobian(f, x):
    x = x.detach().clone().requires_grad_(True)
    y = f(x)
    columns = [torch.autograd.grad(y[i], x, retain_graph=True)[0] for i in range(y.shape[0])]
    return torch.stack(columns, dim=1)
