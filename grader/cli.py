"""The ``grader`` command."""

from __future__ import annotations

import sys
from pathlib import Path

import click


@click.group()
def main() -> None:
    """Grade PyTorch autograd exercises."""


@main.command("grade")
@click.argument("exercise")
@click.argument("submission", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--lang", default="en", type=click.Choice(["en", "ko"]), help="Language of messages.")
def grade_command(exercise: str, submission: Path, as_json: bool, lang: str) -> None:
    """Grade SUBMISSION (a .py file) against EXERCISE (a slug or a bundle folder).

    Exit status: 0 full marks, 1 graded below full marks, 2 could not grade.
    """
    from grader.catalog import CatalogError
    from grader.engine import SandboxUnavailable, grade

    try:
        report = grade(exercise, submission.read_bytes())
    except CatalogError as exc:
        raise click.ClickException(str(exc)) from None
    except SandboxUnavailable as exc:
        click.echo(f"error: cannot grade: {exc}", err=True)
        sys.exit(2)
    click.echo(report.to_json(indent=2) if as_json else report.render(lang))
    if report.status not in ("graded", "time_limit", "memory_limit", "syntax_error", "submission_error"):
        sys.exit(2)
    sys.exit(0 if report.score == report.max_score and report.status == "graded" else 1)


@main.command("check")
@click.argument("exercises", nargs=-1)
def check_command(exercises: tuple[str, ...]) -> None:
    """Check exercise bundles: the reference scores full marks (twice, identically),
    the starter less, and every mutant fails exactly as it declares.

    With no EXERCISES, checks the whole catalogue. Exit status 1 on any violation.
    """
    from grader import catalog
    from grader.engine import SandboxUnavailable
    from grader.settings import settings

    try:
        chosen = ([catalog.find(e) for e in exercises] if exercises
                  else catalog.all_exercises(settings().exercises_dir))
        rows = [row for ex in chosen for row in catalog.check(ex)]
    except catalog.CatalogError as exc:
        raise click.ClickException(str(exc)) from None
    except SandboxUnavailable as exc:
        click.echo(f"error: cannot grade: {exc}", err=True)
        sys.exit(2)
    click.echo(catalog.format_check(rows))
    sys.exit(0 if rows and all(r.ok for r in rows) else 1)


if __name__ == "__main__":
    main()
