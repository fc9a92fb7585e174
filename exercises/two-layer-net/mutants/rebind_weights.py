# Rebinds w1 = w1 - lr * w1.grad under no_grad (then re-enables grad): training works on new tensors, the caller's weights never change.
import torch


def train_two_layer(x, y, w1, w2, learning_rate, steps):
    losses = []
    for _ in range(steps):
        loss = (x.mm(w1).clamp(min=0).mm(w2) - y).pow(2).sum()
        losses.append(loss.item())
        loss.backward()
        with torch.no_grad():
            w1 = w1 - learning_rate * w1.grad
            w2 = w2 - learning_rate * w2.grad
        w1.requires_grad_(True)
        w2.requires_grad_(True)
    return losses
