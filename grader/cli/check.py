"""`grader check` and `grader exercise check`: check exercise bundles on this machine."""

from __future__ import annotations

import sys

import click

from grader import catalog
from grader.authoring import mutation
from grader.authoring.check import check
from grader.authoring.check_table import format_check
from grader.authoring.warnings import folder_titles, format_warnings, warnings
from grader.engine import SandboxUnavailable
from grader.settings import settings


@click.command("check")
@click.argument("exercises", nargs=-1)
@click.option("--mutate", is_flag=True, help="Mutate each reference solution and report the mutants "
              "that still get full marks (see grader.authoring.mutation).")
@click.option("--near-misses/--no-near-misses", default=True, show_default=True,
              help="Grade the near misses of each reference solution (one function's value changed) and fail "
                   "on a hint that names a mistake they did not make (see grader.authoring.near_miss).")
def check_command(exercises: tuple[str, ...], mutate: bool, near_misses: bool) -> None:
    """Check exercise bundles: the reference scores full marks (twice, identically),
    the starter less, every mutant fails exactly as it declares and shows its hint and
    no other mutant's, and near misses of the reference get no hint they do not deserve.

    With no EXERCISES, checks the whole catalogue. Exit status 1 on any violation.
    Warns (and fails nothing) of a bundle still `grader new`'s template, and of a title
    an exercise of the catalogue folder has already.
    """
    try:
        chosen = ([catalog.find(e) for e in exercises] if exercises
                  else catalog.all_bundles(settings().exercises_dir))
        if mutate:
            results = [r for bundle in chosen for r in mutation.run(bundle)]
            click.echo(mutation.format_results(results))
            sys.exit(1 if any(r.hole for r in results) else 0)
        rows = [row for bundle in chosen for row in check(bundle, near_misses=near_misses)]
    except catalog.CatalogError as exc:
        raise click.ClickException(str(exc)) from None
    except SandboxUnavailable as exc:
        click.echo(f"error: cannot grade: {exc}", err=True)
        sys.exit(2)
    click.echo(format_check(rows))
    found = bundle_warnings(chosen)
    if found:
        click.echo(format_warnings(found))
    sys.exit(0 if rows and all(r.ok for r in rows) else 1)


def bundle_warnings(chosen: list[catalog.Bundle]) -> dict[str, list[str]]:
    """What to warn of, by slug: titles compared with the catalogue folder's exercises (and
    with one another's, when several are checked at once)."""
    try:
        titles = folder_titles(catalog.all_bundles(settings().exercises_dir))
    except catalog.CatalogError:
        titles = {}  # a folder that does not load has been said elsewhere; compare what there is
    titles.update(folder_titles(chosen))
    found = {bundle.slug: warnings(bundle, titles) for bundle in chosen}
    return {slug: lines for slug, lines in found.items() if lines}


@click.command("check")
@click.argument("exercises", nargs=-1)
@click.option("--mutate", is_flag=True, help="Also mutate each reference solution (see `grader check`).")
@click.option("--near-misses/--no-near-misses", default=True, show_default=True,
              help="Grade the near misses of each reference solution too (see `grader check`).")
@click.pass_context
def exercise_check_command(context: click.Context, exercises: tuple[str, ...], mutate: bool,
                           near_misses: bool) -> None:
    """Check bundles here, before pushing them: the same as `grader check`."""
    context.forward(check_command)
