"""`grader exercise sync` and `grader exercise add`: publish exercises into the service's
database, checked on this machine."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from grader import catalog, db
from grader.authoring.check_table import CheckRow, format_check
from grader.catalog import drafts, uploads
from grader.catalog.models import Exercise, UploadStatus
from grader.catalog.publishing import publish, unpublish_missing
from grader.catalog.tasks import check_here
from grader.engine import SandboxUnavailable
from grader.settings import settings


@click.command("sync")
def exercise_sync_command() -> None:
    """Publish every catalogue bundle into the database, at its current version.

    The maximum score is what grading the bundle's own solution.py reports, so it is
    the sum of the hidden tests' points as the engine counts them. Exit status 1 if
    a bundle could not be published (the others are), 2 if nothing can be graded here.
    """
    try:
        bundles = catalog.all_bundles(settings().exercises_dir)
    except catalog.CatalogError as exc:
        raise click.ClickException(str(exc)) from None
    db.upgrade()
    unpublish_missing(bundles)
    try:
        failed = publish(bundles)
    except SandboxUnavailable as exc:
        click.echo(f"error: cannot grade: {exc}", err=True)
        sys.exit(2)
    sys.exit(1 if failed else 0)


@click.command("add")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option("--release", "release", is_flag=True,
              help="Once published, release it to the catalogue: students see it (a new exercise is "
                   "a draft until then).")
def exercise_add_command(path: Path, release: bool) -> None:
    """Add or update an exercise from PATH, a bundle folder or a zip of one.

    The bundle is stored, checked here as a worker would check an upload (the
    reference scores full marks, the starter less, every mutant fails as declared),
    and published only if every check holds: a new exercise as a draft, which
    --release puts in the catalogue. Prints the check's table and what it warns of.
    Exit status 1 if it was rejected, 2 if nothing can be graded here.
    """
    archive = uploads.pack(path) if path.is_dir() else path.read_bytes()
    db.upgrade()
    try:
        upload = check_here(archive)
    except uploads.UploadError as exc:
        raise click.ClickException(str(exc)) from None
    except SandboxUnavailable as exc:
        click.echo(f"error: cannot grade: {exc}", err=True)
        sys.exit(2)
    rows = [CheckRow(**row) for row in upload.check_rows or []]
    if rows:
        click.echo(format_check(rows))
    for warning in upload.warnings or []:
        click.echo(f"warn {upload.slug}  {warning}")
    if upload.status != UploadStatus.PUBLISHED:
        raise click.ClickException(f"{upload.slug} v{upload.version} was not published: {upload.error}")
    click.echo(f"published {upload.slug} v{upload.version}", err=True)
    if release:
        with db.transaction() as session:  # the operator of this machine: an administrator's step
            drafts.release(session, session.get(Exercise, upload.slug), admin=True)
        click.echo(f"released {upload.slug}: students see it in the catalogue", err=True)
