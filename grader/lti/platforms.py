"""Registering an LMS (a platform) with the tool: from the instructor page and the CLI.

A registration belongs to whoever made it: only its owner or an administrator changes
it, and a second registration of an issuer already registered (a new client id) is for
an administrator only. The CLI acts as an administrator. Every URL is https, unless
GRADER_LTI_ALLOW_HTTP allows plain http (development and tests).
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

from sqlalchemy import select
from sqlalchemy.orm import Session

from grader.accounts.models import Role, User, lms_user, lms_user_id  # noqa: F401  (the LMS user keys, kept with users)
from grader.lti.models import LtiPlatform
from grader.lti.tool import Platform
from grader.settings import settings


class PlatformError(ValueError):
    """A registration that cannot be taken; ``field`` names the faulty one (pages word the
    message in the reader's language by it), the message says what is wrong in English.
    ``field`` "owner" or "issuer": not this user's to change (403)."""

    def __init__(self, field: str, message: str, *, forbidden: bool = False):
        super().__init__(message)
        self.field, self.forbidden = field, forbidden


def _url_ok(value: str, allow_http: bool) -> bool:
    parts = urlsplit(value)
    schemes = ("https", "http") if allow_http else ("https",)
    return (parts.scheme in schemes and bool(parts.hostname) and "@" not in parts.netloc and "\\" not in value
            and not any(c.isspace() or ord(c) < 32 for c in value))


def _url(field: str, name: str, value: str, allow_http: bool) -> str:
    value = (value or "").strip()
    if len(value) > 2000 or not _url_ok(value, allow_http):
        raise PlatformError(field, f"{name} must be an absolute https URL")
    return value


def _text(field: str, name: str, value: str, limit: int = 500) -> str:
    value = (value or "").strip()
    if not value or len(value) > limit or any(ord(c) < 32 for c in value):
        raise PlatformError(field, f"{name} must be 1 to {limit} printable characters")
    return value


def split_ids(text: str) -> list[str]:
    return [part for part in re.split(r"[\s,]+", text or "") if part]


def may_edit(row: LtiPlatform, actor: User | None) -> bool:
    """Its owner or an administrator (None: the command line, run by the operator)."""
    return actor is None or actor.role == Role.ADMIN or (row.created_by is not None and row.created_by == actor.id)


def add(session: Session, *, issuer: str, client_id: str, deployment_ids: list[str], auth_login_url: str,
        auth_token_url: str, jwks_url: str, name: str = "", actor: User | None = None) -> LtiPlatform:
    """Register a platform, or add deployment ids (and new URLs) to one registered before.
    ``actor``: the user asking (owns what it registers); None for the command line."""
    allow_http = settings().lti_allow_http
    issuer, client_id = _text("issuer", "The issuer", issuer), _text("client_id", "The client id", client_id)
    deployments = [_text("deployment_id", "A deployment id", d) for d in deployment_ids]
    if not deployments:
        raise PlatformError("deployment_ids", "give at least one deployment id")
    urls = dict(auth_login_url=_url("auth_login_url", "The authentication (OIDC auth) URL", auth_login_url,
                                    allow_http),
                auth_token_url=_url("auth_token_url", "The access token URL", auth_token_url, allow_http),
                jwks_url=_url("jwks_url", "The JWKS (public keyset) URL", jwks_url, allow_http))
    same_issuer = session.scalars(select(LtiPlatform).where(LtiPlatform.issuer == issuer)).all()
    row = next((r for r in same_issuer if r.client_id == client_id), None)
    if row is None:
        if same_issuer and not (actor is None or actor.role == Role.ADMIN):
            raise PlatformError("issuer", "this issuer is registered already; only an administrator adds "
                                          "another client id to it", forbidden=True)
        row = LtiPlatform(issuer=issuer, client_id=client_id, deployment_ids=[],
                          created_by=actor.id if actor is not None else None)
        session.add(row)
    elif not may_edit(row, actor):
        raise PlatformError("owner", "this registration belongs to someone else; only its owner or an "
                                     "administrator changes it", forbidden=True)
    row.name = (name or "").strip()[:200] or row.name or urlsplit(issuer).netloc or issuer
    row.deployment_ids = sorted(set(row.deployment_ids or []) | set(deployments))
    for key, value in urls.items():
        setattr(row, key, value)
    session.flush()
    return row


def returns_to(platform: Platform, url: str | None) -> bool:
    """Whether a deep linking return URL is the launching platform's: https (http where
    allowed), with no user info, on a host of the registration (its issuer's or one of its
    URLs') or a sibling of one (a Canvas school's host beside canvas.instructure.com)."""
    if not url or len(url) > 2000 or not _url_ok(url, settings().lti_allow_http):
        return False
    host = urlsplit(url).hostname
    for registered in (platform.issuer, platform.auth_login_url, platform.auth_token_url, platform.jwks_url):
        known = urlsplit(registered).hostname
        if not known:
            continue
        if host == known:
            return True
        if _is_ip(known) or _is_ip(host) or known.count(".") < 2:
            continue  # a sibling needs a domain of its own under a parent: lms.example.edu, not example.edu
        if host.endswith("." + known.split(".", 1)[1]):
            return True
    return False


def service_url_ok(url: str | None) -> bool:
    """Whether a service URL a launch names (a course's roster) may be kept to call later:
    https (http where allowed), no user info, at most 2000 characters. The outbound client
    checks where it points at each call."""
    return bool(url) and len(url) <= 2000 and _url_ok(url, settings().lti_allow_http)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def listed(session: Session) -> list[LtiPlatform]:
    """Every registered platform, the first registered first."""
    return list(session.scalars(select(LtiPlatform).order_by(LtiPlatform.id)))


def by_issuer(session: Session, issuer: str) -> list[Platform]:
    if not isinstance(issuer, str):
        return []
    rows = session.scalars(select(LtiPlatform).where(LtiPlatform.issuer == issuer)).all()
    return [as_platform(row) for row in rows]


def as_platform(row: LtiPlatform) -> Platform:
    return Platform(id=row.id, issuer=row.issuer, client_id=row.client_id,
                    deployment_ids=tuple(row.deployment_ids or ()), auth_login_url=row.auth_login_url,
                    auth_token_url=row.auth_token_url, jwks_url=row.jwks_url)
