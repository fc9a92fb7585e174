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
@click.option("--password", default=None, help="The password (at least 8 characters); asked for when neither "
                                                "it nor --mail-link is given.")
@click.option("--mail-link", is_flag=True, help="Make the account without a password and mail its owner a link "
                                                "to choose one (valid 7 days).")
@click.option("--language", default="en", show_default=True, type=click.Choice(["en", "ko"]),
              help="The language of the mail.")
def create_user_command(email: str, role: str, name: str, password: str | None, mail_link: bool,
                        language: str) -> None:
    """Create a local account, such as the first administrator."""
    if mail_link and password is not None:
        raise click.UsageError("give --password or --mail-link, not both")
    if not mail_link and password is None:
        password = click.prompt("Password", hide_input=True, confirmation_prompt=True)
    db.upgrade()
    try:
        with db.transaction() as session:
            user = users.create_user(session, email=email, password=password, role=role, name=name,
                                     language=language if mail_link else None)
            if mail_link:
                users.welcome(session, user)
            email = user.email
    except users.AccountError as exc:
        raise click.ClickException(exc.message) from None
    click.echo(f"created {role} {email}" + (", and mailed a link to choose a password" if mail_link else ""),
               err=True)


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
