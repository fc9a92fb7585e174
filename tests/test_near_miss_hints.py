"""Near misses of every exercise's reference solution get no hint that names a mistake, and
their reports rendered in Korean have no English word outside code.

The near misses and the judgement are the bundle check's (grader.authoring.near_miss): each
variant is the reference with one function's value scaled by 1.37, negated, or shifted by
0.01, and may show only the hints its bundle declares for that function in
mutants/near_misses.toml (rules the changed value breaks). A hint that claims another
mistake is a false diagnosis, fixed at its source and kept in tests/fixtures/true_hints/.

Here is where the catalogue's near misses are graded, once: tests/test_catalog.py checks the
rest of each bundle, and the same reports serve the Korean check.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from grader import catalog
from grader.authoring import near_miss
from grader.protocol import report as report_format
from grader.settings import settings
from tests.korean_words import code_names, english_words


@pytest.mark.parametrize("exercise", catalog.all_bundles(settings().exercises_dir), ids=lambda e: e.slug)
def test_near_misses_get_no_false_diagnosis_and_read_in_korean(exercise):
    reports = {}
    rows = near_miss.check(exercise, on_report=reports.__setitem__)
    assert len(reports) == len(near_miss.targets(exercise.read("solution.py"))) * len(near_miss.CHANGES) > 0
    assert [r for r in rows if not r[3]] == []
    names = code_names(exercise.path)
    english = [(subject, line) for subject, report in reports.items()
               for line in report.render("ko").replace(exercise.slug, "").splitlines()
               if english_words(line, names)]
    assert not english, english


def test_variants_wrap_each_returning_function():
    source = ("class S(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n        return x * 2\n"
              "    def note(self):\n        return\n\n"
              "def f(x):\n    return x.grad\n\ndef _helper(x):\n    return x\n\ndef g():\n    return True\n")
    assert near_miss.targets(source) == [("S", "forward", True), (None, "f", False)]
    assert [m.subject for m in near_miss.near_misses(source)][:2] == [
        "near miss S.forward scaled by 1.37", "near miss S.forward negated"]
    namespace = {}
    exec(compile(near_miss.variant("import torch\n" + source, near_miss.Target(None, "f", False), "negated"),
                 "v", "exec"), namespace)
    import torch
    x = torch.ones(2, requires_grad=True)
    x.grad = torch.tensor([1.0, 2.0])
    assert torch.equal(namespace["f"](x), torch.tensor([-1.0, -2.0]))


def _report(*hints):
    return report_format.Report("x", 1, "graded", 0, len(hints), 0, tests=[
        report_format.TestResult(f"t::test_{i}", f"test_{i}", False, False, 0, 1, hint=h) for i, h in enumerate(hints)])


def test_a_hint_is_allowed_only_where_it_states_a_declared_rule_and_names_no_other_row():
    phrases = ["must return the loss times the scale", "never cleared", "twice too large"]
    allowed = ["must return the loss times the scale"]
    assert near_miss.false_hints(_report(None, "scale(loss) must return the loss times the scale."), allowed, phrases) == []
    assert near_miss.false_hints(_report("The flag was never cleared."), allowed, phrases) == [
        "The flag was never cleared."]
    assert near_miss.false_hints(_report("A hint of no row."), allowed, phrases) == ["A hint of no row."]
    both = "scale(loss) must return the loss times the scale: it is twice too large."
    assert near_miss.false_hints(_report(both), allowed, phrases) == [both]


def test_the_check_holds_near_misses_to_the_bundles_declarations(tmp_path, monkeypatch):
    folder = shutil.copytree(Path(settings().exercises_dir) / "control-flow", tmp_path / "control-flow")
    declared = folder / near_miss.DECLARATIONS
    rule = "grad_of_f should return a.grad, not f(a)."
    false = "f(a) is 100 times too small: the 100 * b branch is missing."
    graded = []

    def grade(bundle, source):
        graded.append(source)
        return _report(rule if source.endswith("grad_of_f = _near_miss_wrap(grad_of_f)\n") else false)

    monkeypatch.setattr(near_miss, "grade", grade)
    rows = near_miss.check(catalog.load(folder))
    bad = {r[0]: r[2] for r in rows if not r[3]}
    assert len(graded) == 6 and set(bad) == {f"near miss f {c}" for c in near_miss.CHANGES}
    assert "false hint 'f(a) is 100 times too small" in bad["near miss f negated"]
    assert ("near misses of grad_of_f", "show each hint declared for them", "yes", True) in rows

    declared.write_text('grad_of_f = ["should return a.grad", "100 times too large"]\nf = ["no such row"]\n'
                        'nothing = []\n')
    rows = near_miss.check(catalog.load(folder))
    said = {(r[0], r[1]): r[2] for r in rows if not r[3]}
    assert said[("bundle", f"{near_miss.DECLARATIONS} names functions of the reference and phrases of the table")] \
        == "not so: function nothing, 'no such row'"
    assert said[("near misses of grad_of_f", "show each hint declared for them")] == "not shown '100 times too large'"

    declared.write_text("grad_of_f = [")
    assert any(r[1] == f"valid {near_miss.DECLARATIONS}" and not r[3] for r in near_miss.check(catalog.load(folder)))
