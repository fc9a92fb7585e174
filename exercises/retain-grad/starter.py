import torch


def intermediate_grads(x: torch.Tensor) -> dict:
    """a = 2x + 10, b = 3a, c = 2b; backpropagate c.sum(); return {"x": x.grad, "a": a.grad, "b": b.grad}."""
    raise NotImplementedError


def graph_facts(x: torch.Tensor) -> dict:
    """For x, a and b: {"is_leaf": bool, "requires_grad": bool, "grad_fn": class name or None}."""
    raise NotImplementedError
