"""Publishing the catalogue folder: what `grader up` and `grader exercise sync` do.

An exercise's maximum score is what grading the bundle's own solution.py reports, so
it is the sum of the hidden tests' points as the engine counts them.
"""

from __future__ import annotations

import click
from sqlalchemy import select

from grader import db
from grader.bundle import Bundle
from grader.catalog.models import Exercise
from grader.engine import grade


def stale(bundles: list[Bundle], database_url: str | None = None) -> list[Bundle]:
    """The bundles the database has no row for, or an older version of."""
    with db.transaction(database_url) as session:
        versions = dict(session.execute(select(Exercise.slug, Exercise.version)).all())
    return [b for b in bundles if b.slug not in versions or versions[b.slug] < b.version]


def publish(bundles: list[Bundle], database_url: str | None = None) -> int:
    """Publish bundles into the database at their current versions; returns how many
    could not be (the others are). Raises SandboxUnavailable when nothing can be graded."""
    failed = 0
    for bundle in bundles:
        report = grade(bundle, bundle.read("solution.py"))
        if report.status != "graded" or report.max_score <= 0:
            # A wrong maximum would mis-scale every score: publish nothing for this one.
            click.echo(f"FAIL {bundle.slug}: its solution graded {report.status} "
                       f"({report.message or f'{report.max_score:g} points'}); not published", err=True)
            failed += 1
            continue
        with db.transaction(database_url) as session:
            row = session.get(Exercise, bundle.slug) or Exercise(slug=bundle.slug)
            if row.upload_id is not None and row.version >= bundle.version:
                # An instructor uploaded a newer (or the same) version: it stays.
                click.echo(f"skip {bundle.slug} v{bundle.version}: uploaded version {row.version} is published")
                continue
            row.publish(bundle, report.max_score)
            session.add(row)
        click.echo(f"ok   {bundle.slug} v{bundle.version}: {report.max_score:g} points, {bundle.device}")
    return failed


def unpublish_missing(bundles: list[Bundle], database_url: str | None = None) -> list[str]:
    """Withdraw the exercises published from catalogue folders that are gone (their
    rows and submissions stay; students no longer see them). Uploaded ones stay."""
    present = {b.slug for b in bundles}
    with db.transaction(database_url) as session:
        query = select(Exercise).where(Exercise.published.is_(True), Exercise.upload_id.is_(None))
        gone = session.scalars(query.where(Exercise.slug.not_in(present)) if present else query).all()
        for row in gone:
            row.published = False
            click.echo(f"gone {row.slug}: its folder is no longer in the catalogue; unpublished")
        return [row.slug for row in gone]
