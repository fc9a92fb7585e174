"""What torch costs the first time it is used, paid once in a warm process before it forks:
each call's child (the student's room) and each grade's child (the exercise's room) starts
as a copy of a process that has paid it already."""

from __future__ import annotations


def pay() -> None:
    import torch
    import torch.autograd.functional  # noqa: F401
    import torch.nn.functional  # noqa: F401
    import torch.optim  # noqa: F401

    x = torch.ones(3, requires_grad=True)
    (2 * x @ x).backward()
    # An optimizer's first zero_grad()/step() imports torch._dynamo (~1.2 s and 800 modules):
    # a training loop in a submission or in an exercise's own reference run would pay it again
    # in every child.
    model = torch.nn.Linear(2, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    optimizer.zero_grad()
    torch.nn.functional.mse_loss(model(torch.ones(1, 2)), torch.zeros(1, 1)).backward()
    optimizer.step()
    torch.optim.Adam(model.parameters()).step()
