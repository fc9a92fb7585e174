"""`grader new`: a new bundle made from the annotated template beside this file."""

from __future__ import annotations

import shutil
from pathlib import Path

from grader.bundle import CatalogError, is_slug, load

# The annotated template `grader new` copies: a whole exercise that `grader check` passes.
TEMPLATE_DIR = Path(__file__).resolve().parent / "template"
NAMED = ("exercise.toml", "MISCONCEPTIONS.md")  # the files that say the slug
SLUG_MARK = "__SLUG__"  # where they say it


def copy_template(target: str | Path, slug: str) -> Path:
    """A new bundle folder ``target`` made from the template, named ``slug``; loaded and
    validated, so that a broken template is an error here, not in a course."""
    if not is_slug(slug):
        raise CatalogError(f"{slug!r} is not a slug: use lowercase words joined by '-'")
    target = Path(target)
    shutil.copytree(TEMPLATE_DIR, target, ignore=shutil.ignore_patterns("__pycache__"))
    for name in NAMED:
        path = target / name
        path.write_text(path.read_text(encoding="utf-8").replace(SLUG_MARK, slug), encoding="utf-8")
    return load(target).path
