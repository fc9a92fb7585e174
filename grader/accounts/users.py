"""Local accounts: creating them and checking a password.

LMS users (LTI) and API users are rows of the same table without a password; they
sign in through their platform, never with the form.
"""

from __future__ import annotations

import functools
import re
import unicodedata
import secrets

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session
from werkzeug.security import check_password_hash, generate_password_hash

from grader import mail
from grader.accounts import links
from grader.accounts.models import ApiKey, Role, User
from grader.db import now
from grader.refusals import Refused

MIN_PASSWORD = 8
# scrypt at werkzeug's cost (N=2^15). A hash records its own parameters, so a check works
# whatever the cost was when it was made.
PASSWORD_METHOD = "scrypt:32768:8:1"
_EMAIL = re.compile(r"^[^@\s\x00-\x1f\x7f]+@[^@\s\x00-\x1f\x7f]+$")


@functools.cache
def nobodys_hash() -> str:
    """Compared against when the email is unknown, so that a wrong email costs as long as a
    wrong password and the timing does not tell which accounts exist. Made once per process,
    when the web app is made (not at import: a worker or a command never signs anyone in, and
    the hash costs a tenth of a second of CPU)."""
    return generate_password_hash("not anybody's password", PASSWORD_METHOD)


class AccountError(Refused):
    """An account that cannot be made or changed as asked; the message says why, ``code``
    what (grader.refusals words it in its reader's language)."""

    def __init__(self, message: str, code: str = "invalid_account", **details):
        super().__init__(code, message, **details)


def normalise_email(email: str) -> str:
    return email.strip().lower()


def _check_password(password: str) -> None:
    if len(password) < MIN_PASSWORD:
        raise AccountError(f"the password must be at least {MIN_PASSWORD} characters", "short_password",
                           n=MIN_PASSWORD)
    if len(password) > 1000:
        raise AccountError("the password is at most 1000 characters", "long_password")


def check_email(email: str) -> str:
    """The address as accounts keep it (trimmed, lower case); AccountError if it is none."""
    email = normalise_email(email if isinstance(email, str) else "")
    if not _EMAIL.fullmatch(email) or len(email) > 320:
        raise AccountError(f"{email[:80]!r} is not an email address", "invalid_email")
    return email


def create_user(session: Session, *, email: str, password: str | None, role: str = Role.STUDENT,
                name: str = "", language: str | None = None) -> User:
    """Add a local account (the caller commits). Refuses a taken email, a bad role or a
    password shorter than MIN_PASSWORD characters. ``password=None`` makes an account
    that cannot sign in until its owner chooses one (see :func:`welcome`)."""
    email = check_email(email)
    if role not in set(Role):
        raise AccountError(f"the role must be one of {', '.join(Role)}, not {role!r}")
    if password is not None:
        _check_password(password)
    if session.scalar(select(User).where(func.lower(User.email) == email)) is not None:
        raise AccountError(f"there is already an account for {email}", "email_taken")
    user = User(email=email, name=name.strip() or email.split("@")[0], role=role, language=language,
                password_hash=None if password is None else generate_password_hash(password, PASSWORD_METHOD))
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


def check_name(name) -> str:
    """A person's name as given, its spaces made single; AccountError for none, one that
    shows nothing, or more than 200 characters."""
    name = " ".join((name if isinstance(name, str) else "").split())
    if not _visible(name) or len(name) > 200 or any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise AccountError("give your name, at most 200 printable characters", "invalid_name")
    return name


def authenticate(session: Session, email: str, password: str) -> User | None:
    """The local account with this email and password, or None."""
    email = normalise_email(email)
    # No account's email holds a control character (and PostgreSQL refuses NUL outright).
    plausible = len(email) <= 320 and not any(ord(c) < 32 or ord(c) == 127 for c in email)
    user = session.scalar(select(User).where(User.email == email)) if plausible else None
    if user is None or not user.password_hash:
        check_password_hash(nobodys_hash(), password)
        return None
    return user if check_password_hash(user.password_hash, password) else None


def set_password(session: Session, email: str, password: str) -> User:
    """Give the account with this email a new password (the caller commits). Every session
    it has is over: whoever holds an old cookie signs in again, with the new password; and
    so is every personal token (an account taken over and given back keeps none of the
    taker's ways in)."""
    user = session.scalar(select(User).where(User.email == normalise_email(email)))
    if user is None:
        raise AccountError(f"there is no account for {normalise_email(email)}", "no_account")
    return _new_password(session, user, password)


def take_back(session: Session, user: User) -> None:
    """The account's address was proven by its owner: a password someone else may have
    chosen goes, with every session, personal token and link it had (the owner sets a
    password through "forgot your password?")."""
    user.password_hash, user.self_registered = None, False
    _end_ways_in(session, user)


def _end_ways_in(session: Session, user: User) -> None:
    end_sessions(user)
    session.execute(update(ApiKey).where(ApiKey.user_id == user.id, ApiKey.revoked_at.is_(None))
                    .values(revoked_at=now()))
    links.end_all(session, user)


def _new_password(session: Session, user: User, password: str) -> User:
    _check_password(password)
    user.password_hash = generate_password_hash(password, PASSWORD_METHOD)
    _end_ways_in(session, user)
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


# ------------------------------------------------------------------ getting in by mail

def is_local(user: User) -> bool:
    """An account that signs in here with a password (not an LMS's or an API key's user)."""
    return user.external_id is None and user.api_key_id is None and bool(user.email)


def welcome(session: Session, user: User, *, course: str = "", language: str | None = None) -> None:
    """Mail ``user`` (an account made without a password) a link to choose one: the only
    way in for a student a roster or an administrator made (the caller commits)."""
    token = links.issue(session, "welcome", email=user.email, user=user)
    mail.send(session, kind="welcome", to=user.email, user_id=user.id, language=user.language or language,
              link=mail.link_to(links.path(token)),
              values={"name": user.name, "email": user.email, "course": course, "days": links.WELCOME_DAYS})


def forgot(session: Session, email: str, *, language: str | None = None) -> None:
    """"Forgot your password?": a local account with this address is mailed a link to
    choose a new one; any other address gets nothing. The caller answers the same either
    way, so the form tells no one which addresses have accounts."""
    try:
        email = check_email(email)
    except AccountError:
        return
    user = session.scalar(select(User).where(User.email == email))
    if user is None or not is_local(user):
        return
    token = links.issue(session, "reset", email=email, user=user)
    mail.send(session, kind="reset", to=email, user_id=user.id, language=user.language or language,
              link=mail.link_to(links.path(token)), values={"name": user.name, "email": email})


def choose_password(session: Session, token: str, password: str) -> User:
    """A welcome or reset link's password: set, the link spent, the account's other
    sessions, tokens and links over (the caller commits and signs the user in)."""
    _check_password(password)  # a mistake in the form spends nothing
    row = links.find(session, token)
    if row.purpose not in ("welcome", "reset") or row.user_id is None:
        raise links.LinkRefused("link_spent", "this link does not set a password")
    user = session.get(User, row.user_id)
    links.spend(session, row)
    if user is None or user.email != row.email:  # the account's address changed since: not theirs to open
        raise links.LinkRefused("link_spent", "this link was for another address")
    return _new_password(session, user, password)
