"""Exercise bundles: one folder each, described by exercise.toml.

    exercises/<slug>/
      exercise.toml     slug, version, title, device, functions, limits
      README.md         the statement (README.ko.md: in Korean)
      starter.py        what a student starts from
      solution.py       the reference solution (never enters the sandbox)
      probes.py         optional: code run inside the sandbox to drive student objects
      tests/            the hidden pytest suite (never enters the sandbox)
      mutants/          known-wrong submissions and what each must fail
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

DEVICES = ("cpu", "cuda", "any")
_SLUG = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


class CatalogError(ValueError):
    """An exercise bundle is missing or malformed; the message says what and where."""


@dataclass(frozen=True)
class ExerciseLimits:
    call_seconds: float = 5.0
    submission_seconds: float = 60.0
    memory_mb: int = 1024
    output_kb: int = 64
    result_mb: int = 64
    file_mb: int = 16
    processes: int = 32


@dataclass(frozen=True)
class Exercise:
    slug: str
    version: int
    path: Path
    title: dict[str, str]
    device: str
    functions: tuple[str, ...]
    limits: ExerciseLimits = field(default_factory=ExerciseLimits)
    block: tuple[str, ...] = ()  # torch APIs made unavailable inside the sandbox

    @property
    def tests_dir(self) -> Path:
        return self.path / "tests"

    @property
    def probes(self) -> str | None:
        probes = self.path / "probes.py"
        return probes.read_text(encoding="utf-8") if probes.exists() else None

    def file(self, name: str) -> Path:
        return self.path / name

    def statement(self, lang: str = "en") -> str:
        localized = self.path / f"README.{lang}.md"
        return (localized if lang != "en" and localized.exists() else self.path / "README.md").read_text(
            encoding="utf-8")


def load(path: str | Path) -> Exercise:
    """Load and validate one bundle folder."""
    path = Path(path).resolve()
    meta_file = path / "exercise.toml"
    if not meta_file.is_file():
        raise CatalogError(f"{path}: no exercise.toml; an exercise bundle is a folder with one")
    try:
        meta = tomllib.loads(meta_file.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(f"{meta_file}: not valid TOML ({exc})") from None

    def need(key, kind):
        if key not in meta:
            raise CatalogError(f"{meta_file}: missing required key {key!r}")
        if not isinstance(meta[key], kind):
            raise CatalogError(f"{meta_file}: {key!r} must be of type {kind.__name__}")
        return meta[key]

    slug = need("slug", str)
    if not _SLUG.match(slug):
        raise CatalogError(f"{meta_file}: slug {slug!r} must be lowercase words joined by '-'")
    version = need("version", int)
    if version < 1:
        raise CatalogError(f"{meta_file}: version must be a positive integer")
    title = need("title", dict)
    if not isinstance(title.get("en"), str):
        raise CatalogError(f"{meta_file}: [title] needs an 'en' entry")
    device = meta.get("device", "cpu")
    if device not in DEVICES:
        raise CatalogError(f"{meta_file}: device must be one of {', '.join(DEVICES)}, not {device!r}")
    functions = need("functions", list)
    if not functions or not all(isinstance(f, str) and f.isidentifier() for f in functions):
        raise CatalogError(f"{meta_file}: functions must be a non-empty list of Python names")
    limits_table = meta.get("limits", {})
    known = set(ExerciseLimits.__dataclass_fields__)
    unknown = set(limits_table) - known
    if unknown:
        raise CatalogError(f"{meta_file}: unknown limits {sorted(unknown)}; known: {sorted(known)}")
    for key, value in limits_table.items():
        if not isinstance(value, (int, float)) or value <= 0:
            raise CatalogError(f"{meta_file}: limits.{key} must be a positive number")
    block = meta.get("sandbox", {}).get("block", [])
    if not all(isinstance(b, str) and re.match(r"^[A-Za-z_][\w.]*$", b) for b in block):
        raise CatalogError(f"{meta_file}: sandbox.block must list dotted names such as 'torch.func'")
    for required in ("README.md", "starter.py", "solution.py"):
        if not (path / required).is_file():
            raise CatalogError(f"{path}: missing {required}")
    if not (path / "tests").is_dir() or not any((path / "tests").glob("test_*.py")):
        raise CatalogError(f"{path}: tests/ must hold at least one test_*.py")
    return Exercise(slug=slug, version=version, path=path, title=dict(title), device=device,
                    functions=tuple(functions), limits=ExerciseLimits(**limits_table), block=tuple(block))


def find(slug_or_path: str | Path, exercises_dir: str | Path | None = None) -> Exercise:
    """An exercise by slug (in the catalogue folder) or by the path of its folder."""
    candidate = Path(slug_or_path)
    if candidate.is_dir():
        return load(candidate)
    if exercises_dir is None:
        from grader.settings import settings
        exercises_dir = settings().exercises_dir
    folder = Path(exercises_dir) / str(slug_or_path)
    if not folder.is_dir():
        known = ", ".join(e.slug for e in all_exercises(exercises_dir)) or "none"
        raise CatalogError(f"no exercise {str(slug_or_path)!r} (known: {known})")
    return load(folder)


def all_exercises(exercises_dir: str | Path) -> list[Exercise]:
    root = Path(exercises_dir)
    if not root.is_dir():
        return []
    return [load(p) for p in sorted(root.iterdir()) if (p / "exercise.toml").is_file()]


# ------------------------------------------------------------------ check

@dataclass
class CheckRow:
    exercise: str
    subject: str       # "solution", "starter", "mutant:<name>", "bundle"
    expected: str
    actual: str
    ok: bool


def check(exercise: Exercise, on_report=None) -> list[CheckRow]:
    """Grade the bundle's own files and compare with what they must score.

    The reference scores full marks twice with identical reports; the starter
    scores less; every mutant fails exactly the tests it declares and shows its hint.
    ``on_report(subject, report)``, if given, sees each subject's report once (the
    reference's first), so that a caller needs no grade of its own.
    """
    from grader.engine import grade  # the engine depends on us, not we on it, at import

    rows: list[CheckRow] = []

    def row(subject, expected, actual, ok):
        rows.append(CheckRow(exercise.slug, subject, expected, actual, bool(ok)))

    solution = exercise.file("solution.py").read_text(encoding="utf-8")
    first, second = grade(exercise, solution), grade(exercise, solution)
    if on_report:
        on_report("solution", first)
    row("solution", "full marks", f"{first.score:g}/{first.max_score:g} [{first.status}]",
        first.status == "graded" and first.score == first.max_score > 0)
    same = first.without_timings() == second.without_timings()
    row("solution", "same report twice", "identical" if same else "different", same)
    visible = sum(t.visible for t in first.tests)
    row("bundle", ">= 1 visible and >= 1 hidden test", f"{visible} visible, {len(first.tests) - visible} hidden",
        0 < visible < len(first.tests))

    starter = grade(exercise, exercise.file("starter.py").read_text(encoding="utf-8"))
    if on_report:
        on_report("starter", starter)
    row("starter", "less than full marks", f"{starter.score:g}/{starter.max_score:g}",
        starter.score < starter.max_score)

    mutants_dir = exercise.path / "mutants"
    declared = {}
    manifest = mutants_dir / "mutants.toml"
    if manifest.is_file():
        try:
            declared = tomllib.loads(manifest.read_text(encoding="utf-8"))
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
        report = grade(exercise, files[name].read_text(encoding="utf-8"))
        if on_report:
            on_report(subject, report)
        failed = {t.id.rsplit("::", 1)[-1] for t in report.tests if not t.passed}
        row(subject, "fails " + ", ".join(sorted(must_fail)), "fails " + (", ".join(sorted(failed)) or "nothing"),
            failed == must_fail and must_fail)
        reports[name] = report
    from grader import misconceptions  # hints and mutants in step with the misconception table
    for subject, expected, actual, ok in misconceptions.check(exercise, declared, reports):
        row(subject, expected, actual, ok)
    return rows


def format_check(rows: list[CheckRow]) -> str:
    width = max((len(f"{r.exercise}  {r.subject}") for r in rows), default=10)
    lines = []
    for r in rows:
        mark = "ok  " if r.ok else "FAIL"
        lines.append(f"{mark} {f'{r.exercise}  {r.subject}':<{width}}  expected {r.expected}; got {r.actual}")
    bad = sum(not r.ok for r in rows)
    lines.append(f"{len(rows) - bad} of {len(rows)} checks hold" + (f"; {bad} violated" if bad else ""))
    return "\n".join(lines)
