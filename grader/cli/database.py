"""`grader db ...`: the service's database."""

from __future__ import annotations

import click

from grader import db


@click.group("db")
def db_group() -> None:
    """The database at GRADER_DATABASE_URL."""


@db_group.command("upgrade")
def db_upgrade_command() -> None:
    """Bring the database's schema to the newest migration."""
    db.upgrade()
    click.echo("the database schema is up to date", err=True)
