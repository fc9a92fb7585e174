"""Feedback that is always true: a hint names only a mistake the student made.

Each file in tests/fixtures/true_hints/<slug>/ is a submission written from the exercise's
statement, as a student would, with what it must get on its first line:

    # expect: full marks            a valid solution: every point, and no hint
    # expect: <phrase> | <phrase>   a wrong one: each hint it shows has one of these phrases
                                    (no hint at all is fine; another row's hint is not)
    # expect: names <function>      its errors are reported against <function>, never
                                    against a helper of the grader's (a probe)

bench/hint_precision.py grades the same files, and the mutants, and reports the share of
hints that are true.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from grader import catalog
from grader.engine import grade
from grader.settings import settings
from grader.testing.evidence import rebuilds_graph

CASES = Path(__file__).resolve().parent / "fixtures" / "true_hints"
FILES = sorted(CASES.glob("*/*.py"))


def _expectation(path: Path) -> str:
    first = path.read_text().splitlines()[0]
    assert first.startswith("# expect: "), path
    return first[len("# expect: "):].strip()


def _probe_helpers(slug: str) -> set[str]:
    probes = Path(settings().exercises_dir) / slug / "probes.py"
    if not probes.exists():
        return set()
    return {n.name for n in ast.parse(probes.read_text()).body if isinstance(n, ast.FunctionDef)}


@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.name}/{p.stem}" for p in FILES])
def test_each_case_gets_only_true_feedback(path):
    slug, want = path.parent.name, _expectation(path)
    report = grade(catalog.find(slug, settings().exercises_dir), path.read_text())
    assert report.status == "graded", report.message
    failed = [t for t in report.tests if not t.passed]
    hints = [t.hint for t in failed if t.hint]
    said = [t.message or "" for t in report.tests] + hints
    for helper in _probe_helpers(slug):
        assert not any(f"{helper}()" in text for text in said), (helper, said)
    if want == "full marks":
        assert not failed and report.score == report.max_score, [(t.name, t.message, t.hint) for t in failed]
        return
    assert failed, "a wrong submission passed every test"
    if want.startswith("names "):
        name = want[len("names "):]
        assert any(f"{name}" in (t.message or "") for t in failed), [t.message for t in failed]
        return
    phrases = [p.strip() for p in want.split("|")]
    assert all(any(p in h for p in phrases) for h in hints), hints


def test_every_probe_call_names_the_students_function():
    """A probe is the grader's helper: what it reports is said of the student's function."""
    folders = [Path(settings().exercises_dir), Path(__file__).resolve().parent.parent / "grader" / "authoring"]
    for test_file in [f for folder in folders for f in folder.glob("**/tests/test_*.py")]:
        for node in ast.walk(ast.parse(test_file.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "probe":
                assert any(k.arg == "for_function" for k in node.keywords), f"{test_file}:{node.lineno}"


def test_building_y_is_not_rebuilding_it():
    """The source's reading, where the student sandbox saw no backward pass."""
    built_once = [
        "def f(x):\n    y = 0\n    for i in range(3):\n        y = y + x[i] * x[i]\n"
        "    y.backward(retain_graph=True)\n    y.backward()\n",
        "def f(x):\n    y = x ** 3\n    y = y.sum()\n    y.backward(retain_graph=True)\n    y.backward()\n",
        "def f(x):\n    y = (x ** 3).sum()\n    torch.autograd.backward([y], retain_graph=True)\n"
        "    torch.autograd.backward(tensors=y)\n",
        "def f(x):\n    y = (x ** 3).sum()\n    for _ in range(2):\n        y.backward(retain_graph=True)\n",
    ]
    rebuilt = [
        "def f(x):\n    y = g(x)\n    y.backward()\n    y = g(x)\n    y.backward()\n",
        "def f(x):\n    for _ in range(2):\n        y = (x ** 3).sum()\n        y.backward()\n",
        "def f(x):\n    for _ in range(2):\n        (x ** 3).sum().backward()\n",
        "def f(x):\n    y = g(x)\n    torch.autograd.backward(y)\n    y = g(x)\n    torch.autograd.backward(y)\n",
    ]
    assert not any(rebuilds_graph(source, "f") for source in built_once)
    assert all(rebuilds_graph(source, "f") for source in rebuilt)
