# Reports the loss of each epoch's last batch instead of the mean of its batch losses.
import torch


def two_gradients(x):
    y = 2 * torch.dot(x, x)
    y.backward()
    g1 = x.grad.clone()
    x.grad.zero_()
    x.sum().backward()
    return g1, x.grad


def train(model, batches, loss_fn, optimizer, epochs):
    history = []
    for _ in range(epochs):
        for inputs, targets in batches:
            optimizer.zero_grad()
            loss = loss_fn(model(inputs), targets)
            loss.backward()
            optimizer.step()
        history.append(loss.item())
    return history
