"""`grader new`: a new exercise bundle from the annotated template."""

from __future__ import annotations

from pathlib import Path

import click

from grader.authoring.new import copy_template
from grader.bundle import CatalogError
from grader.settings import settings


@click.command("new")
@click.argument("slug")
@click.option("--into", "folder", default=None, type=click.Path(file_okay=False, path_type=Path),
              help="Where to make the bundle's folder (default: the catalogue, GRADER_EXERCISES_DIR).")
def new_command(slug: str, folder: Path | None) -> None:
    """Make a new exercise bundle SLUG from the annotated template: a working exercise
    (statement in English and Korean, starter, solution, a probe, hidden tests with points,
    hints and hints for errors, mutants with their declarations, the misconception table)
    that `grader check` passes. Change it into yours, checking as you go."""
    target = (folder or settings().exercises_dir) / slug
    if target.exists():
        raise click.ClickException(f"{target} exists already; choose another slug or folder")
    try:
        made = copy_template(target, slug)
    except CatalogError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"made {made}; check it with: grader check {made}")
