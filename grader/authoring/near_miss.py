"""Near misses: the reference solution with one function's value changed, and the hints each may show.

A near miss rebinds one public function (or method) of the reference that returns a computed
value to a wrapper that changes what it returns: scaled by 1.37, negated, or shifted by 0.01.
No bundle declares these as mistakes, so a failing test may show no hint, or only a hint that
states a rule the changed value breaks and claims no cause. A bundle names those in
``mutants/near_misses.toml``, per function, by the phrases of its misconception table::

    # each hint states a rule about what the function returns
    "GradScaler.scale" = ["scale(loss) must return the loss multiplied by the current scale"]

Any other hint shown to a near miss diagnoses a mistake it did not make. The check holds
every near miss to that, and every declared phrase to being shown by a near miss of its
function, so that no declaration outlives the hint it excuses.
"""

from __future__ import annotations

import ast
import tomllib
from dataclasses import dataclass
from typing import Iterator, NamedTuple

from grader.authoring import misconceptions
from grader.bundle import Bundle
from grader.engine import grade

CHANGES = {"scaled by 1.37": "v * 1.37", "negated": "-v", "plus 0.01": "v + 0.01"}
DECLARATIONS = "mutants/near_misses.toml"

# Appended to the reference; names that no solution of the catalogue uses.
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


class Target(NamedTuple):
    cls: str | None
    name: str
    static: bool

    @property
    def label(self) -> str:
        return f"{self.cls}.{self.name}" if self.cls else self.name


@dataclass
class NearMiss:
    target: Target
    change: str
    source: str

    @property
    def subject(self) -> str:
        return f"near miss {self.target.label} {self.change}"


def _returns_a_value(fn: ast.FunctionDef) -> bool:
    return any(isinstance(n, ast.Return) and n.value is not None and not isinstance(n.value, ast.Constant)
               for n in ast.walk(fn))


def targets(source: str) -> list[Target]:
    """Each public function and method that returns a computed value: the places a
    student's result can be off."""
    found = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_") and _returns_a_value(node):
            found.append(Target(None, node.name, False))
        if isinstance(node, ast.ClassDef):
            for fn in node.body:
                if isinstance(fn, ast.FunctionDef) and not fn.name.startswith("__") and _returns_a_value(fn):
                    static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list)
                    found.append(Target(node.name, fn.name, static))
    return found


def variant(source: str, target: Target, change: str) -> str:
    """The reference with ``target`` rebound to return its value changed; its own definition
    stays, so what the tests read of the source is the reference's."""
    cls, name, static = target
    code = source + _WRAPPER.format(change=CHANGES[change])
    if cls is None:
        return code + f"{name} = _near_miss_wrap({name})\n"
    original = f"{cls}.__dict__[{name!r}]"
    if static:
        return code + f"{cls}.{name} = staticmethod(_near_miss_wrap({original}.__func__))\n"
    return code + f"{cls}.{name} = _near_miss_wrap({original})\n"


def near_misses(source: str) -> Iterator[NearMiss]:
    for target in targets(source):
        for change in CHANGES:
            yield NearMiss(target, change, variant(source, target, change))


def declarations(bundle: Bundle) -> dict[str, list[str]]:
    """``mutants/near_misses.toml``: function -> the phrases its near misses may show.
    Raises tomllib.TOMLDecodeError or ValueError where the file is not that."""
    if not (bundle.path / DECLARATIONS).is_file():
        return {}
    found = tomllib.loads(bundle.read(DECLARATIONS))
    for label, phrases in found.items():
        if not isinstance(phrases, list) or not all(isinstance(p, str) for p in phrases):
            raise ValueError(f"{label}: a list of phrases of the misconception table")
    return found


def false_hints(report, allowed: list[str], phrases: list[str]) -> list[str]:
    """The hints of ``report`` that name a mistake it may not be shown: a hint must contain a
    phrase of ``allowed`` (for a near miss, those declared for its function) and no other
    phrase of the table, since a hint that contains a row's phrase names that row's mistake."""
    return [hint for hint in misconceptions.shown_hints(report)
            if not any(p in hint for p in allowed) or set(misconceptions.claimed(hint, phrases)) - set(allowed)]


def check(bundle: Bundle, on_report=None) -> list[tuple[str, str, str, bool]]:
    """(subject, expected, actual, ok) rows: each near miss of the reference, graded, and the
    declarations it is held to. ``on_report(subject, report)`` sees each near miss's report."""
    out = []
    phrases = [row.phrase for row in misconceptions.table(bundle)]
    source = bundle.read("solution.py")
    try:
        labels = [t.label for t in targets(source)]
    except SyntaxError:
        return out  # the reference's own row says so
    try:
        declared = declarations(bundle)
    except (tomllib.TOMLDecodeError, ValueError) as exc:
        out.append(("bundle", f"valid {DECLARATIONS}", str(exc), False))
        declared = {}
    strange = [f"function {label}" for label in declared if label not in labels] + \
              [repr(p) for label in declared for p in declared[label] if p not in phrases]
    if strange:
        out.append(("bundle", f"{DECLARATIONS} names functions of the reference and phrases of the table",
                    "not so: " + ", ".join(strange), False))
    shown: dict[str, set[str]] = {}
    for miss in near_misses(source):
        report = grade(bundle, miss.source)
        if on_report:
            on_report(miss.subject, report)
        allowed = declared.get(miss.target.label, [])
        if report.status != "graded":
            out.append((miss.subject, "no hint claims another mistake",
                        f"not graded [{report.status}]: {(report.message or '')[:200]}", False))
            continue
        wrong = false_hints(report, allowed, phrases)
        hints = misconceptions.shown_hints(report)
        shown.setdefault(miss.target.label, set()).update(p for p in allowed if any(p in h for h in hints))
        out.append((miss.subject, "no hint claims another mistake",
                    "; ".join(f"false hint {h[:70]!r}..." for h in dict.fromkeys(wrong)) if wrong
                    else "no hint" if not hints else "only hints declared for it", not wrong))
    for label, allowed in declared.items():
        unseen = [p for p in allowed if p not in shown.get(label, set())]
        if label in labels:
            out.append((f"near misses of {label}", "show each hint declared for them",
                        "; ".join(f"not shown {p!r}" for p in unseen) or "yes", not unseen))
    return out
