"""`grader create-user`, `set-password`, `reset-password` and `api-key ...`: local accounts
and the REST API's keys."""

from __future__ import annotations

import click

from grader import db
from grader.accounts import keys, users
from grader.accounts.models import Role


@click.command("create-user")
@click.option("--email", required=True, help="The email the user signs in with.")
@click.option("--role", default="student", show_default=True, type=click.Choice([role.value for role in Role]),
              help="admin: site-wide powers (bundles, every submission and registration); instructor: may "
                   "register an LMS; rights in a course come from the course.")
@click.option("--name", default="", help="The name pages show (default: the email's local part).")
@click.password_option(help="The password (asked for when not given; at least 8 characters).")
def create_user_command(email: str, role: str, name: str, password: str) -> None:
    """Create a local account, such as the first administrator."""
    db.upgrade()
    try:
        with db.transaction() as session:
            email = users.create_user(session, email=email, password=password, role=role, name=name).email
    except users.AccountError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"created {role} {email}", err=True)


@click.command("set-password")
@click.option("--email", required=True, help="The account's email.")
@click.password_option(help="The new password (asked for when not given; at least 8 characters).")
def set_password_command(email: str, password: str) -> None:
    """Give a local account a new password; its sessions everywhere end."""
    try:
        with db.transaction() as session:
            email = users.set_password(session, email, password).email
    except users.AccountError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"new password set for {email}; its sessions have ended", err=True)


@click.command("reset-password")
@click.option("--email", required=True, help="The account's email.")
def reset_password_command(email: str) -> None:
    """Give a local account a new random password, printed once (for a user who forgot
    theirs: hand it over, they change it); its sessions everywhere end."""
    try:
        with db.transaction() as session:
            user, password = users.reset_password(session, email)
            email = user.email
    except users.AccountError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"new password for {email}, shown only this once: {password}")
    click.echo("its sessions have ended", err=True)


@click.group("api-key")
def api_key_group() -> None:
    """Keys for the REST API (/api/v1)."""


@api_key_group.command("create")
@click.option("--scope", "scopes", multiple=True, required=True, type=click.Choice(keys.SCOPES),
              help="What the key may do (repeatable).")
@click.option("--name", default="", help="Who or what the key is for.")
def api_key_create_command(scopes: tuple[str, ...], name: str) -> None:
    """Create an API key and print it. It is shown only this once: only its hash is kept."""
    db.upgrade()
    with db.transaction() as session:
        row, key = keys.create(session, scopes, name=name)
        prefix = row.prefix
    click.echo(f"created API key {prefix} ({', '.join(sorted(set(scopes)))}); it is not shown again:", err=True)
    click.echo(key)


@api_key_group.command("revoke")
@click.argument("prefix")
def api_key_revoke_command(prefix: str) -> None:
    """Revoke the key whose prefix (gk_<PREFIX>_...) is PREFIX."""
    with db.transaction() as session:
        row = keys.revoke(session, prefix)
    if row is None:
        raise click.ClickException(f"no API key has the prefix {prefix!r}")
    click.echo(f"revoked API key {prefix}", err=True)
