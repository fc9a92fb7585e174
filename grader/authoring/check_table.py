"""The check's table: one row per thing a bundle's files must do, and its text form.

Apart from the check itself (which grades, so pulls in the engine and torch), so that
whoever only shows a table, as `grader exercise push` does, starts in a moment.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class CheckRow:
    exercise: str
    subject: str       # "solution", "starter", "mutant:<name>", "row:<phrase>", "near miss <function> <change>", "bundle"
    expected: str
    actual: str
    ok: bool


def format_check(rows: list[CheckRow]) -> str:
    width = max((len(f"{r.exercise}  {r.subject}") for r in rows), default=10)
    lines = []
    for r in rows:
        mark = "ok  " if r.ok else "FAIL"
        lines.append(f"{mark} {f'{r.exercise}  {r.subject}':<{width}}  expected {r.expected}; got {r.actual}")
    bad = sum(not r.ok for r in rows)
    lines.append(f"{len(rows) - bad} of {len(rows)} checks hold" + (f"; {bad} violated" if bad else ""))
    return "\n".join(lines)
