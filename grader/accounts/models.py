"""Who uses the service: users with a role, and the API keys other systems call with."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from sqlalchemy import JSON, Boolean, DateTime, ForeignKey, Integer, String, false as sa_false
from sqlalchemy.orm import Mapped, mapped_column

from grader.db import Base, now


class Role(StrEnum):
    """A local account's site role. Only an admin has site-wide powers (uploading bundles,
    every submission, every registration); an instructor may register an LMS it then owns.
    Rights in a course come from grader.courses (an LMS user's from its launches), never
    from this column."""

    STUDENT = "student"
    INSTRUCTOR = "instructor"
    ADMIN = "admin"


def lms_user_id(platform_id: int, sub: str) -> str:
    """An LMS user's key: its platform registration's id, never an issuer string (which
    anyone registering a platform could name again)."""
    return f"lti:{platform_id}|{sub}"


def lms_user(external_id: str | None) -> tuple[int, str] | None:
    """(platform registration id, sub) of a user key lms_user_id made; None for any other."""
    head, bar, sub = (external_id or "").partition("|")
    if not bar or not head.startswith("lti:") or not head[4:].isdigit() or not sub:
        return None
    return int(head[4:]), sub


def lms_prefix(platform_id: int) -> str:
    """What every user key of one platform registration begins with."""
    return lms_user_id(platform_id, "")


class User(Base):
    __tablename__ = "users"

    id: Mapped[int] = mapped_column(primary_key=True)
    email: Mapped[str | None] = mapped_column(String(320), unique=True)
    name: Mapped[str] = mapped_column(String(200), default="")
    role: Mapped[str] = mapped_column(String(20), default=Role.STUDENT)
    password_hash: Mapped[str | None] = mapped_column(String(300))
    # Who the user is elsewhere: an API client's user id, or an LMS's ("issuer|subject").
    external_id: Mapped[str | None] = mapped_column(String(500), unique=True)
    # An API user's key: its ``user`` values are that key's own (external_id "api:<key>:<user>").
    api_key_id: Mapped[int | None] = mapped_column(Integer, index=True)
    # Every signed-in session carries the version it began under; bumping it (sign-out, a
    # new password) ends them all, copied cookies included.
    session_version: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    # Made by its owner through a course's invitation link: the e-mail is whatever they typed,
    # never confirmed, so a roster line naming that address does not find this account.
    self_registered: Mapped[bool] = mapped_column(Boolean, default=False, server_default=sa_false())
    # The language mail to this user is written in ("en", "ko"): the one the site last showed them.
    language: Mapped[str | None] = mapped_column(String(8))
    # The kinds of notice (grader.accounts.notices) this user switched off, and the key of
    # the unsubscribe links in their mail (made with the first; it only switches mail off).
    mail_off: Mapped[list] = mapped_column(JSON, default=list, server_default="[]")
    mail_key: Mapped[str | None] = mapped_column(String(32))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)


class AccountLink(Base):
    """A link mailed to someone that works once: to set an account's first password
    (``welcome``), a new one (``reset``), to make an account for an address confirmed by
    the mail and join a course (``join_new``), or to sign in and join (``join_existing``).
    Only the token's hash is stored."""

    __tablename__ = "account_links"

    id: Mapped[int] = mapped_column(primary_key=True)
    purpose: Mapped[str] = mapped_column(String(20))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    email: Mapped[str] = mapped_column(String(320))
    # What the link goes on to do: {"invitation": id, "name": ...} for a join.
    data: Mapped[dict] = mapped_column(JSON, default=dict)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)


class ApiKey(Base):
    """A key for the REST API. Only its hash is stored; the prefix identifies it.

    A key with a ``user_id`` is that user's personal token (grader.accounts.keys): it acts as
    its user alone, as the site would, and is created and revoked on the user's own page."""

    __tablename__ = "api_keys"

    id: Mapped[int] = mapped_column(primary_key=True)
    prefix: Mapped[str] = mapped_column(String(16), unique=True)
    key_hash: Mapped[str] = mapped_column(String(128))
    scopes: Mapped[list] = mapped_column(JSON, default=list)
    name: Mapped[str] = mapped_column(String(200), default="")
    created_by: Mapped[int | None] = mapped_column(ForeignKey("users.id"))
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
