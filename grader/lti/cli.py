"""`grader lti ...`: register LMS platforms, list them, rotate the tool's signing key."""

from __future__ import annotations

import click


@click.group("lti")
def lti() -> None:
    """LTI 1.3: the LMS platforms this tool trusts, and its signing keys."""


@lti.command("add-platform")
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
    from grader import db
    from grader.lti import platforms

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


@lti.command("list-platforms")
def list_platforms_command() -> None:
    """The registered platforms, one a line: id, issuer, client id, deployment ids."""
    from sqlalchemy import select

    from grader import db
    from grader.lti.models import LtiPlatform

    db.upgrade()
    with db.transaction() as session:
        for row in session.scalars(select(LtiPlatform).order_by(LtiPlatform.id)):
            click.echo(f"{row.id}\t{row.issuer}\t{row.client_id}\t{','.join(row.deployment_ids)}\t{row.name}")


@lti.command("rotate-key")
def rotate_key_command() -> None:
    """Make a new signing key. The JWKS keeps the previous one until the next rotation,
    so platforms that cached it still verify what it signed."""
    from grader import db
    from grader.lti import keys

    db.upgrade()
    with db.transaction() as session:
        keys.current(session)  # a first rotation leaves a previous key to publish too
        kid = keys.rotate(session).kid
    click.echo(f"the tool now signs with key {kid}", err=True)
