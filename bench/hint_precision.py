"""How often a hint is true: grades every known-wrong submission and counts its hints.

    .venv/bin/python bench/hint_precision.py [--cases-only] [slug ...]

Grades each exercise's mutants (the hint each must show is declared in mutants.toml) and
the students' cases in tests/fixtures/true_hints/<slug>/ (each file's first line says what
it must get: ``# expect: full marks``, ``# expect: <a phrase of its hint>`` with ``|``
between phrases it may show, or ``# expect: names <function>`` for a case about whom a
message names). Of the wrong submissions that show a hint, the share whose every hint is
one it may show is the precision. Valid submissions must get full marks and no hint.
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "tests" / "fixtures" / "true_hints"


def expectation(path: Path) -> str:
    first = path.read_text().splitlines()[0]
    assert first.startswith("# expect: "), path
    return first[len("# expect: "):].strip()


def submissions(slugs, exercises: Path, cases_only: bool):
    """(slug, name, source, what it must get) for every mutant and case."""
    for folder in sorted(exercises.iterdir()):
        if slugs and folder.name not in slugs or not (folder / "exercise.toml").exists():
            continue
        if not cases_only:
            declared = tomllib.loads((folder / "mutants" / "mutants.toml").read_text())
            for name, row in sorted(declared.items()):
                hints = row.get("hint", [])
                hints = [hints] if isinstance(hints, str) else list(hints)
                yield folder.name, f"mutant:{name}", (folder / "mutants" / f"{name}.py").read_text(), hints
        for case in sorted((CASES / folder.name).glob("*.py")) if (CASES / folder.name).is_dir() else []:
            want = expectation(case)
            yield folder.name, f"case:{case.stem}", case.read_text(), want


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("slugs", nargs="*")
    parser.add_argument("--cases-only", action="store_true")
    parser.add_argument("--exercises", type=Path, default=None)
    args = parser.parse_args()

    from grader import catalog
    from grader.engine import grade
    from grader.settings import settings

    exercises = args.exercises or Path(settings().exercises_dir)
    hinted = true = valid = valid_ok = 0
    for slug, name, source, want in submissions(set(args.slugs), exercises, args.cases_only):
        report = grade(catalog.find(slug, exercises), source)
        failed = [t for t in report.tests if not t.passed]
        hints = [t.hint for t in failed if t.hint]
        if want == "full marks":
            valid += 1
            ok = not failed
            valid_ok += ok
            print(f"{'ok ' if ok else 'BAD'} {slug:20} {name:40} valid: {len(failed)} failed, hints {hints}")
            continue
        if isinstance(want, str) and want.startswith("names "):
            continue  # about whom messages name, not about hints (tests/test_true_hints.py)
        phrases = want if isinstance(want, list) else [p.strip() for p in want.split("|")]
        if not hints:
            print(f"--  {slug:20} {name:40} no hint ({len(failed)} failed)")
            continue
        hinted += 1
        right = all(any(p in h for p in phrases) for h in hints)
        true += right
        shown = [h[:70] for h in hints if not any(p in h for p in phrases)]
        print(f"{'ok ' if right else 'BAD'} {slug:20} {name:40} {'' if right else shown}")
        sys.stdout.flush()
    print(f"\nprecision: {true}/{hinted} = {true / max(hinted, 1):.3f} of wrong submissions with a hint; "
          f"valid with full marks and no hint: {valid_ok}/{valid}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
