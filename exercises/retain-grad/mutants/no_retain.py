# Never calls retain_grad(): a and b are not leaves, so backward() leaves their .grad as None.
import torch


def intermediate_grads(x):
    a = 2 * x + 10
    b = 3 * a
    c = 2 * b
    c.sum().backward()
    return {"x": x.grad, "a": a.grad, "b": b.grad}


def graph_facts(x):
    a = 2 * x + 10
    b = 3 * a
    return {name: {"is_leaf": t.is_leaf, "requires_grad": t.requires_grad,
                   "grad_fn": type(t.grad_fn).__name__ if t.grad_fn is not None else None}
            for name, t in (("x", x), ("a", a), ("b", b))}
