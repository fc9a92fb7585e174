# Takes the second gradient of x.mean() instead of x.sum(): g2 is ones / n.
import torch


def two_gradients(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    y = 2 * torch.dot(x, x)
    y.backward()
    g1 = x.grad.clone()
    x.grad.zero_()
    x.mean().backward()
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
        history.append(sum(batch_losses) / len(batch_losses))
    return history
