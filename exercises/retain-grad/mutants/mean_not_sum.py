# Backpropagates c.mean() instead of c.sum(): every gradient is divided by the size of x.
import torch


def intermediate_grads(x: torch.Tensor) -> dict:
    a = 2 * x + 10
    a.retain_grad()
    b = 3 * a
    b.retain_grad()
    c = 2 * b
    c.mean().backward()
    return {"x": x.grad, "a": a.grad, "b": b.grad}


def _facts(t: torch.Tensor) -> dict:
    return {
        "is_leaf": t.is_leaf,
        "requires_grad": t.requires_grad,
        "grad_fn": type(t.grad_fn).__name__ if t.grad_fn is not None else None,
    }


def graph_facts(x: torch.Tensor) -> dict:
    a = 2 * x + 10
    b = 3 * a
    return {"x": _facts(x), "a": _facts(a), "b": _facts(b)}
