import torch


def backward_twice(x: torch.Tensor) -> torch.Tensor:
    # 6x² from one pass: the gradient of 2y, not y backpropagated twice.
    y = (x ** 3).sum()
    (2 * y).backward()
    return x.grad
