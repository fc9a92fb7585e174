# Takes the second gradient without resetting x.grad: backward() adds to it, so g2 = 4x + 1.
import torch


def two_gradients(x):
    y = 2 * torch.dot(x, x)
    y.backward()
    g1 = x.grad.clone()
    x.sum().backward()
    return g1, x.grad


def train(model, batches, loss_fn, optimizer, epochs):
    history = []
    for _ in range(epochs):
        batch_losses = []
        for inputs, targets in batches:
            optimizer.zero_grad()
            loss = loss_fn(model(inputs), targets)
            loss.backward()
            optimizer.step()
            batch_losses.append(loss.item())
        history.append(sum(batch_losses) / len(batch_losses))
    return history

