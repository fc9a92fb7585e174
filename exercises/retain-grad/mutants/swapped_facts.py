# Confuses the two flags: reports requires_grad as is_leaf and is_leaf as requires_grad.
import torch


def intermediate_grads(x):
    a = 2 * x + 10
    a.retain_grad()
    b = 3 * a
    b.retain_grad()
    c = 2 * b
    c.sum().backward()
    return {"x": x.grad, "a": a.grad, "b": b.grad}


def _facts(t):
    return {"is_leaf": t.requires_grad, "requires_grad": t.is_leaf,
            "grad_fn": type(t.grad_fn).__name__ if t.grad_fn is not None else None}


def graph_facts(x):
    a = 2 * x + 10
    b = 3 * a
    return {"x": _facts(x), "a": _facts(a), "b": _facts(b)}
