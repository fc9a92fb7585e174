# Works out the chain rule on paper and returns constants: x.grad is never filled.
import torch


def intermediate_grads(x):
    ones = torch.ones_like(x.detach())
    return {"x": 12 * ones, "a": 6 * ones, "b": 2 * ones}


def graph_facts(x):
    a = 2 * x + 10
    b = 3 * a
    return {name: {"is_leaf": t.is_leaf, "requires_grad": t.requires_grad,
                   "grad_fn": type(t.grad_fn).__name__ if t.grad_fn is not None else None}
            for name, t in (("x", x), ("a", a), ("b", b))}
