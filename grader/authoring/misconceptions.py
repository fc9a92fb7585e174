"""The misconception table of an exercise, and the checks that keep hints and mutants in step.

``exercises/<slug>/MISCONCEPTIONS.md`` holds one Markdown table::

    | hint | what the student did | what the tests see | mutants |
    | --- | --- | --- | --- |
    | `ran on a copy of x` | backward() on x.detach().requires_grad_() | x.grad None; runs on an integer x ... | detached_copy |

``hint`` is a phrase (in backticks) that appears in the hint the row's mistake gets: a hint
that contains it names that row's mistake, so a phrase must be found in no other row's hint
(one hint that fits several mistakes is one row, with all their mutants). The check (part of
``grader check``) holds when:

- every hint the hidden tests can give (each literal hint text in tests/) contains the
  phrase of some row, and every row is triggered by one of its mutants;
- every mutant names (``hint = "..."`` or a list, in mutants.toml) only phrases of rows,
  shows each of them, and shows no hint that its declaration does not name;
- no row's phrase is shown to a mutant that does not declare it: each hint fires for its
  mistake and for no other mistake of the table.

Near misses of the reference (near_miss.py) are held to the same phrases.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

TABLE = "MISCONCEPTIONS.md"


@dataclass
class Row:
    phrase: str
    did: str
    seen: str
    mutants: list[str] = field(default_factory=list)


def parse(path: Path) -> list[Row]:
    """The rows of the table in ``path`` (header and separator lines skipped)."""
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.lstrip().startswith("|") else []
        if len(cells) < 4 or not cells[0].startswith("`"):
            continue
        phrase = cells[0].strip("`")
        mutants = [m.strip(" `") for m in cells[3].split(",") if m.strip(" `")]
        rows.append(Row(phrase, cells[1], cells[2], mutants))
    return rows


def table(exercise) -> list[Row]:
    path = exercise.path / TABLE
    return parse(path) if path.is_file() else []


def claimed(hint: str, phrases) -> list[str]:
    """The phrases of the table that ``hint`` contains: the mistakes it names."""
    return [p for p in phrases if p in hint]


def declared_phrases(spec: dict) -> list[str]:
    hint = spec.get("hint", [])
    return [hint] if isinstance(hint, str) else list(hint)


def test_hints(tests_dir: Path) -> list[str]:
    """Every literal hint text in the hidden tests: the English argument of Hint(...) and
    Mistake(...), and module constants that are (English, Korean) pairs. ``FIX`` pairs are the
    exercise's half of a shared hint (grader.testing.evidence), not hints of their own."""
    found = []
    for file in sorted(tests_dir.glob("*.py")):
        tree = ast.parse(file.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("Hint", "Mistake"):
                args = node.args[1:] if node.func.id == "Mistake" else node.args
                if args and isinstance(args[0], ast.Constant) and isinstance(args[0].value, str):
                    found.append(args[0].value)
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Tuple) and \
                    len(node.value.elts) == 2 and all(isinstance(e, ast.Constant) and isinstance(e.value, str)
                                                      for e in node.value.elts) and \
                    all(isinstance(t, ast.Name) and t.id.isupper() and t.id != "FIX" for t in node.targets):
                found.append(node.value.elts[0].value)
    return found


def shown_hints(report) -> list[str]:
    return [t.hint for t in report.tests if not t.passed and t.hint]


def check(exercise, declared: dict, reports: dict) -> list[tuple[str, str, str, bool]]:
    """(subject, expected, actual, ok) rows; ``reports`` maps a mutant's name to its report."""
    out = []
    rows = table(exercise)
    phrases = {r.phrase for r in rows}
    for text in test_hints(exercise.tests_dir) if rows else ():
        if not any(p in text for p in phrases):
            out.append(("bundle", "every hint of the tests has a row in the table",
                        f"no row for {text[:70]!r}...", False))
    for row in rows:
        triggering = [m for m in row.mutants if m in reports and
                      any(row.phrase in h for h in shown_hints(reports[m]))]
        named = [m for m in row.mutants if row.phrase in declared_phrases(declared.get(m, {}))]
        ok = bool(triggering) and named == row.mutants
        out.append((f"row:{row.phrase[:40]}", "a mutant of the row shows and declares its hint",
                    f"shown by {', '.join(triggering) or 'none'}; declared by {', '.join(named) or 'none'} "
                    f"of {', '.join(row.mutants) or 'no mutants'}", ok))
        others = [m for m, report in sorted(reports.items())
                  if row.phrase not in declared_phrases(declared.get(m, {}))
                  and any(row.phrase in h for h in shown_hints(report))]
        out.append((f"row:{row.phrase[:40]}", "shown to no mutant that does not declare it",
                    f"also shown to {', '.join(others)}" if others else "none", not others))
    for name, report in sorted(reports.items()):
        names = declared_phrases(declared.get(name, {}))
        unknown = [p for p in names if p not in phrases]
        if unknown and rows:
            out.append((f"mutant:{name}", "declares only hints of the table", f"not in the table: {unknown}", False))
        stray = sorted({h[:60] for h in shown_hints(report) if not any(p in h for p in names)})
        missing = [p for p in names if not any(p in h for h in shown_hints(report))]
        out.append((f"mutant:{name}", "shows exactly the hints it declares",
                    "yes" if not stray and not missing else
                    "; ".join([f"undeclared {s!r}..." for s in stray] + [f"not shown {m!r}" for m in missing]),
                    not stray and not missing))
    return out


def draft(exercise, declared: dict, reports: dict) -> str:
    """A first table from the tests' hints and the mutants' comments, for an author to edit."""
    lines = ["| hint | what the student did | what the tests see | mutants |", "| --- | --- | --- | --- |"]
    for text in dict.fromkeys(test_hints(exercise.tests_dir)):
        phrase = re.split(r"(?<=[.:;])\s", text, maxsplit=1)[0][:60]
        mutants = [m for m, r in sorted(reports.items()) if any(text[:40] in h for h in shown_hints(r))]
        did = "; ".join(_comment(exercise.path / "mutants" / f"{m}.py") for m in mutants[:2]) or "?"
        lines.append(f"| `{phrase}` | {did} | ? | {', '.join(mutants)} |")
    return "\n".join(lines)


def _comment(path: Path) -> str:
    first = path.read_text(encoding="utf-8").splitlines()[0] if path.is_file() else ""
    return first.lstrip("# ").strip()
