"""Near misses of every exercise's reference solution get no hint that names a mistake, and
their reports rendered in Korean have no English word outside code.

Each variant is the reference solution with one of its functions (or methods) rebound to a
wrapper that changes what it returns: scaled by 1.37, negated, or shifted by 0.01. No
exercise declares any of these as a mistake, so a failing test may show no hint, or only one
that states a rule the variant breaks (ALLOWED, per wrapped function); a hint that claims
another mistake is a false diagnosis, fixed at its source and kept in tests/fixtures/true_hints/.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from grader import catalog
from grader.engine import grade
from grader.settings import settings
from tests.korean_words import code_names, english_words

CHANGES = {"scaled by 1.37": "v * 1.37", "negated": "-v", "plus 0.01": "v + 0.01"}

# Hints true of a variant that wraps this function: each states a rule that the changed
# return value breaks, and claims no cause.
ALLOWED = {
    ("control-flow", "grad_of_f"): ["should return a.grad"],  # the value is no longer a.grad
    ("grad-scaler", "GradScaler.scale"): ["scale(loss) must return the loss multiplied by the current scale"],
    ("grad-scaler", "GradScaler.get_scale"): ["Right after construction get_scale() must return init_scale",
                                              "scale(loss) must return the loss multiplied by the current scale"],
}

_WRAPPER = '''

import functools as _near_miss_functools
import torch as _near_miss_torch


def _near_miss_change(v):
    if isinstance(v, _near_miss_torch.Tensor):
        return ({change}) if v.is_floating_point() else v
    if isinstance(v, float):
        return {change}
    if isinstance(v, dict):
        return {{k: _near_miss_change(x) for k, x in v.items()}}
    if isinstance(v, (list, tuple)):
        return type(v)(_near_miss_change(x) for x in v)
    return v


def _near_miss_wrap(fn):
    @_near_miss_functools.wraps(fn)
    def wrapped(*args, **kwargs):
        return _near_miss_change(fn(*args, **kwargs))
    return wrapped


'''


def _returns_a_value(fn: ast.FunctionDef) -> bool:
    return any(isinstance(n, ast.Return) and n.value is not None and not isinstance(n.value, ast.Constant)
               for n in ast.walk(fn))


def targets(source: str) -> list[tuple[str | None, str, bool]]:
    """(class or None, name, staticmethod) of each public function and method that returns a
    computed value: the places a student's result can be off."""
    found = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_") and _returns_a_value(node):
            found.append((None, node.name, False))
        if isinstance(node, ast.ClassDef):
            for fn in node.body:
                if isinstance(fn, ast.FunctionDef) and not fn.name.startswith("__") and _returns_a_value(fn):
                    static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list)
                    found.append((node.name, fn.name, static))
    return found


def variant(source: str, target: tuple[str | None, str, bool], change: str) -> str:
    """The reference solution with ``target`` rebound to return its value changed; its own
    definition stays, so what the tests read of the source is the reference's."""
    cls, name, static = target
    code = source + _WRAPPER.format(change=CHANGES[change])
    if cls is None:
        return code + f"{name} = _near_miss_wrap({name})\n"
    original = f"{cls}.__dict__[{name!r}]"
    if static:
        return code + f"{cls}.{name} = staticmethod(_near_miss_wrap({original}.__func__))\n"
    return code + f"{cls}.{name} = _near_miss_wrap({original})\n"


def _cases():
    root = Path(settings().exercises_dir)
    for folder in sorted(p for p in root.iterdir() if (p / "solution.py").exists()):
        source = (folder / "solution.py").read_text()
        for target in targets(source):
            label = f"{target[0]}.{target[1]}" if target[0] else target[1]
            yield pytest.param(folder.name, target, label, id=f"{folder.name}/{label}")


@pytest.mark.parametrize("slug,target,label", list(_cases()))
def test_near_misses_get_no_false_diagnosis(slug, target, label):
    exercise = catalog.find(slug, settings().exercises_dir)
    source = (Path(settings().exercises_dir) / slug / "solution.py").read_text()
    allowed = ALLOWED.get((slug, label), [])
    names = code_names(Path(settings().exercises_dir) / slug)
    wrong, english = [], []
    for change in CHANGES:
        report = grade(exercise, variant(source, target, change))
        assert report.status == "graded", (change, report.message)
        wrong += [(change, t.name, t.hint) for t in report.tests
                  if not t.passed and t.hint and not any(phrase in t.hint for phrase in allowed)]
        english += [(change, line) for line in report.render("ko").replace(slug, "").splitlines()
                    if english_words(line, names)]
    assert not wrong, wrong
    assert not english, english


def test_variants_wrap_each_returning_function():
    source = ("class S(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n        return x * 2\n"
              "    def note(self):\n        return\n\n"
              "def f(x):\n    return x.grad\n\ndef _helper(x):\n    return x\n\ndef g():\n    return True\n")
    assert targets(source) == [("S", "forward", True), (None, "f", False)]
    namespace = {}
    exec(compile(variant("import torch\n" + source, (None, "f", False), "negated"), "v", "exec"), namespace)
    import torch
    x = torch.ones(2, requires_grad=True)
    x.grad = torch.tensor([1.0, 2.0])
    assert torch.equal(namespace["f"](x), torch.tensor([-1.0, -2.0]))
