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


def test_mean_for_sum_only_on_exactly_one_nth():
    """The 1/n hint needs the ratio to be exactly 1/n of the input's size, and says so
    beside the exercise's own mistake where both give the same value (n = 2: "half")."""
    import torch

    from grader.testing.api import Mistake, _first_match, mean_for_sum

    expected = torch.tensor([6.0, -1.5, 0.25, 3.0])
    mean = mean_for_sum(expected, 4)
    assert mean.matches(expected / 4, 1e-5, 1e-6)
    assert not any(mean.matches(expected / k, 1e-5, 1e-6) for k in (1, 2, 3, 5, 10))
    assert not mean.matches(-expected / 4, 1e-5, 1e-6)
    assert not mean_for_sum(expected, 1).matches(expected, 1e-5, 1e-6)  # one element: mean is the sum
    assert not mean_for_sum(torch.zeros(3), 3).matches(torch.zeros(3), 1e-5, 1e-6)  # no ratio at all
    half = Mistake(expected / 2, "Half the expected gradient", "절반")
    both = _first_match(expected / 2, [half, mean_for_sum(expected, 2)], 1e-5, 1e-6)
    assert "Half the expected gradient" in both.en and ".sum()" in both.en and "more than one" in both.en
    assert _first_match(expected / 2, [half, mean], 1e-5, 1e-6).en == "Half the expected gradient"


def test_dtype_hint_only_for_float64_turned_float32():
    import torch

    from grader.testing import Feedback, expect_close

    x = torch.randn(3, dtype=torch.float64)
    with pytest.raises(Feedback) as float32:
        expect_close(x.float(), x, what="v", check_dtype=True)
    assert "float32 although the input was float64" in float32.value.hint.en
    with pytest.raises(Feedback) as float16:
        expect_close(x.half(), x, what="v", check_dtype=True)
    assert float16.value.hint is None  # not the change the hint names
    with pytest.raises(Feedback) as own:
        expect_close(x.float(), x, what="v", check_dtype=True, hint="the test's own")
    assert own.value.hint.en == "the test's own"
