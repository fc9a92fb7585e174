"""What `grader check` warns of: a bundle that checks out but is likely not what its author
means to publish. A warning fails nothing; the check's table alone decides.

- still the template: files `grader new` wrote and no one changed since (compared with the
  template beside grader/authoring/new.py, the slug written in as it writes it);
- a title another exercise has already (in any language, case and spacing aside): on a
  worker, the released exercises of the service (grader.catalog.tasks); on this machine,
  the catalogue folder.

Reads files only: it grades nothing, so it imports neither the engine nor torch.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from grader.authoring.new import NAMED, SLUG_MARK, TEMPLATE_DIR
from grader.bundle import Bundle

_SKIPPED = ("__pycache__",)


def template_files(bundle: Bundle) -> list[str]:
    """The files of ``bundle`` (as paths inside it) still exactly as `grader new` wrote them."""
    same = []
    for path in sorted(TEMPLATE_DIR.rglob("*")):
        relative = path.relative_to(TEMPLATE_DIR)
        if not path.is_file() or set(relative.parts) & set(_SKIPPED):
            continue
        mine = bundle.path / relative
        if not mine.is_file() or mine.is_symlink():
            continue
        expected = path.read_bytes()
        if relative.as_posix() in NAMED:
            expected = expected.replace(SLUG_MARK.encode(), bundle.slug.encode())
        if mine.read_bytes() == expected:
            same.append(relative.as_posix())
    return same


def _template_size() -> int:
    return sum(1 for path in TEMPLATE_DIR.rglob("*")
               if path.is_file() and not set(path.relative_to(TEMPLATE_DIR).parts) & set(_SKIPPED))


def _folded(text: str) -> str:
    return " ".join(text.split()).casefold()


def same_titles(bundle: Bundle, others: Mapping[str, Mapping[str, str]]) -> list[tuple[str, str]]:
    """(slug, title) of each exercise in ``others`` (slug -> its titles by language) whose
    title in some language is the bundle's own, case and spacing aside; itself left out."""
    mine = {_folded(t) for t in bundle.title.values() if isinstance(t, str) and t.strip()}
    found = []
    for slug, titles in sorted(others.items()):
        if slug == bundle.slug:
            continue
        for title in (titles or {}).values():
            if isinstance(title, str) and _folded(title) in mine:
                found.append((slug, title))
                break
    return found


def warnings(bundle: Bundle, titles: Mapping[str, Mapping[str, str]] | None = None) -> list[str]:
    """What to warn of about ``bundle``, in words; ``titles``: the other exercises' titles
    to compare with, by slug (None: titles are not compared)."""
    found = []
    same = template_files(bundle)
    if same and len(same) == _template_size():
        found.append("the bundle is grader new's template, unchanged: no file of it was edited; make the "
                     "exercise your own before students see it")
    elif same:
        found.append(f"still grader new's template, unchanged: {', '.join(same)}; make the exercise your own "
                     f"before students see it")
    for slug, title in same_titles(bundle, titles or {}):
        found.append(f"its title {title!r} is the title of the exercise {slug!r} already; students would not "
                     f"tell them apart")
    return found


def folder_titles(bundles: Iterable[Bundle]) -> dict[str, dict[str, str]]:
    """The titles of a catalogue folder's bundles, by slug."""
    return {b.slug: dict(b.title) for b in bundles}


def format_warnings(by_slug: Mapping[str, list[str]]) -> str:
    """One line each: ``warn <slug>  <what>``."""
    return "\n".join(f"warn {slug}  {text}" for slug, found in by_slug.items() for text in found)
