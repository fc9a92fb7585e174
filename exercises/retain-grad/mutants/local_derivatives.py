# Reads "the gradient of a" as the local derivative da/dx, and of b as db/da, taken with autograd.grad.
import torch


def intermediate_grads(x):
    a = 2 * x + 10
    b = 3 * a
    c = 2 * b
    da = torch.autograd.grad(a.sum(), x, retain_graph=True)[0]
    db = torch.autograd.grad(b.sum(), a, retain_graph=True)[0]
    c.sum().backward()
    return {"x": x.grad, "a": da, "b": db}


def _facts(t):
    return {"is_leaf": t.is_leaf, "requires_grad": t.requires_grad,
            "grad_fn": type(t.grad_fn).__name__ if t.grad_fn is not None else None}


def graph_facts(x):
    a = 2 * x + 10
    b = 3 * a
    return {"x": _facts(x), "a": _facts(a), "b": _facts(b)}
