"""The bundle format: one folder per exercise, described by its exercise.toml.

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
import shutil
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from grader.settings import settings

DEVICES = ("cpu", "cuda", "any")
SLUG = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


def is_slug(value) -> bool:
    """Lowercase words joined by '-': the only names an exercise may have (anything
    else is never looked up, nor sent to a database)."""
    return isinstance(value, str) and SLUG.fullmatch(value) is not None


class CatalogError(ValueError):
    """An exercise bundle is missing or malformed; the message says what and where."""


@dataclass(frozen=True)
class BundleLimits:
    call_seconds: float = 5.0
    submission_seconds: float = 60.0
    memory_mb: int = 1024
    output_kb: int = 64
    result_mb: int = 64
    file_mb: int = 16
    processes: int = 32


@dataclass(frozen=True)
class Bundle:
    """One exercise's folder, loaded and validated; what the engine grades against."""

    slug: str
    version: int
    path: Path
    title: dict[str, str]
    device: str
    functions: tuple[str, ...]
    limits: BundleLimits = field(default_factory=BundleLimits)
    block: tuple[str, ...] = ()  # torch APIs made unavailable inside the sandbox

    @property
    def tests_dir(self) -> Path:
        return self.path / "tests"

    @property
    def probes(self) -> str | None:
        probes = self.path / "probes.py"
        if probes.is_symlink():
            # It goes into the student sandbox: a link could name any file of the worker's.
            raise CatalogError(f"{probes}: is a symbolic link; a bundle's files must be its own")
        return probes.read_text(encoding="utf-8") if probes.exists() else None

    def file(self, name: str) -> Path:
        return self.path / name

    LANGUAGES = ("en", "ko")  # README.md is English; README.<lang>.md the others

    def statement(self, lang: str = "en") -> str:
        """The statement in `lang`, else in English."""
        localized = self.path / f"README.{lang}.md"
        return (localized if lang != "en" and localized.exists() else self.path / "README.md").read_text(
            encoding="utf-8")

    def statements(self) -> dict[str, str | None]:
        """The statement in each language, None where the bundle has none in it."""
        found = {lang: self.path / f"README.{lang}.md" for lang in self.LANGUAGES if lang != "en"}
        return {"en": self.statement("en"),
                **{lang: path.read_text(encoding="utf-8") if path.is_file() else None for lang, path in found.items()}}


def load(path: str | Path) -> Bundle:
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
    if not is_slug(slug):
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
    known = set(BundleLimits.__dataclass_fields__)
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
    return Bundle(slug=slug, version=version, path=path, title=dict(title), device=device,
                    functions=tuple(functions), limits=BundleLimits(**limits_table), block=tuple(block))


def find(slug_or_path: str | Path, exercises_dir: str | Path | None = None) -> Bundle:
    """A bundle by slug (in the catalogue folder) or by the path of its folder."""
    candidate = Path(slug_or_path)
    if candidate.is_dir():
        return load(candidate)
    if exercises_dir is None:
        exercises_dir = settings().exercises_dir
    folder = Path(exercises_dir) / str(slug_or_path)
    if not folder.is_dir():
        known = ", ".join(b.slug for b in all_bundles(exercises_dir)) or "none"
        raise CatalogError(f"no exercise {str(slug_or_path)!r} (known: {known})")
    return load(folder)


def all_bundles(exercises_dir: str | Path) -> list[Bundle]:
    """Every bundle folder of the catalogue, loaded (CatalogError at the first bad one)."""
    root = Path(exercises_dir)
    if not root.is_dir():
        return []
    return [load(p) for p in sorted(root.iterdir()) if (p / "exercise.toml").is_file()]


# The annotated template `grader new` copies: a whole exercise that `grader check` passes.
TEMPLATE_DIR = Path(__file__).resolve().parent / "template"
_NAMED = ("exercise.toml", "MISCONCEPTIONS.md")  # the files that say the slug


def copy_template(target: str | Path, slug: str) -> Path:
    """A new bundle folder ``target`` made from the template, named ``slug``; loaded and
    validated, so that a broken template is an error here, not in a course."""
    if not is_slug(slug):
        raise CatalogError(f"{slug!r} is not a slug: use lowercase words joined by '-'")
    target = Path(target)
    shutil.copytree(TEMPLATE_DIR, target, ignore=shutil.ignore_patterns("__pycache__"))
    for name in _NAMED:
        path = target / name
        path.write_text(path.read_text(encoding="utf-8").replace("__SLUG__", slug), encoding="utf-8")
    return load(target).path
