# y is the mean of x ** 3, not its sum: x.grad is 6x²/n.
import torch


def backward_twice(x: torch.Tensor) -> torch.Tensor:
    y = (x ** 3).mean()
    y.backward(retain_graph=True)
    y.backward()
    return x.grad
