"""API keys: ``gk_<prefix>_<secret>``, shown once, stored as a SHA-256 hash.

A key is 256 random bits, so a fast hash is enough (there is nothing to guess
a dictionary from); the prefix is not secret and finds the row to compare with.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from grader.accounts.models import ApiKey
from grader.db import now

SCOPES = ("exercises:read", "exercises:write", "submissions:read", "submissions:write", "courses:read", "courses:write",
          "grades:read", "grades:write")
# prefix: 12 hex digits, so it never contains the "_" that separates the parts.
_KEY = re.compile(r"^gk_([0-9a-f]{12})_([A-Za-z0-9_-]{43})$")


class KeyRefused(Exception):
    """A bearer token that grants nothing; ``code`` says why (for the JSON error)."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code, self.message = code, message


@dataclass(frozen=True)
class Caller:
    """Who is calling: the key's id, prefix and what it may do."""

    key_id: int
    prefix: str
    scopes: frozenset[str]


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def create(session: Session, scopes: list[str] | tuple[str, ...], name: str = "") -> tuple[ApiKey, str]:
    """Add a new key to the session; returns the row and the key (never stored)."""
    unknown = sorted(set(scopes) - set(SCOPES))
    if unknown:
        raise ValueError(f"unknown scopes {unknown}; known: {list(SCOPES)}")
    prefix = secrets.token_hex(6)
    key = f"gk_{prefix}_{secrets.token_urlsafe(32)}"
    row = ApiKey(prefix=prefix, key_hash=_digest(key), scopes=sorted(set(scopes)), name=name)
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
    return Caller(key_id=row.id, prefix=row.prefix, scopes=frozenset(row.scopes or ()))


def revoke(session: Session, prefix: str) -> ApiKey | None:
    """Mark the key with this prefix revoked (it is refused from now on); None if unknown."""
    row = session.scalar(select(ApiKey).where(ApiKey.prefix == prefix))
    if row is not None and row.revoked_at is None:
        row.revoked_at = now()
    return row
