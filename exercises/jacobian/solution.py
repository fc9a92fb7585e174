import torch


def jacobian(f, x: torch.Tensor) -> torch.Tensor:
    x = x.detach().clone().requires_grad_(True)
    y = f(x)
    rows = []
    for i in range(y.shape[0]):
        if y[i].requires_grad:
            (row,) = torch.autograd.grad(y[i], x, retain_graph=True, allow_unused=True,
                                         materialize_grads=True)
        else:  # this output does not depend on x at all
            row = torch.zeros_like(x)
        rows.append(row)
    return torch.stack(rows)
