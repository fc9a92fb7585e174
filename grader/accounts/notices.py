"""Notices: mail that tells a user what happened (added to a course, a slow grade done, a
regrade or staff changing what counts, a due date near, staff commenting on their work).
Each kind can be switched off on the user's mail page, or by the one-click link at the foot
of every notice, which works signed out. The mails that get someone in (welcome, reset,
join) are not notices: they are only ever sent because someone asked, and cannot be
switched off.

Only users with an address get notices: local accounts, and LMS users whose launch gave one.
"""

from __future__ import annotations

import hmac
import secrets

from sqlalchemy.orm import Session

from grader import mail
from grader.accounts.models import User

KINDS = ("added", "graded", "regraded", "standing", "due_soon", "commented")
STOP_PATH = "/mail/stop"


def wanted(user: User | None, kind: str) -> bool:
    return user is not None and bool(user.email) and kind not in (user.mail_off or [])


def stop_link(user: User, kind: str) -> str:
    """The absolute one-click link that switches ``kind`` off for ``user``."""
    if not user.mail_key:
        user.mail_key = secrets.token_urlsafe(18)
    return mail.link_to(f"{STOP_PATH}/{user.id}/{kind}/{user.mail_key}")


def notify(session: Session, user: User | None, kind: str, *, values: dict, once: str | None = None,
           language: str | None = None) -> mail.Mail | None:
    """Queue a notice of ``kind`` to ``user`` where they want it (the caller commits)."""
    if kind not in KINDS:
        raise ValueError(f"a notice is one of {', '.join(KINDS)}, not {kind!r}")
    if not wanted(user, kind):
        return None
    return mail.send(session, kind=kind, to=user.email, user_id=user.id, language=user.language or language,
                     values={"name": user.name, "email": user.email, **values}, once=once,
                     unsubscribe=stop_link(user, kind))


def _owner(session: Session, user_id: int, kind: str, key: str) -> User | None:
    user = session.get(User, user_id) if 0 < user_id < 2**31 else None
    if user is None or kind not in KINDS or not user.mail_key or not hmac.compare_digest(user.mail_key, key):
        return None
    return user


def is_stop_link(session: Session, user_id: int, kind: str, key: str) -> bool:
    return _owner(session, user_id, kind, key) is not None


def stop(session: Session, user_id: int, kind: str, key: str) -> User | None:
    """Switch ``kind`` off for the user whose stop link this is; None if it is not one."""
    user = _owner(session, user_id, kind, key)
    if user is None:
        return None
    user.mail_off = sorted(set(user.mail_off or []) | {kind})
    return user


def choose(user: User, on: set[str]) -> None:
    """The kinds of notice the user gets from now on."""
    user.mail_off = sorted(set(KINDS) - set(on))
