# Clones x first in graph_facts so as not to touch the caller's tensor: the clone is no leaf.
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
    return {"is_leaf": t.is_leaf, "requires_grad": t.requires_grad,
            "grad_fn": type(t.grad_fn).__name__ if t.grad_fn is not None else None}


def graph_facts(x):
    x = x.clone()
    a = 2 * x + 10
    b = 3 * a
    return {"x": _facts(x), "a": _facts(a), "b": _facts(b)}
