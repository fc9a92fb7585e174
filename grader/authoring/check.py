"""The bundle check: a bundle's own files must grade as they say.

Above the engine (it grades); the bundle format itself (bundle.py) stays below it.
"""

from __future__ import annotations

import tomllib

from grader.authoring import misconceptions, near_miss
from grader.bundle import Bundle
from grader.authoring.check_table import CheckRow
from grader.engine.grading import grade


def check(bundle: Bundle, on_report=None, near_misses: bool = True) -> list[CheckRow]:
    """Grade the bundle's own files and compare with what they must score.

    The reference scores full marks twice with identical reports; the starter
    scores less; every mutant fails exactly the tests it declares and shows its hint,
    and no other mutant's; with ``near_misses``, no near miss of the reference
    (near_miss.py) is shown a hint that names a mistake it did not make.
    ``on_report(subject, report)``, if given, sees each subject's report once (the
    reference's first), so that a caller needs no grade of its own.
    """
    rows: list[CheckRow] = []

    def row(subject, expected, actual, ok):
        rows.append(CheckRow(bundle.slug, subject, expected, actual, bool(ok)))

    solution = bundle.read("solution.py")
    first, second = grade(bundle, solution), grade(bundle, solution)
    if on_report:
        on_report("solution", first)
    full = first.status == "graded" and first.score == first.max_score > 0
    row("solution", "full marks", f"{first.score:g}/{first.max_score:g} [{first.status}]"
        + ("" if full else _why(first)), full)
    same = first.without_timings() == second.without_timings()
    row("solution", "same report twice", "identical" if same else "different", same)
    visible = sum(t.visible for t in first.tests)
    row("bundle", ">= 1 visible and >= 1 hidden test", f"{visible} visible, {len(first.tests) - visible} hidden",
        0 < visible < len(first.tests))

    starter = grade(bundle, bundle.read("starter.py"))
    if on_report:
        on_report("starter", starter)
    row("starter", "less than full marks", f"{starter.score:g}/{starter.max_score:g}",
        starter.score < starter.max_score)

    mutants_dir = bundle.path / "mutants"
    declared = {}
    manifest = mutants_dir / "mutants.toml"
    if manifest.is_file():
        try:
            declared = tomllib.loads(bundle.read("mutants/mutants.toml"))
        except tomllib.TOMLDecodeError as exc:
            row("bundle", "valid mutants/mutants.toml", str(exc), False)
    files = {p.stem: p for p in sorted(mutants_dir.glob("*.py"))} if mutants_dir.is_dir() else {}
    row("bundle", ">= 3 mutants", str(len(files)), len(files) >= 3)
    reports = {}
    for name in sorted(set(declared) | set(files)):
        subject = f"mutant:{name}"
        spec = declared.get(name)
        if name not in files or not isinstance(spec, dict):
            row(subject, "a .py file and a [section] in mutants.toml",
                "no file" if name not in files else "not declared", False)
            continue
        must_fail = set(spec.get("fails", []))
        report = grade(bundle, bundle.read(f"mutants/{files[name].name}"))
        if on_report:
            on_report(subject, report)
        failed = {t.id.rsplit("::", 1)[-1] for t in report.tests if not t.passed}
        row(subject, "fails " + ", ".join(sorted(must_fail)), "fails " + (", ".join(sorted(failed)) or "nothing"),
            failed == must_fail and must_fail)
        reports[name] = report
    # Hints and mutants in step with the misconception table.
    for subject, expected, actual, ok in misconceptions.check(bundle, declared, reports):
        row(subject, expected, actual, ok)
    if near_misses and full:  # a reference that fails its tests has failed the check already
        for subject, expected, actual, ok in near_miss.check(bundle, on_report):
            row(subject, expected, actual, ok)
    return rows


def _why(report) -> str:
    """Why the reference did not score full marks, in a few words: the grade's own
    reason, else the first failing test's message."""
    failed = next((t for t in report.tests if not t.passed), None)
    errored = next((w for w in report.warnings if w.startswith("some of the exercise's own tests")), None)
    reason = report.message or errored or (
        f"{failed.name}: {failed.message or failed.hint or 'failed'}" if failed else None)
    return f": {reason[:300]}" if reason else ""
