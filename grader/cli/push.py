"""`grader exercise push`: publish a bundle on a running service, through its API."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from grader.authoring import push
from grader.authoring.check_table import format_check
from grader.catalog import uploads
from grader.settings import settings


@click.command("push")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option("--url", required=True, envvar="GRADER_URL", show_envvar=True,
              help="The service's address, e.g. https://grader.example.edu.")
@click.option("--timeout", default=900, show_default=True, type=click.IntRange(1),
              help="Seconds to wait for the check.")
@click.option("--release", "release", is_flag=True,
              help="Once published, release it to the catalogue: students see it. Without it, a new "
                   "exercise is a draft (its author and the staff of the courses whose assignments use it "
                   "see it); a new version of a released one stays released.")
def exercise_push_command(path: Path, url: str, timeout: int, release: bool) -> None:
    """Publish the bundle at PATH (a folder or a zip of one) on the service at URL.

    The bundle is sent to the service's API with the key in GRADER_API_KEY (scope
    exercises:write), checked on its workers (the reference scores full marks, the
    starter less, every mutant fails as declared) and published only if every check
    holds. Prints the check's table, and what it warns of. A new exercise is published as
    a draft; --release puts it in the catalogue too. Exit status: 0 published (and
    released, with --release); 1 refused or rejected (the bundle is at fault); 2 not sent
    or not followed, or not released (the address, the key or the service is).
    """
    try:
        archive = uploads.pack(path) if path.is_dir() else path.read_bytes()
        key = settings().api_key
        sent = push.send(url, key, archive)
        click.echo(f"sent {sent.slug} v{sent.version}; check {sent.id} is running", err=True)
        done = push.follow(url, key, sent, timeout=timeout)
    except push.PushError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1 if exc.refused else 2)
    if done.rows:
        click.echo(format_check(done.rows))
    for warning in done.warnings:
        click.echo(f"warn {done.slug}  {warning}")
    if done.status != "published":
        click.echo(f"error: {done.slug} v{done.version} was not published: {done.error}", err=True)
        sys.exit(1)
    click.echo(f"published {done.slug} v{done.version}", err=True)
    if not release:
        return
    try:
        push.release(url, key, done.slug)
    except push.PushError as exc:
        click.echo(f"error: {done.slug} was published but not released: {exc}", err=True)
        sys.exit(2)
    click.echo(f"released {done.slug}: students see it in the catalogue", err=True)
