# Writes w1 = w1 - lr * w1.grad without no_grad: w1 becomes a non-leaf, so its .grad is None in step 2.
import torch


def train_two_layer(x, y, w1, w2, learning_rate, steps):
    losses = []
    for _ in range(steps):
        loss = (x.mm(w1).clamp(min=0).mm(w2) - y).pow(2).sum()
        losses.append(loss.item())
        loss.backward()
        w1 = w1 - learning_rate * w1.grad
        w2 = w2 - learning_rate * w2.grad
    return losses
