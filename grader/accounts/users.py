"""Local accounts: creating them and checking a password.

LMS users (LTI) and API users are rows of the same table without a password; they
sign in through their platform, never with the form.
"""

from __future__ import annotations

import re
import unicodedata
import secrets

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session
from werkzeug.security import check_password_hash, generate_password_hash

from grader.accounts.models import ApiKey, Role, User
from grader.db import now

MIN_PASSWORD = 8
# scrypt at werkzeug's cost (N=2^15). A hash records its own parameters, so a check works
# whatever the cost was when it was made.
PASSWORD_METHOD = "scrypt:32768:8:1"
_EMAIL = re.compile(r"^[^@\s\x00-\x1f\x7f]+@[^@\s\x00-\x1f\x7f]+$")
# Compared against when the email is unknown, so that a wrong email costs as long as
# a wrong password and the timing does not tell which accounts exist.
_NOBODY = generate_password_hash("not anybody's password", PASSWORD_METHOD)


class AccountError(ValueError):
    """An account that cannot be made as asked; the message says why, ``code`` what
    (for a page to word it in its reader's language)."""

    def __init__(self, message: str, code: str = "invalid_account"):
        super().__init__(message)
        self.code = code


def normalise_email(email: str) -> str:
    return email.strip().lower()


def create_user(session: Session, *, email: str, password: str, role: str = Role.STUDENT,
                name: str = "") -> User:
    """Add a local account (the caller commits). Refuses a taken email, a bad role or a
    password shorter than MIN_PASSWORD characters."""
    email = normalise_email(email)
    if not _EMAIL.fullmatch(email) or len(email) > 320:
        raise AccountError(f"{email!r} is not an email address", "invalid_email")
    if role not in set(Role):
        raise AccountError(f"the role must be one of {', '.join(Role)}, not {role!r}")
    if len(password) < MIN_PASSWORD:
        raise AccountError(f"the password must be at least {MIN_PASSWORD} characters", "short_password")
    if session.scalar(select(User).where(func.lower(User.email) == email)) is not None:
        raise AccountError(f"there is already an account for {email}", "email_taken")
    user = User(email=email, name=name.strip() or email.split("@")[0], role=role,
                password_hash=generate_password_hash(password, PASSWORD_METHOD))
    session.add(user)
    session.flush()
    return user


# Letters that draw nothing: the Hangul fillers, the blank Braille pattern, the Mongolian
# vowel separator. With format characters (U+200B, U+202E...) and spaces, a name made only
# of these would stand on a member list as nobody.
_BLANK_LOOKING = frozenset("\u115f\u1160\u3164\uffa0\u2800\u180e")


def _visible(text: str) -> bool:
    """Whether ``text`` shows at least one character."""
    return any(c not in _BLANK_LOOKING and unicodedata.category(c)[0] not in "CZ" for c in text)


def register(session: Session, *, email: str, name: str, password: str) -> User:
    """A student's account made by its owner (through a course's invitation link). Its
    e-mail address is whatever they typed, never confirmed: ``self_registered`` keeps a
    roster line naming that address from finding it."""
    name = " ".join((name or "").split())
    if not _visible(name) or len(name) > 200 or any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise AccountError("give your name, at most 200 printable characters", "invalid_name")
    if len(password) > 1000:
        raise AccountError("the password is at most 1000 characters", "long_password")
    user = create_user(session, email=email, password=password, role=Role.STUDENT, name=name)
    user.self_registered = True
    return user


def authenticate(session: Session, email: str, password: str) -> User | None:
    """The local account with this email and password, or None."""
    email = normalise_email(email)
    # No account's email holds a control character (and PostgreSQL refuses NUL outright).
    plausible = len(email) <= 320 and not any(ord(c) < 32 or ord(c) == 127 for c in email)
    user = session.scalar(select(User).where(User.email == email)) if plausible else None
    if user is None or not user.password_hash:
        check_password_hash(_NOBODY, password)
        return None
    return user if check_password_hash(user.password_hash, password) else None


def set_password(session: Session, email: str, password: str) -> User:
    """Give the account with this email a new password (the caller commits). Every session
    it has is over: whoever holds an old cookie signs in again, with the new password; and
    so is every personal token (an account taken over and given back keeps none of the
    taker's ways in)."""
    user = session.scalar(select(User).where(User.email == normalise_email(email)))
    if user is None:
        raise AccountError(f"there is no account for {normalise_email(email)}")
    if len(password) < MIN_PASSWORD:
        raise AccountError(f"the password must be at least {MIN_PASSWORD} characters")
    user.password_hash = generate_password_hash(password, PASSWORD_METHOD)
    end_sessions(user)
    session.execute(update(ApiKey).where(ApiKey.user_id == user.id, ApiKey.revoked_at.is_(None))
                    .values(revoked_at=now()))
    return user


def reset_password(session: Session, email: str) -> tuple[User, str]:
    """Give the account with this email a new random password, for a user who forgot theirs
    (the caller commits, and shows the password once): as :func:`set_password`, every
    session and personal token it had is over. Returns the account and the password."""
    password = secrets.token_urlsafe(12)
    return set_password(session, email, password), password


def by_email(session: Session, email: str) -> User | None:
    """The account whose email is this one, in any case; None if there is none."""
    return session.scalar(select(User).where(func.lower(User.email) == email.lower()))


def end_sessions(user: User) -> None:
    """Void every session of ``user`` (each cookie carries the version it began under)."""
    user.session_version = (user.session_version or 0) + 1
