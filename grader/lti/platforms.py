"""Registering an LMS (a platform) with the tool: from the instructor page and the CLI."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from sqlalchemy import select
from sqlalchemy.orm import Session

from grader.lti.models import LtiPlatform
from grader.lti.tool import Platform


class PlatformError(ValueError):
    """A registration that cannot be taken; ``field`` names the faulty one (pages word the
    message in the reader's language by it), the message says what is wrong in English."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


def _url(field: str, name: str, value: str) -> str:
    value = (value or "").strip()
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc or len(value) > 2000 \
            or any(c.isspace() for c in value):
        raise PlatformError(field, f"{name} must be an absolute https URL")
    return value


def _text(field: str, name: str, value: str, limit: int = 500) -> str:
    value = (value or "").strip()
    if not value or len(value) > limit or any(ord(c) < 32 for c in value):
        raise PlatformError(field, f"{name} must be 1 to {limit} printable characters")
    return value


def split_ids(text: str) -> list[str]:
    return [part for part in re.split(r"[\s,]+", text or "") if part]


def add(session: Session, *, issuer: str, client_id: str, deployment_ids: list[str], auth_login_url: str,
        auth_token_url: str, jwks_url: str, name: str = "", created_by: int | None = None) -> LtiPlatform:
    """Register a platform, or add deployment ids (and new URLs) to one registered before."""
    issuer, client_id = _text("issuer", "The issuer", issuer), _text("client_id", "The client id", client_id)
    deployments = [_text("deployment_id", "A deployment id", d) for d in deployment_ids]
    if not deployments:
        raise PlatformError("deployment_ids", "give at least one deployment id")
    urls = dict(auth_login_url=_url("auth_login_url", "The authentication (OIDC auth) URL", auth_login_url),
                auth_token_url=_url("auth_token_url", "The access token URL", auth_token_url),
                jwks_url=_url("jwks_url", "The JWKS (public keyset) URL", jwks_url))
    row = session.scalar(select(LtiPlatform).where(LtiPlatform.issuer == issuer,
                                                   LtiPlatform.client_id == client_id))
    if row is None:
        row = LtiPlatform(issuer=issuer, client_id=client_id, deployment_ids=[], created_by=created_by)
        session.add(row)
    row.name = (name or "").strip()[:200] or row.name or urlsplit(issuer).netloc or issuer
    row.deployment_ids = sorted(set(row.deployment_ids or []) | set(deployments))
    for key, value in urls.items():
        setattr(row, key, value)
    session.flush()
    return row


def by_issuer(session: Session, issuer: str) -> list[Platform]:
    rows = session.scalars(select(LtiPlatform).where(LtiPlatform.issuer == issuer)).all()
    return [as_platform(row) for row in rows]


def as_platform(row: LtiPlatform) -> Platform:
    return Platform(id=row.id, issuer=row.issuer, client_id=row.client_id,
                    deployment_ids=tuple(row.deployment_ids or ()), auth_login_url=row.auth_login_url,
                    auth_token_url=row.auth_token_url, jwks_url=row.jwks_url)
