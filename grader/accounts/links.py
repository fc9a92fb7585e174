"""Links mailed to get into an account, each working once and for a while:

- ``welcome``: an account made without a password (a roster, an administrator) chooses
  its first one (WELCOME_DAYS);
- ``reset``: "forgot your password?" (RESET_HOURS);
- ``join_new`` and ``join_existing``: a course's invitation link answered with an address
  (grader.courses.invitations words what they do; JOIN_HOURS).

Only a token's hash is stored. A link is spent by an UPDATE that only one request can
win, so two clicks never use it twice; opening the page it leads to spends nothing (a
mail scanner that fetches every link must not use it up).
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from grader.accounts.models import AccountLink, User
from grader.clock import as_utc
from grader.db import now
from grader.refusals import Refused

WELCOME_DAYS = 7
RESET_HOURS = 1
JOIN_HOURS = 24
PURPOSES = ("welcome", "reset", "join_new", "join_existing")
PATH = "/account/link/"  # where a link leads; grader.logs masks what follows its first 8 characters


class LinkRefused(Refused):
    """A link that opens nothing: unknown, used or expired (all said the same way, so a
    guess learns nothing)."""


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


def issue(session: Session, purpose: str, *, email: str, user: User | None = None, data: dict | None = None,
          lifetime: timedelta | None = None) -> str:
    """A new link's token (shown once, in the mail; the caller commits)."""
    if purpose not in PURPOSES:
        raise ValueError(f"a link is one of {', '.join(PURPOSES)}, not {purpose!r}")
    lifetime = lifetime or {"welcome": timedelta(days=WELCOME_DAYS), "reset": timedelta(hours=RESET_HOURS)}.get(
        purpose, timedelta(hours=JOIN_HOURS))
    token = secrets.token_urlsafe(32)
    session.add(AccountLink(purpose=purpose, token_hash=_hash(token), user_id=user.id if user else None,
                            email=email, data=data or {}, expires_at=now() + lifetime))
    session.flush()
    return token


def path(token: str) -> str:
    return PATH + token


def _spent() -> LinkRefused:
    return LinkRefused("link_spent", "this link does not work: it was used already, has expired, or was not "
                                     "copied whole; ask for a new one")


def find(session: Session, token: str) -> AccountLink:
    """The link the token opens, while it works; else LinkRefused."""
    row = session.scalar(select(AccountLink).where(AccountLink.token_hash == _hash(token))) \
        if isinstance(token, str) and 20 <= len(token) <= 100 else None
    if row is None or row.used_at is not None or as_utc(row.expires_at) <= now():
        raise _spent()
    return row


def spend(session: Session, row: AccountLink) -> None:
    """Use up a link :func:`find` gave (in the caller's transaction): once only, however
    many ask at once."""
    won = session.execute(update(AccountLink).where(
        AccountLink.id == row.id, AccountLink.used_at.is_(None), AccountLink.expires_at > now())
        .values(used_at=now()).execution_options(synchronize_session=False)).rowcount
    if won != 1:
        raise _spent()


def end_all(session: Session, user: User,
            purposes: tuple[str, ...] = ("welcome", "reset", "join_existing")) -> None:
    """Spend the user's other open links (a password set ends the way in that others had:
    a join link for the account signs in without a password, so it ends too)."""
    session.execute(update(AccountLink).where(
        AccountLink.user_id == user.id, AccountLink.used_at.is_(None), AccountLink.purpose.in_(purposes))
        .values(used_at=now()).execution_options(synchronize_session=False))
