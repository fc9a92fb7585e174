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

import math
import os
import re
import stat
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


MAX_FILE_BYTES = 4 << 20  # any one file of a bundle that the service reads as text


def read_own(path: Path, limit: int = MAX_FILE_BYTES) -> str:
    """A bundle's own file as text. Only a regular file within ``limit`` bytes: never a
    link (it could name any file of the worker's, /proc/self/environ included), a FIFO
    (it would block the worker) or a device."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise CatalogError(f"{path}: cannot be read as a file of the bundle ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise CatalogError(f"{path}: is not a regular file")
        if info.st_size > limit:
            raise CatalogError(f"{path}: is larger than {limit >> 20} MiB")
        data = fh.read(limit + 1)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise CatalogError(f"{path}: is not UTF-8 text") from None


def _own_file(path: Path) -> bool:
    """Whether ``path`` is a regular file of the bundle's own (not a link to one)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


# Each limit: whole numbers where they size memory, and at most this much, so that an
# exercise cannot hold a worker for hours or have it copy gigabytes.
LIMIT_BOUNDS = {"call_seconds": (float, 60), "submission_seconds": (float, 600), "memory_mb": (int, 8192),
                "output_kb": (int, 1024), "result_mb": (int, 256), "file_mb": (int, 1024), "processes": (int, 256)}


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
        return read_own(probes) if os.path.lexists(probes) else None

    def file(self, name: str) -> Path:
        return self.path / name

    def read(self, name: str) -> str:
        """One of the bundle's own files as text (see :func:`read_own`)."""
        return read_own(self.path / name)

    LANGUAGES = ("en", "ko")  # README.md is English; README.<lang>.md the others

    def statement(self, lang: str = "en") -> str:
        """The statement in `lang`, else in English."""
        localized = self.path / f"README.{lang}.md"
        return read_own(localized if lang != "en" and os.path.lexists(localized) else self.path / "README.md")

    def statements(self) -> dict[str, str | None]:
        """The statement in each language, None where the bundle has none in it."""
        found = {lang: self.path / f"README.{lang}.md" for lang in self.LANGUAGES if lang != "en"}
        return {"en": self.statement("en"),
                **{lang: read_own(path) if os.path.lexists(path) else None for lang, path in found.items()}}


def load(path: str | Path) -> Bundle:
    """Load and validate one bundle folder."""
    path = Path(path).resolve()
    meta_file = path / "exercise.toml"
    if not os.path.lexists(meta_file):
        raise CatalogError(f"{path}: no exercise.toml; an exercise bundle is a folder with one")
    try:
        meta = tomllib.loads(read_own(meta_file))
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
        kind, most = LIMIT_BOUNDS[key]
        number = type(value) is int or (kind is float and type(value) is float and math.isfinite(value))
        if not number or not 0 < value <= most:
            what = "a whole number" if kind is int else "a number of seconds"
            raise CatalogError(f"{meta_file}: limits.{key} must be {what} above 0 and at most {most}, not {value!r}")
    block = meta.get("sandbox", {}).get("block", [])
    if not all(isinstance(b, str) and re.match(r"^[A-Za-z_][\w.]*$", b) for b in block):
        raise CatalogError(f"{meta_file}: sandbox.block must list dotted names such as 'torch.func'")
    for required in ("README.md", "starter.py", "solution.py"):
        if not _own_file(path / required):
            raise CatalogError(f"{path}: missing {required} (a file of the bundle's own, not a link)")
    tests = path / "tests"
    if tests.is_symlink() or not tests.is_dir() or not any(_own_file(t) for t in tests.glob("test_*.py")):
        raise CatalogError(f"{path}: tests/ must be a folder (not a link) holding at least one test_*.py")
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
