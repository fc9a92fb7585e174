"""API keys: ``gk_<prefix>_<secret>``, shown once, stored as a SHA-256 hash.

A key is 256 random bits, so a fast hash is enough (there is nothing to guess
a dictionary from); the prefix is not secret and finds the row to compare with.

Two kinds: a service's key (made by an admin, for an LMS or a script: its submissions name
a ``user`` of its own) and a user's personal token (made by the user on their own page, for
the notebook client: it submits and reads as that user alone, with no more scopes than
PERSONAL_SCOPES, and is never a way into anything the user could not do on the site).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from grader.accounts.models import ApiKey, User
from grader.db import now
from grader.refusals import Refused

SCOPES = ("exercises:read", "exercises:write", "submissions:read", "submissions:write", "courses:read", "courses:write",
          "grades:read", "grades:write")
PERSONAL_SCOPES = ("exercises:read", "submissions:read", "submissions:write")
PERSONAL_LIMIT = 10  # live tokens per user: enough for every machine a student works on
# prefix: 12 hex digits, so it never contains the "_" that separates the parts.
_KEY = re.compile(r"^gk_([0-9a-f]{12})_([A-Za-z0-9_-]{43})$")


class KeyRefused(Refused):
    """A bearer token that grants nothing; ``code`` says why (for the JSON error)."""


@dataclass(frozen=True)
class Caller:
    """Who is calling: the key's id, prefix and what it may do; ``user_id`` for a personal
    token (it acts as that user alone)."""

    key_id: int
    prefix: str
    scopes: frozenset[str]
    user_id: int | None = None


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def create(session: Session, scopes: list[str] | tuple[str, ...], name: str = "",
           user_id: int | None = None) -> tuple[ApiKey, str]:
    """Add a new key to the session; returns the row and the key (never stored)."""
    unknown = sorted(set(scopes) - set(SCOPES))
    if unknown:
        raise ValueError(f"unknown scopes {unknown}; known: {list(SCOPES)}")
    if user_id is not None and not set(scopes) <= set(PERSONAL_SCOPES):
        raise ValueError(f"a personal token holds at most {list(PERSONAL_SCOPES)}")
    prefix = secrets.token_hex(6)
    key = f"gk_{prefix}_{secrets.token_urlsafe(32)}"
    row = ApiKey(prefix=prefix, key_hash=_digest(key), scopes=sorted(set(scopes)), name=name, user_id=user_id)
    session.add(row)
    session.flush()
    return row, key


def verify(session: Session, token: str) -> Caller:
    """The caller a bearer token belongs to, or KeyRefused."""
    match = _KEY.fullmatch(token)
    row = session.scalar(select(ApiKey).where(ApiKey.prefix == match.group(1))) if match else None
    # Compare even when nothing was found, so a miss and a wrong secret take as long.
    expected = row.key_hash if row is not None else _digest("gk_000000000000_" + "0" * 43)
    if not hmac.compare_digest(expected, _digest(token)) or row is None:
        raise KeyRefused("invalid_api_key", "the API key is not valid")
    if row.revoked_at is not None:
        raise KeyRefused("api_key_revoked", "the API key has been revoked")
    return Caller(key_id=row.id, prefix=row.prefix, scopes=frozenset(row.scopes or ()), user_id=row.user_id)


def revoke(session: Session, prefix: str) -> ApiKey | None:
    """Mark the key with this prefix revoked (it is refused from now on); None if unknown."""
    row = session.scalar(select(ApiKey).where(ApiKey.prefix == prefix))
    if row is not None and row.revoked_at is None:
        row.revoked_at = now()
    return row


# ------------------------------------------------------------------ personal tokens

class TokenRefused(Refused):
    """A personal token that cannot be made; ``code`` says why (the page words it in the
    reader's language), ``message`` in English."""


def personal(session: Session, user_id: int, name: str) -> tuple[ApiKey, str]:
    """A new personal token of the user: it submits and reads their own work, nothing else."""
    name = " ".join(name.split())
    if not name:
        raise TokenRefused("token_unnamed", "name the token (where you will use it, say \"laptop\" or \"Colab\")")
    if len(name) > 100:
        raise TokenRefused("token_name_too_long", "a token's name is at most 100 characters")
    # The user's row is written first, so that two requests at once count one after the other
    # (a row lock in PostgreSQL, the database's write lock in SQLite), never both below the limit.
    session.execute(update(User).where(User.id == user_id).values(id=User.id))
    if len(personal_tokens(session, user_id)) >= PERSONAL_LIMIT:
        raise TokenRefused("too_many_tokens",
                           f"you have {PERSONAL_LIMIT} tokens already: revoke one you no longer use first",
                           n=PERSONAL_LIMIT)
    return create(session, PERSONAL_SCOPES, name=name, user_id=user_id)


def personal_tokens(session: Session, user_id: int) -> list[ApiKey]:
    """The user's tokens not revoked, newest first."""
    return list(session.scalars(select(ApiKey).where(ApiKey.user_id == user_id, ApiKey.revoked_at.is_(None))
                                .order_by(ApiKey.created_at.desc(), ApiKey.id.desc())))


def revoke_personal(session: Session, user_id: int, prefix: str) -> ApiKey | None:
    """Revoke one of the user's own tokens; None if they have no live token with this prefix
    (another's token is not theirs to revoke, and is not told apart from none)."""
    row = session.scalar(select(ApiKey).where(ApiKey.prefix == prefix, ApiKey.user_id == user_id))
    if row is None or row.revoked_at is not None:
        return None
    row.revoked_at = now()
    return row
