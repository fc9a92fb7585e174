# Keeps g1 = x.grad without a copy; zero_() and the next backward() then change g1 in place.
import torch


def two_gradients(x):
    y = 2 * torch.dot(x, x)
    y.backward()
    g1 = x.grad
    x.grad.zero_()
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

