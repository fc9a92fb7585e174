"""`grader lti ...` (register LMS platforms, list, disable, enable or delete them, rotate the
tool's signing key) and
`grader course sync-roster` (read an LMS course's roster)."""

from __future__ import annotations

import click
from sqlalchemy.exc import IntegrityError

from grader import db
from grader.lti import keys, platforms, roster
from grader.lti.tool import ServiceError
from grader.settings import settings


@click.group("lti")
def lti_group() -> None:
    """LTI 1.3: the LMS platforms this tool trusts, and its signing keys."""


@lti_group.command("add-platform")
@click.option("--issuer", required=True, help="The platform's issuer (iss), e.g. https://canvas.instructure.com.")
@click.option("--client-id", required=True, help="The client id the platform gave this tool.")
@click.option("--deployment-id", "deployment_ids", multiple=True, required=True,
              help="A deployment id of the tool in the platform (repeatable).")
@click.option("--auth-login-url", required=True, help="The platform's OIDC authentication request URL.")
@click.option("--auth-token-url", required=True, help="The platform's OAuth2 access token URL.")
@click.option("--jwks-url", required=True, help="The platform's public keyset (JWKS) URL.")
@click.option("--name", default="", help="A name to show (default: the issuer's host).")
def add_platform_command(issuer, client_id, deployment_ids, auth_login_url, auth_token_url, jwks_url, name):
    """Register a platform, or add deployment ids to one registered before."""
    db.upgrade()
    try:
        with db.transaction() as session:
            row = platforms.add(session, issuer=issuer, client_id=client_id, deployment_ids=list(deployment_ids),
                                auth_login_url=auth_login_url, auth_token_url=auth_token_url,
                                jwks_url=jwks_url, name=name)
            shown = f"{row.name} ({row.issuer}, client {row.client_id}): deployments {', '.join(row.deployment_ids)}"
    except platforms.PlatformError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"registered {shown}", err=True)


@lti_group.command("list-platforms")
def list_platforms_command() -> None:
    """The registered platforms, one a line: id, issuer, client id, deployment ids."""
    db.upgrade()
    with db.transaction() as session:
        for row in platforms.listed(session):
            click.echo(f"{row.id}\t{row.issuer}\t{row.client_id}\t{','.join(row.deployment_ids)}\t{row.name}")


def _change(change, platform_id: int) -> bool:
    db.upgrade()
    try:
        with db.transaction() as session:
            return change(session, platform_id)
    except platforms.PlatformError as exc:
        raise click.ClickException(str(exc)) from None


@lti_group.command("disable-platform")
@click.argument("platform_id", type=int)
def disable_platform_command(platform_id: int) -> None:
    """Refuse a platform's launches and send it no scores or roster requests; its courses,
    users and scores stay, and `enable-platform` takes it back."""
    done = _change(platforms.disable, platform_id)
    click.echo(f"platform {platform_id} {'disabled' if done else 'was disabled already'}", err=True)


@lti_group.command("enable-platform")
@click.argument("platform_id", type=int)
def enable_platform_command(platform_id: int) -> None:
    """Take a disabled platform's launches again."""
    done = _change(platforms.enable, platform_id)
    click.echo(f"platform {platform_id} {'enabled' if done else 'was not disabled'}", err=True)


@lti_group.command("delete-platform")
@click.argument("platform_id", type=int)
@click.option("--yes", is_flag=True, help="Delete without asking.")
def delete_platform_command(platform_id: int, yes: bool) -> None:
    """Delete a registration. Its courses, users, submissions and history stay; its
    launches are refused as unknown, and the same issuer and client id may be registered
    again (as a new registration, whose LMS users start as new accounts)."""
    if not yes:
        click.confirm(f"Delete platform {platform_id}? Its launches will be refused", abort=True)
    _change(platforms.delete, platform_id)
    click.echo(f"platform {platform_id} deleted; its courses and their work stay", err=True)


@lti_group.command("rotate-key")
def rotate_key_command() -> None:
    """Make a new signing key. The JWKS keeps the previous one until the next rotation,
    so platforms that cached it still verify what it signed."""
    db.upgrade()
    with db.transaction() as session:
        kid = keys.rotate(session).kid
    click.echo(f"the tool now signs with key {kid}", err=True)


@click.command("sync-roster")
@click.option("--course", "course_id", required=True, type=int, help="The LMS course's id (as on its page).")
def course_sync_roster_command(course_id: int) -> None:
    """Read an LMS course's roster from the LMS now (Names and Role Provisioning Services):
    members who never launched are added with their LMS roles, roles changed, members the
    LMS no longer lists removed (their work stays). Prints what changed."""
    db.upgrade()
    try:
        result = roster.sync(course_id, timeout=settings().http_timeout_s)
    except roster.NoRoster as exc:
        raise click.ClickException(str(exc)) from None
    except ServiceError as exc:
        raise click.ClickException(f"the roster was not read, and stays as it was: "
                                   f"{f'the LMS answered {exc.status}: ' if exc.status else ''}{exc.detail}") from None
    except IntegrityError:
        raise click.ClickException("a launch added the same user meanwhile, and the roster stays as it was: "
                                   "run the command again") from None
    click.echo(f"course {course_id}: {result}")
