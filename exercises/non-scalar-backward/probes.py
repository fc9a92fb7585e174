"""Drives the submission's vjp() inside the sandbox.

A function cannot be sent into the sandbox, so the tests name one of the functions
below and send x and v; the probe looks the function up and calls vjp(f, x, v).
Holds no answers: the tests compute the expected products from their own copy of
these definitions.
"""

import torch

import submission


def _matrix(rows, cols, seed, like):
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(rows, cols, generator=generator, dtype=torch.float64).to(like)


FUNCTIONS = {
    "sin_times_x": lambda x: torch.sin(x) * x,
    "matvec": lambda x: _matrix(x.shape[0], x.shape[0], 7, x) @ x,
    "cumsum_squared": lambda x: x.cumsum(0) ** 2,
    "softmax": lambda x: torch.softmax(x, dim=0),
    "moments": lambda x: torch.stack([x.sum(), (x * x).sum(), (x ** 3).sum()]),
    "matrix_square": lambda x: x @ x,
}


def run_vjp(name, x, v):
    """vjp(f, x, v) for the function called `name`; x comes back with its grad."""
    return submission.vjp(FUNCTIONS[name], x, v)


def run_vjp_many(name, x, vs):
    """vjp(f, x, v) for each v in turn, all on the same x; each result copied as it arrives."""
    f = FUNCTIONS[name]
    results = []
    for v in vs:
        out = submission.vjp(f, x, v)
        results.append(out.detach().clone() if isinstance(out, torch.Tensor) else out)
    return results
