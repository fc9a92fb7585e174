# Returns every batch's loss instead of one mean per epoch.
import torch


def two_gradients(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    y = 2 * torch.dot(x, x)
    y.backward()
    g1 = x.grad.clone()
    x.grad.zero_()
    x.sum().backward()
    return g1, x.grad


def train(model, batches, loss_fn, optimizer, epochs: int) -> list[float]:
    history = []
    for _ in range(epochs):
        batch_losses = []
        for inputs, targets in batches:
            optimizer.zero_grad()
            outputs = model(inputs)
            loss = loss_fn(outputs, targets)
            loss.backward()
            optimizer.step()
            batch_losses.append(loss.item())
        history.extend(batch_losses)
    return history
