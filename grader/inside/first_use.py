"""What torch costs the first time it is used, paid once in a warm process before it forks:
each call's child (the student's room) and each grade's child (the exercise's room) starts
as a copy of a process that has paid it already. And what a call costs its fresh child the
first time, rehearsed by a spare before its call comes."""

from __future__ import annotations


def pay() -> None:
    import torch
    import torch.autograd.functional  # noqa: F401
    import torch.nn.functional  # noqa: F401
    import torch.optim  # noqa: F401

    x = torch.ones(3, requires_grad=True)
    (2 * x @ x).backward()
    # An optimizer's first zero_grad()/step() imports torch._dynamo (~1.2 s and 800 modules):
    # a training loop in a submission or in an exercise's own reference run would pay it again
    # in every child.
    model = torch.nn.Linear(2, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    optimizer.zero_grad()
    torch.nn.functional.mse_loss(model(torch.ones(1, 2)), torch.zeros(1, 1)).backward()
    optimizer.step()
    torch.optim.Adam(model.parameters()).step()


# A call's own first steps, rehearsed on values of our own (see rehearse()).
_REHEARSAL_SOURCE = """
import torch

def grad_2xtx(x):
    y = 2 * torch.dot(x, x)
    y.backward()
    return x.grad
"""


def rehearse() -> bool:
    """A spare's rehearsal of a call, while it waits for one: decode a tensor and watch it,
    compile and run a function with a backward pass, encode the result. A forked child
    shares the warm process's pages until it writes one, and each first write copies it, a
    fault at a time: about 5 ms of a small call's 10 went to that (bench/engine_latency.py).
    Rehearsed, those copies are made before the call's request.

    Only what every call does: each page rehearsed is CPU spent on every spare, whether its
    call needs it or not. An optimizer's step, which only a training loop takes, cost every
    call about 3 ms of CPU (15 ms of a grade's 100 in the student sandbox) to save a
    training call about as much of its time.

    Nothing of it is left for the call to see: it draws no random number (the generator's
    state is the call's), changes no mode, keeps no reference, and what the witness
    recorded is put back as it was. A rehearsal that fails (False) leaves the call to pay as before."""
    import importlib.util

    import torch

    from . import wire, witness

    watched, graphs = dict(witness._watched), witness._graph_count[0]
    namespace: dict = {}
    try:
        tree, blob = wire.encode({"args": [torch.ones(3, requires_grad=True)], "kwargs": {}})
        args = wire.to_sandbox(wire.decode(tree, bytearray(blob)))["args"]  # as a frame read arrives
        witness.watch([args, {}])
        exec(compile(_REHEARSAL_SOURCE, "rehearsal.py", "exec"), namespace)
        # An import from a file, as the submission's will be (this module's own file, run
        # again as a module that no one imports, so that nothing of the sandbox changes).
        spec = importlib.util.spec_from_file_location("_rehearsed_import", __file__)
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
        value = namespace["grad_2xtx"](*args)
        tree, data = wire.encode_parts({"value": value, "args": args, "kwargs": {}}, grad_origin=witness.origin,
                                       grad_passes=witness.passes)
        wire.frame_parts({"ok": True, "result": tree}, *data)
        return True
    except Exception:  # noqa: BLE001 - a rehearsal only saves time
        return False
    finally:
        namespace.clear()  # the function and its globals hold each other: no cycle left
        witness._watched.clear()
        witness._watched.update(watched)
        witness._graph_count[0] = graphs
