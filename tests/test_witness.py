"""What the student sandbox reports of how an input's .grad came to be (grader/inside/witness.py).

The witness changes torch for the process it runs in (every backward() records how it
began), so the cases run in a Python process of their own, as in a call's child: the
input is watched before the case's code runs, and the origin read after.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# name: (code run with the watched x = tensor([1., -2., 0.5]), the origin reported)
CASES = {
    "backward of a function of x": ("(2 * x @ x).backward()", "backward"),
    "backward twice on a retained graph": (
        "y = (x ** 3).sum()\ny.backward(retain_graph=True)\ny.backward()", "backward"),
    "zeroed in place between two backward()": (
        "(2 * x @ x).backward()\nx.grad.zero_()\nx.sum().backward()", "backward"),
    "zeroed through .data between two backward()": (
        "(2 * x @ x).backward()\nx.grad.data.zero_()\nx.sum().backward()", "backward"),
    "set to None between two backward()": ("(2 * x @ x).backward()\nx.grad = None\nx.sum().backward()", "backward"),
    "zeros assigned before backward()": ("x.grad = torch.zeros_like(x)\n(2 * x @ x).backward()", "backward"),
    "an optimizer's zero_grad()": (
        "opt = torch.optim.SGD([x], lr=0.1)\n(x * x).sum().backward()\nopt.zero_grad(set_to_none=False)\n"
        "(2 * x @ x).backward()", "backward"),
    "an explicit gradient of 1 for a scalar": ("(2 * x @ x).backward(torch.tensor(1.0))", "backward"),
    "torch.autograd.grad first, then backward()": (
        "torch.autograd.grad((3 * x).sum(), x)\n(2 * x @ x).backward()", "backward"),
    "a NaN gradient": ("(x * float('nan')).sum().backward()", "backward"),
    "assigned": ("x.grad = 4 * x.detach()", "written"),
    "assigned in a helper through setattr": (
        "def put(t, v):\n    setattr(t, 'grad', v)\nput(x, 4 * x.detach())", "written"),
    "written in place after backward()": ("(2 * x @ x).backward()\nx.grad.add_(1)", "written"),
    "written through .data after backward()": ("(0 * x).sum().backward()\nx.grad.data.copy_(4 * x.detach())",
                                                "written"),
    "written through NumPy after backward()": ("(0 * x).sum().backward()\nx.grad.numpy()[:] = 4", "written"),
    "written before backward() adds to it": ("x.grad = 4 * x.detach() - 1\nx.sum().backward()", "written"),
    "torch.autograd.grad's result copied in": ("x.grad = torch.autograd.grad(2 * x @ x, x)[0]", "written"),
    "a hook that replaces the gradient": (
        "x.register_hook(lambda g: 4 * x.detach())\n(0 * x).sum().backward()", "written"),
    "a hook that changes the gradient in place": (
        "x.register_hook(lambda g: g.mul_(2))\n(2 * x @ x).backward()", "written"),
    "a hook after accumulation that writes": (
        "def double(t):\n    t.grad.mul_(2)\nx.register_post_accumulate_grad_hook(double)\n(2 * x @ x).backward()",
        "written"),
    "the hooks removed": ("x._backward_hooks.clear()\n(2 * x @ x).backward()", "written"),
    "backward() of x itself": ("x.backward(4 * x.detach())", "upstream"),
    "backward() of x itself with ones": ("x.backward(torch.ones_like(x))", "upstream"),
    "a hand-made gradient through x * 1": ("(x * 1).backward(4 * x.detach())", "upstream"),
    "backward() from x's gradient edge": (
        "torch.autograd.backward(torch.autograd.graph.get_gradient_edge(x), torch.ones_like(x))", "upstream"),
    "the engine started directly": (
        "torch.autograd.Variable._execution_engine.run_backward((x,), (4 * x.detach(),), False, False, (), "
        "True, True)", "upstream"),
    "no gradient at all": ("y = 2 * x @ x", None),
    "Tensor.grad patched to answer 4x": (
        "real = torch._C.TensorBase.grad\ntorch.Tensor.grad = property(lambda t: 4 * t.detach() if t.is_leaf "
        "else real.__get__(t))", None),
}

_RUN = """
import json, sys, torch
from grader.inside import witness
witness.install()
cases, out = json.loads(sys.stdin.read()), {}
real_grad = torch.Tensor.grad
for name, code in cases.items():
    x = torch.tensor([1.0, -2.0, 0.5], requires_grad=True)
    witness.watch([x])
    try:
        exec(code, {"torch": torch, "x": x})
        out[name] = witness.origin(x)
    except Exception as exc:
        out[name] = "error: " + repr(exc)
    torch.Tensor.grad = real_grad
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def origins():
    run = subprocess.run([sys.executable, "-c", _RUN], input=json.dumps({k: v[0] for k, v in CASES.items()}),
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("case", list(CASES))
def test_how_a_grad_came_to_be_is_what_autograd_was_seen_to_do(origins, case):
    assert origins[case] == CASES[case][1], CASES[case][0]


def test_the_origin_travels_with_the_tensor_and_is_checked_on_arrival():
    import torch

    from grader.inside import wire

    x = torch.ones(2, requires_grad=True)
    (x * 2).sum().backward()
    tree, blob = wire.encode([x, torch.ones(2)], grad_origin=lambda t: "backward" if t is x else None)
    back = wire.decode(tree, blob)
    assert back[0].grad_origin == "backward" and back[1].grad_origin is None
    tree2, blob2 = wire.encode(back, states=True)  # relayed by the worker as it stands
    assert wire.decode(tree2, blob2)[0].grad_origin == "backward"
    tree["list"][0]["tensor"]["grad_origin"] = "trust me"
    with pytest.raises(wire.WireError):
        wire.decode(tree, blob)


# name: (code run with the watched x, the graphs of the passes x.grad holds)
PASSES = {
    "one y, backward() twice": ("y = (x ** 3).sum()\ny.backward(retain_graph=True)\ny.backward()", [0, 0]),
    "one y, torch.autograd.backward twice": (
        "y = (x ** 3).sum()\ntorch.autograd.backward(y, retain_graph=True)\ntorch.autograd.backward([y])", [0, 0]),
    "one y built by a loop of additions": (
        "y = 0\nfor v in x:\n    y = y + v * v * v\ny.backward(retain_graph=True)\ny.backward()", [0, 0]),
    "y computed again": ("for _ in range(2):\n    y = (x ** 3).sum()\n    y.backward()", [0, 1]),
    "2 * y backpropagated once": ("y = (x ** 3).sum()\n(2 * y).backward()", [0]),
    "cleared between two passes": (
        "y = (x ** 3).sum()\ny.backward(retain_graph=True)\nx.grad = None\ny.backward()", [0]),
    "zeroed between two passes": (
        "y = (x ** 3).sum()\ny.backward(retain_graph=True)\nx.grad.zero_()\ny.backward()", [0]),
    "written": ("x.grad = 4 * x.detach()", None),
}

_RUN_PASSES = _RUN.replace("out[name] = witness.origin(x)", "p = witness.passes(x)\n        out[name] = p and list(p)")


def test_which_graph_each_backward_pass_came_through():
    run = subprocess.run([sys.executable, "-c", _RUN_PASSES], input=json.dumps({k: v[0] for k, v in PASSES.items()}),
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout.strip().splitlines()[-1])
    assert seen == {name: want for name, (_, want) in PASSES.items()}


def test_the_passes_travel_with_the_tensor_and_are_checked_on_arrival():
    import torch

    from grader.inside import wire

    x = torch.ones(2, requires_grad=True)
    (x * 2).sum().backward()
    tree, blob = wire.encode([x], grad_passes=lambda t: (0, 0))
    back = wire.decode(tree, blob)
    assert back[0].grad_passes == (0, 0)
    assert wire.decode(*wire.encode(back, states=True))[0].grad_passes == (0, 0)
    for bad in ([0] * 65, ["0"], [99], 3):
        tree["list"][0]["tensor"]["grad_passes"] = bad
        with pytest.raises(wire.WireError):
            wire.decode(tree, blob)
