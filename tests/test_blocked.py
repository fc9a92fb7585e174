"""Blocked APIs: read from the source on the trusted side (ast, nothing run), by every name."""

import subprocess
import sys

import pytest

from grader.engine import blocked
from grader.engine.bwrap import INSIDE_PACKAGE

JACOBIAN = ("torch.autograd.functional.jacobian", "torch.func")


@pytest.mark.parametrize("source, used", [
    ("from torch.func import jacrev", "torch.func.jacrev"),
    ("from torch._functorch.eager_transforms import jacrev", "torch._functorch.eager_transforms.jacrev"),
    ("from torch._functorch import eager_transforms as et\nj = et.jacrev", "torch._functorch.eager_transforms.jacrev"),
    ("import torch\nJ = torch.autograd.functional.jacobian", "torch.autograd.functional.jacobian"),
    ("import torch.autograd.functional as AF\nAF.jacobian(f, x)", "torch.autograd.functional.jacobian"),
    ("from torch.autograd import functional\nfunctional.jacobian(f, x)", "torch.autograd.functional.jacobian"),
    ("import torch\nF = torch.autograd\nG = F.functional\nG.jacobian(f, x)", "torch.autograd.functional.jacobian"),
    ("import torch\ng = getattr(torch.autograd.functional, 'jacobian')", "torch.autograd.functional.jacobian"),
    ("from torch.autograd.functional import *", "torch.autograd.functional.jacobian"),
    ("import importlib\nm = importlib.import_module('torch.func')", "torch.func"),
    ("import sys\nm = sys.modules['torch._functorch.eager_transforms.jacrev']", "torch._functorch.eager_transforms.jacrev"),
    ("import torch\nv = torch.vmap", "torch.vmap"),
    ("import functorch", "functorch"),
    ("def jacobian(f, x):\n    import torch.func as tf\n    return tf.jacrev(f)(x)", "torch.func"),
])
def test_blocked_apis_are_found_by_any_name(source, used):
    uses = blocked.find_uses(source, JACOBIAN)
    assert uses and uses[0].used == used, uses
    assert "is not available in this exercise" in uses[0].message()
    assert f"line {uses[0].line} of submission.py uses {used}" in uses[0].message()


def test_the_report_names_what_an_alias_stands_for():
    (use,) = blocked.find_uses("from torch._functorch.eager_transforms import jacrev", JACOBIAN)
    assert (use.blocked, use.alias_of) == ("torch.func", "torch.func.jacrev")
    assert "which is torch.func.jacrev under another name" in use.message()


@pytest.mark.parametrize("source", [
    "import torch\ny = torch.autograd.grad(out, x)",
    "import torch\ntorch.autograd.functional.vjp(f, x)",
    '"""No torch.func here, nor torch.autograd.functional.jacobian."""\nimport torch',
    "# from torch.func import jacrev\nimport torch",
    "def jacobian(f, x):\n    return x",
    "def broken(:",
])
def test_honest_code_is_not_flagged(source):
    assert blocked.find_uses(source, JACOBIAN) == []


def test_aliases_of_a_function_are_the_modules_holding_the_same_object_and_its_operator():
    names = blocked.aliases("torch.nn.functional.softplus")
    assert {"torch.nn.functional.softplus", "torch._C._nn.softplus", "torch.ops.aten.softplus"} <= set(names)
    (use,) = blocked.find_uses("import torch\ny = torch.ops.aten.softplus.default(x)", ("torch.nn.functional.softplus",))
    assert use.used == "torch.ops.aten.softplus.default"
    assert all(canonical == "torch.nn.functional.softplus" for canonical in names.values())


INSIDE = f"""
import importlib, sys
sys.path.insert(0, {str(INSIDE_PACKAGE.parent)!r})
import torch
from inside import blocking
from grader_names import NAMES
blocking.block(NAMES)
"""


UNDO = [
    "importlib.reload(sys.modules['torch.func'])",
    "importlib.reload(sys.modules['torch.autograd.functional'])",
    "del sys.modules['torch.func']; importlib.import_module('torch.func')",
    "from torch._functorch.eager_transforms import jacrev; jacrev(torch.sin)(torch.ones(2))",
    "from torch.func import jacrev",
    "torch.autograd.functional.jacobian(torch.sin, torch.ones(2))",
    "torch.vmap(torch.sin)(torch.ones(2))",
    "torch.nn.Softplus()(torch.ones(2))",
    "torch.ops.aten.softplus(torch.ones(2), 1, 20)",
]


@pytest.mark.slow  # takes seconds: left out of the fast loop
def test_the_sandbox_block_is_not_undone_by_reloading_or_the_implementation_module(tmp_path):
    names = blocked.expanded(JACOBIAN + ("torch.nn.functional.softplus",))
    (tmp_path / "grader_names.py").write_text(f"NAMES = {list(names)!r}\n")
    script = INSIDE + f"""
for undo in {UNDO!r}:
    try:
        exec(undo)
    except RuntimeError as exc:
        print("REFUSED", "is not available in this exercise" in str(exc))
    else:
        print("UNDONE", undo)
# and what the reference solution uses still works
x = torch.ones(3, requires_grad=True)
print("GRAD", torch.autograd.grad((x * x).sum(), x)[0].tolist())
"""
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                         cwd=tmp_path, env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert run.stdout.splitlines() == ["REFUSED True"] * len(UNDO) + ["GRAD [2.0, 2.0, 2.0]"], \
        run.stdout + run.stderr
