# Returns the grad_fn objects themselves instead of their class names.
import torch


def intermediate_grads(x):
    a = 2 * x + 10
    a.retain_grad()
    b = 3 * a
    b.retain_grad()
    c = 2 * b
    c.sum().backward()
    return {"x": x.grad, "a": a.grad, "b": b.grad}


def graph_facts(x):
    a = 2 * x + 10
    b = 3 * a
    return {name: {"is_leaf": t.is_leaf, "requires_grad": t.requires_grad, "grad_fn": t.grad_fn}
            for name, t in (("x", x), ("a", a), ("b", b))}
