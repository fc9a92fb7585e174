"""Grading accuracy: the evidence behind look-alike hints, and the mutation check."""

import torch

from grader import catalog
from grader.authoring import mutation
from grader.engine import grade
from grader.testing.evidence import assigns_grad, rebuilds_graph
from grader.settings import settings


def _hints(report):
    return [t.hint or "" for t in report.tests if not t.passed]


EMPTY_GRAD = {
    "formula": ("def grad_2xtx(x):\n    return 4 * x.detach()\n", "worked out by hand"),
    "autograd.grad": ("import torch\n\ndef grad_2xtx(x):\n    return torch.autograd.grad(2 * torch.dot(x, x), x)[0]\n",
                      "torch.autograd.grad returns"),
    "detached copy": ("import torch\n\ndef grad_2xtx(x):\n    x = x.detach().requires_grad_()\n"
                      "    (2 * torch.dot(x, x)).backward()\n    return x.grad\n", "ran on a copy of x"),
}


def test_each_empty_gradient_mistake_gets_its_own_hint():
    exercise = catalog.find("autograd-basics", settings().exercises_dir)
    for name, (source, phrase) in EMPTY_GRAD.items():
        hints = _hints(grade(exercise, source))
        assert hints and all(phrase in h for h in hints if "x.grad" in h), (name, hints)
        others = [p for n, (_, p) in EMPTY_GRAD.items() if n != name]
        assert not any(p in h for h in hints for p in others), (name, hints)


def test_source_evidence_reads_hand_made_grads_and_rebuilt_graphs():
    assert assigns_grad("def f(x):\n    x.grad = 6 * x ** 2\n", "f")
    assert not assigns_grad("def f(x):\n    x.grad = None\n    x.grad = torch.zeros_like(x)\n", "f")
    assert rebuilds_graph("def f(x):\n    y = g(x)\n    y.backward()\n    y = g(x)\n    y.backward()\n", "f")
    assert rebuilds_graph("def f(x):\n    for _ in range(2):\n        (x ** 3).sum().backward()\n", "f")
    assert not rebuilds_graph("def f(x):\n    y = (x ** 3).sum()\n    y.backward(retain_graph=True)\n"
                              "    y.backward()\n", "f")
    assert not rebuilds_graph("def f(x):\n    y = (x ** 3).sum()\n    torch.autograd.backward(y, retain_graph=True)\n"
                              "    torch.autograd.backward(y)\n", "f")


def test_mutation_operators_cover_the_course_mistakes():
    source = ("import torch\n\ndef f(model, x, opt):\n    opt.zero_grad()\n    loss = model(x).sum()\n"
              "    loss.backward()\n    with torch.no_grad():\n        w = x.detach()\n        w -= 0.5\n"
              "    if loss.item() > 1:\n        pass\n    return loss.item()\n")
    names = {m.name.split("@")[0] for m in mutation.mutants(source)}
    assert {"drop zero_grad()", "backward -> autograd.grad", "drop no_grad", "drop .detach()",
            "in-place -> rebinding", "flip comparison", "drop .item()", "constant 0.5"} <= names
    for m in mutation.mutants(source):
        compile(m.source, "mutant.py", "exec")


def test_a_surviving_mutant_is_reported():
    exercise = catalog.find("autograd-basics", settings().exercises_dir)
    results = mutation.run(exercise)
    assert results and all(not r.survived for r in results)
    survivor = mutation.MutationResult("x", "drop .item()@3", 4, 4, "graded")
    assert survivor.hole and "SURVIVES drop .item()@3" in mutation.format_results([survivor])
    explained = mutation.MutationResult("x", "drop .clone()@5", 4, 4, "graded", "still correct")
    assert not explained.hole and "equivalent: still correct" in mutation.format_results([explained])


def test_test_names_come_in_korean_too():
    from grader.web.render import localized_tests

    exercise = catalog.find("autograd-basics", settings().exercises_dir)
    report = grade(exercise, exercise.file("starter.py").read_text())
    assert all(t.i18n.get("ko", {}).get("name") for t in report.tests)
    assert "x = [1, 2, 3]에 대해 4x를 반환" in report.render("ko")
    assert "returns 4x for x = [1, 2, 3]" in report.render("en")
    names = [t["name"] for t in localized_tests(report.to_dict(), "ko")]
    assert "x = [1, 2, 3]에 대해 4x를 반환" in names


def test_every_catalogue_test_has_a_korean_name():
    import ast
    from pathlib import Path

    for file in Path(settings().exercises_dir).glob("*/tests/test_*.py"):
        for node in ast.parse(file.read_text()).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                doc = ast.get_docstring(node) or ""
                assert any(line.startswith("ko: ") for line in doc.splitlines()), f"{file}::{node.name}"


def _bundle_with_table(tmp_path, table_rows):
    import shutil
    from pathlib import Path

    folder = tmp_path / "autograd-basics"
    shutil.copytree(Path(settings().exercises_dir) / "autograd-basics", folder)
    header = "| hint | what the student did | what the tests see | mutants |\n| --- | --- | --- | --- |\n"
    (folder / "MISCONCEPTIONS.md").write_text(header + "\n".join(table_rows) + "\n")
    return catalog.load(folder)


def test_misconception_check_catches_undeclared_hints_and_uncovered_rows(tmp_path):
    from grader.authoring import misconceptions

    exercise = _bundle_with_table(tmp_path, [
        "| `The gradient is twice too large` | backward twice | 8x | backward_twice |",
        "| `Half the expected gradient` | no factor 2 | 2x | |",
    ])
    reports = {"backward_twice": grade(exercise, (exercise.path / "mutants/backward_twice.py").read_text())}
    bad = lambda declared: [r for r in misconceptions.check(exercise, declared, reports) if not r[3]]
    ok = bad({"backward_twice": {"hint": "The gradient is twice too large"}})
    # the tests' other hints have no row, and the "Half" row has no mutant
    assert any("no row for" in r[2] for r in ok) and any(r[0].startswith("row:Half") for r in ok)
    assert not any(r[0] == "mutant:backward_twice" for r in ok)
    undeclared = bad({"backward_twice": {"hint": []}})
    assert any(r[0] == "mutant:backward_twice" and "undeclared" in r[2] for r in undeclared)
    unknown = bad({"backward_twice": {"hint": ["The gradient is twice too large", "not a row"]}})
    assert any("not in the table" in r[2] for r in unknown)


def test_a_rows_hint_shown_to_a_mutant_that_does_not_declare_it_fails_the_row(tmp_path):
    from grader.authoring import misconceptions
    from grader.protocol import report as report_format

    exercise = _bundle_with_table(tmp_path, [
        "| `twice too large` | backward twice | 8x | backward_twice |",
        "| `worked out by hand` | formulas | x.grad None | by_hand |",
    ])

    def shown(hint):
        return report_format.Report("autograd-basics", 1, "graded", 0, 1, 0, tests=[
            report_format.TestResult("t::test_a", "test_a", False, False, 0, 1, hint=hint)])

    both = "Worked out by hand, the gradient is twice too large."
    reports = {"backward_twice": shown("The gradient is twice too large."), "by_hand": shown(both.lower())}
    declared = {"backward_twice": {"hint": "twice too large"}, "by_hand": {"hint": "worked out by hand"}}
    crossed = lambda: [r for r in misconceptions.check(exercise, declared, reports)
                       if r[1] == "shown to no mutant that does not declare it" and not r[3]]
    # by_hand shows its own phrase, so "shows exactly the hints it declares" holds; the row of the other does not
    assert crossed() == [("row:twice too large", "shown to no mutant that does not declare it",
                          "also shown to by_hand", False)]
    declared["by_hand"]["hint"] = ["worked out by hand", "twice too large"]  # a hint that names both, said so
    assert crossed() == []
