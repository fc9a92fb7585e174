"""Registering an LMS (a platform) with the tool: from the instructor page and the CLI.

A registration belongs to whoever made it: only its owner or an administrator changes,
disables, deletes or checks it, and a second registration of an issuer already
registered (a new client id) is for an administrator only. The CLI acts as an
administrator. Every URL is https, unless GRADER_LTI_ALLOW_HTTP allows plain http
(development and tests).

A disabled registration's launches are refused and nothing is sent to its LMS (scores,
roster reads) until it is enabled again; its courses, users and scores stay. A deleted
one is kept as a row (its courses, users and their work are keyed by it) but is gone
from the lists, its launches are refused as an unknown LMS's, and its issuer and client
id may be registered anew: a new registration, whose users start afresh. Every change is
kept in its history (LtiPlatformChange).
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

from sqlalchemy import select
from sqlalchemy.orm import Session

from grader.accounts.models import Role, User, lms_user, lms_user_id  # noqa: F401  (the LMS user keys, kept with users)
from grader.db import now
from grader.lti.models import LtiPlatform, LtiPlatformChange
from grader.lti.tool import Platform
from grader.settings import settings


class PlatformError(ValueError):
    """A registration that cannot be taken; ``field`` names the faulty one (pages word the
    message in the reader's language by it), the message says what is wrong in English.
    ``field`` "owner" or "issuer": not this user's to change (403); "platform" with
    ``missing``: no such registration, or a deleted one (404); "taken": another
    registration has the issuer and client id (409)."""

    def __init__(self, field: str, message: str, *, forbidden: bool = False, missing: bool = False):
        super().__init__(message)
        self.field, self.forbidden, self.missing = field, forbidden, missing


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


EDITABLE = ("name", "issuer", "client_id", "deployment_ids", "auth_login_url", "auth_token_url", "jwks_url")


def _validated(*, issuer: str, client_id: str, deployment_ids: list[str], auth_login_url: str,
               auth_token_url: str, jwks_url: str) -> dict:
    """A registration's fields as stored, or PlatformError naming the first faulty one:
    the one set of rules for registering and for editing."""
    allow_http = settings().lti_allow_http
    values = dict(issuer=_text("issuer", "The issuer", issuer),
                  client_id=_text("client_id", "The client id", client_id))
    deployments = [_text("deployment_id", "A deployment id", d) for d in deployment_ids]
    if not deployments:
        raise PlatformError("deployment_ids", "give at least one deployment id")
    values["deployment_ids"] = sorted(set(deployments))
    values.update(auth_login_url=_url("auth_login_url", "The authentication (OIDC auth) URL", auth_login_url,
                                      allow_http),
                  auth_token_url=_url("auth_token_url", "The access token URL", auth_token_url, allow_http),
                  jwks_url=_url("jwks_url", "The JWKS (public keyset) URL", jwks_url, allow_http))
    return values


def _live(session: Session, issuer: str) -> list[LtiPlatform]:
    """The registrations of ``issuer`` not deleted."""
    return list(session.scalars(select(LtiPlatform).where(LtiPlatform.issuer == issuer,
                                                          LtiPlatform.deleted_at.is_(None))))


def _record(session: Session, row: LtiPlatform, action: str, actor: User | None, fields: dict | None = None) -> None:
    session.add(LtiPlatformChange(platform_id=row.id, action=action, fields=fields or {},
                                  actor_id=actor.id if actor is not None else None))


def _snapshot(row: LtiPlatform) -> dict:
    return {name: list(getattr(row, name) or []) if name == "deployment_ids" else getattr(row, name)
            for name in EDITABLE}


def _changes(before: dict, after: dict) -> dict:
    return {name: [before[name], after[name]] for name in EDITABLE if before[name] != after[name]}


def add(session: Session, *, issuer: str, client_id: str, deployment_ids: list[str], auth_login_url: str,
        auth_token_url: str, jwks_url: str, name: str = "", actor: User | None = None) -> LtiPlatform:
    """Register a platform, or add deployment ids (and new URLs) to one registered before
    (not deleted). ``actor``: the user asking (owns what it registers); None for the
    command line."""
    values = _validated(issuer=issuer, client_id=client_id, deployment_ids=deployment_ids,
                        auth_login_url=auth_login_url, auth_token_url=auth_token_url, jwks_url=jwks_url)
    issuer, client_id = values["issuer"], values["client_id"]
    same_issuer = _live(session, issuer)
    row = next((r for r in same_issuer if r.client_id == client_id), None)
    before = None
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
    else:
        before = _snapshot(row)
    row.name = (name or "").strip()[:200] or row.name or urlsplit(issuer).netloc or issuer
    row.deployment_ids = sorted(set(row.deployment_ids or []) | set(values["deployment_ids"]))
    for key in ("auth_login_url", "auth_token_url", "jwks_url"):
        setattr(row, key, values[key])
    session.flush()
    if before is None:
        _record(session, row, "created", actor)
    elif changed := _changes(before, _snapshot(row)):
        _record(session, row, "edited", actor, changed)
    return row


def get(session: Session, platform_id: int, actor: User | None) -> LtiPlatform:
    """A registration not deleted that ``actor`` may change, or PlatformError (another's
    reads as missing, as a deleted one does: nothing to learn from the difference)."""
    row = session.get(LtiPlatform, platform_id)
    if row is None or row.deleted_at is not None or not may_edit(row, actor):
        raise PlatformError("platform", f"no registration {platform_id}", missing=True)
    return row


def edit(session: Session, platform_id: int, *, issuer: str, client_id: str, deployment_ids: list[str],
         auth_login_url: str, auth_token_url: str, jwks_url: str, name: str = "",
         actor: User | None = None) -> dict:
    """Change a registration to exactly these fields (deployment ids included: one left
    out is no longer accepted), checked as registering checks them. Its users and courses
    stay (they are keyed by the registration, not by its issuer). Returns what changed,
    {field: [before, after]}; each change is in the history."""
    row = get(session, platform_id, actor)
    values = _validated(issuer=issuer, client_id=client_id, deployment_ids=deployment_ids,
                        auth_login_url=auth_login_url, auth_token_url=auth_token_url, jwks_url=jwks_url)
    others = [r for r in _live(session, values["issuer"]) if r.id != row.id]
    if any(r.client_id == values["client_id"] for r in others):
        raise PlatformError("taken", "another registration has this issuer and client id")
    if others and values["issuer"] != row.issuer and not (actor is None or actor.role == Role.ADMIN):
        raise PlatformError("issuer", "this issuer is registered already; only an administrator adds "
                                      "another client id to it", forbidden=True)
    values["name"] = (name or "").strip()[:200] or row.name
    before = _snapshot(row)
    for key, value in values.items():
        setattr(row, key, value)
    changed = _changes(before, _snapshot(row))
    if changed:
        session.flush()
        _record(session, row, "edited", actor, changed)
    return changed


def disable(session: Session, platform_id: int, actor: User | None = None) -> bool:
    """Refuse the registration's launches and send its LMS nothing, keeping all it has.
    False when it was disabled already."""
    row = get(session, platform_id, actor)
    if row.disabled_at is not None:
        return False
    row.disabled_at = now()
    _record(session, row, "disabled", actor)
    return True


def enable(session: Session, platform_id: int, actor: User | None = None) -> bool:
    """Take launches again. False when it was not disabled."""
    row = get(session, platform_id, actor)
    if row.disabled_at is None:
        return False
    row.disabled_at = None
    _record(session, row, "enabled", actor)
    return True


def delete(session: Session, platform_id: int, actor: User | None = None) -> LtiPlatform:
    """Delete a registration, keeping the row (see the module's text)."""
    row = get(session, platform_id, actor)
    row.deleted_at = now()
    _record(session, row, "deleted", actor)
    session.flush()
    return row


def history(session: Session, platform_ids: list[int]) -> dict[int, list[tuple[LtiPlatformChange, str | None]]]:
    """Each registration's changes, the newest first, with the name of who made each
    (None: the command line)."""
    found: dict[int, list] = {pid: [] for pid in platform_ids}
    if not platform_ids:
        return found
    for change, who, email in session.execute(
            select(LtiPlatformChange, User.name, User.email).outerjoin(User, User.id == LtiPlatformChange.actor_id)
            .where(LtiPlatformChange.platform_id.in_(platform_ids))
            .order_by(LtiPlatformChange.at.desc(), LtiPlatformChange.id.desc())):
        found[change.platform_id].append((change, (who or email) if change.actor_id is not None else None))
    return found


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


def listed(session: Session, actor: User | None = None) -> list[LtiPlatform]:
    """The registered platforms (not deleted) ``actor`` may change, the first registered
    first; None: every one (the command line)."""
    query = select(LtiPlatform).where(LtiPlatform.deleted_at.is_(None)).order_by(LtiPlatform.id)
    if actor is not None and actor.role != Role.ADMIN:
        query = query.where(LtiPlatform.created_by == actor.id)
    return list(session.scalars(query))


def by_issuer(session: Session, issuer: str) -> list[Platform]:
    """The registrations a launch from ``issuer`` may be for: not deleted (a deleted one's
    are an unknown LMS's); a disabled one is among them, for the launch to be refused as such."""
    if not isinstance(issuer, str):
        return []
    return [as_platform(row) for row in _live(session, issuer)]


def is_active(row: LtiPlatform | None) -> bool:
    """Whether the tool talks to this registration's LMS: it exists, is neither disabled nor deleted."""
    return row is not None and off(row) is None


def off(row: LtiPlatform) -> str | None:
    """Why the tool does not talk to this registration's LMS: "deleted", "disabled"; None: it does."""
    return "deleted" if row.deleted_at is not None else "disabled" if row.disabled_at is not None else None


def as_platform(row: LtiPlatform) -> Platform:
    return Platform(id=row.id, issuer=row.issuer, client_id=row.client_id,
                    deployment_ids=tuple(row.deployment_ids or ()), auth_login_url=row.auth_login_url,
                    auth_token_url=row.auth_token_url, jwks_url=row.jwks_url,
                    disabled=off(row) is not None)
