# Builds a and b under torch.no_grad(), so that reading their facts changes nothing: no graph is recorded.
import torch


def intermediate_grads(x):
    a = 2 * x + 10
    a.retain_grad()
    b = 3 * a
    b.retain_grad()
    c = 2 * b
    c.sum().backward()
    return {"x": x.grad, "a": a.grad, "b": b.grad}


def facts(t):
    return {"is_leaf": t.is_leaf, "requires_grad": t.requires_grad,
            "grad_fn": type(t.grad_fn).__name__ if t.grad_fn is not None else None}


def graph_facts(x):
    with torch.no_grad():
        a = 2 * x + 10
        b = 3 * a
    return {"x": facts(x), "a": facts(a), "b": facts(b)}
