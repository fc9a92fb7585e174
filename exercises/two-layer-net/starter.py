import torch


def train_two_layer(x: torch.Tensor, y: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor,
                    learning_rate: float, steps: int) -> list[float]:
    """Train relu(x @ w1) @ w2 on y by gradient descent, updating w1 and w2 in place.

    Return the loss of every step (a Python float, computed before that step's update).
    """
    raise NotImplementedError
