"""How often a hint is true, and how often a mistake of the tables gets its hint.

    .venv/bin/python bench/hint_precision.py [--cases-only] [slug ...]

Grades each exercise's mutants (the hints each must show are declared in mutants.toml), the
near misses of its reference (grader.authoring.near_miss: one function's value scaled,
negated or shifted; each may show only the hints mutants/near_misses.toml declares for that
function) and the students' cases in tests/fixtures/true_hints/<slug>/ (each file's first
line says what it must get: ``# expect: full marks``, ``# expect: <a phrase of its hint>``
with ``|`` between phrases it may show, or ``# expect: names <function>`` for a case about
whom a message names).

- precision: of the mutants and near misses that show a hint, the share whose every hint
  names only mistakes it may show (a hint that contains a row's phrase names that row's
  mistake, as in `grader check`);
- recall: of the mutants (the mistakes of the misconception tables), the share that show
  every hint they declare;
- the cases' precision on its own line, and valid cases must get full marks and no hint.
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


def submissions(bundle, cases_only: bool):
    """(kind, name, source, the phrases it may show) for every mutant, near miss and case;
    a case's last item is its expectation as written."""
    from grader.authoring import misconceptions, near_miss

    if not cases_only:
        declared = tomllib.loads(bundle.read("mutants/mutants.toml"))
        for name, row in sorted(declared.items()):
            yield "mutant", f"mutant:{name}", bundle.read(f"mutants/{name}.py"), misconceptions.declared_phrases(row)
        allowed = near_miss.declarations(bundle)
        for miss in near_miss.near_misses(bundle.read("solution.py")):
            yield "near miss", miss.subject, miss.source, allowed.get(miss.target.label, [])
    folder = CASES / bundle.slug
    for case in sorted(folder.glob("*.py")) if folder.is_dir() else []:
        yield "case", f"case:{case.stem}", case.read_text(), expectation(case)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("slugs", nargs="*")
    parser.add_argument("--cases-only", action="store_true")
    parser.add_argument("--exercises", type=Path, default=None)
    args = parser.parse_args()

    from grader import catalog
    from grader.authoring import misconceptions, near_miss
    from grader.engine import grade
    from grader.settings import settings

    exercises = args.exercises or Path(settings().exercises_dir)
    hinted = true = mistakes = found = 0
    case_hinted = case_true = valid = valid_ok = 0
    for bundle in catalog.all_bundles(exercises):
        if args.slugs and bundle.slug not in args.slugs:
            continue
        phrases = [row.phrase for row in misconceptions.table(bundle)]
        for kind, name, source, want in submissions(bundle, args.cases_only):
            report = grade(bundle, source)
            failed = [t for t in report.tests if not t.passed]
            hints = [t.hint for t in failed if t.hint]
            label = f"{bundle.slug:20} {name:48}"
            if kind == "case":
                if want == "full marks":
                    valid += 1
                    valid_ok += not failed
                    print(f"{'ok ' if not failed else 'BAD'} {label} valid: {len(failed)} failed, hints {hints}")
                    continue
                if want.startswith("names "):
                    continue  # about whom messages name, not about hints (tests/test_true_hints.py)
                may = [p.strip() for p in want.split("|")]
                wrong = [h for h in hints if not any(p in h for p in may)]
                case_hinted += bool(hints)
                case_true += bool(hints) and not wrong
            else:
                wrong = near_miss.false_hints(report, want, phrases)
                hinted += bool(hints)
                true += bool(hints) and not wrong
                if kind == "mutant" and want:
                    mistakes += 1
                    missing = [p for p in want if not any(p in h for h in hints)]
                    found += not missing
                    if missing:
                        print(f"--  {label} its hint not shown: {missing}")
            mark = "ok " if not wrong else "BAD"
            print(f"{mark if hints else '-- '} {label} " + ("no hint" if not hints else
                  "" if not wrong else str([h[:70] for h in wrong])))
            sys.stdout.flush()
    if not args.cases_only:
        print(f"\nprecision: {true}/{hinted} = {true / max(hinted, 1):.3f} of mutants and near misses with a hint "
              f"show only true hints")
        print(f"recall: {found}/{mistakes} = {found / max(mistakes, 1):.3f} of the tables' mistakes (mutants) "
              f"show their hint")
    print(f"cases: {case_true}/{case_hinted} = {case_true / max(case_hinted, 1):.3f} of wrong cases with a hint show "
          f"only true hints; valid with full marks and no hint: {valid_ok}/{valid}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
