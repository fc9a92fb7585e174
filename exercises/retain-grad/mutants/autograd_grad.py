# Asks torch.autograd.grad for the three gradients: the values are right, but nothing is stored in x.grad.
import torch


def intermediate_grads(x):
    a = 2 * x + 10
    b = 3 * a
    c = 2 * b
    gx, ga, gb = torch.autograd.grad(c.sum(), [x, a, b])
    return {"x": gx, "a": ga, "b": gb}


def _facts(t):
    return {"is_leaf": t.is_leaf, "requires_grad": t.requires_grad,
            "grad_fn": type(t.grad_fn).__name__ if t.grad_fn is not None else None}


def graph_facts(x):
    a = 2 * x + 10
    b = 3 * a
    return {"x": _facts(x), "a": _facts(a), "b": _facts(b)}
