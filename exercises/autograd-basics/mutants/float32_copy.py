# Returns a copy of x.grad made with torch.tensor(...tolist()): float32, whatever x's dtype.
import torch


def grad_2xtx(x):
    y = 2 * torch.dot(x, x)
    y.backward()
    return torch.tensor(x.grad.tolist())
