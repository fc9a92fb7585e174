# The reference solution: it never enters the sandbox's view of other students, and
# `grader check` requires it to score full marks, twice, with identical reports.
import torch


def grad_of_cubes(x: torch.Tensor) -> torch.Tensor:
    y = (x ** 3).sum()
    y.backward()
    return x.grad
