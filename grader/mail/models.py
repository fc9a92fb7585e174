"""Mail the service sent or will send, and each try at sending it."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, DateTime, ForeignKey, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from grader.db import Base, now


class Mail(Base):
    """One mail to one address, rendered when it was queued. A link that opens an account
    (a set-password or sign-in link) is never stored: its place in the text holds
    ``LINK``, and the link itself travels with the task that sends the mail."""

    __tablename__ = "mails"

    id: Mapped[int] = mapped_column(primary_key=True)
    kind: Mapped[str] = mapped_column(String(40))
    to_address: Mapped[str] = mapped_column(String(320), index=True)
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"), index=True)
    language: Mapped[str] = mapped_column(String(8), default="en")
    subject: Mapped[str] = mapped_column(String(300))
    text: Mapped[str] = mapped_column(Text)
    html: Mapped[str] = mapped_column(Text)
    # queued (waiting for a worker), sent (the SMTP server took it), outbox (written to the
    # instance folder: no SMTP server is set), failed (refused for good or given up on),
    # dropped (over a rate limit: never sent)
    status: Mapped[str] = mapped_column(String(20), default="queued", index=True)
    has_link: Mapped[bool] = mapped_column(Boolean, default=False)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str | None] = mapped_column(String(2000))
    # A notice's one-click unsubscribe URL (its List-Unsubscribe header).
    unsubscribe: Mapped[str | None] = mapped_column(String(500))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now, index=True)
    sent_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class MailAttempt(Base):
    __tablename__ = "mail_attempts"

    id: Mapped[int] = mapped_column(primary_key=True)
    mail_id: Mapped[int] = mapped_column(ForeignKey("mails.id", ondelete="CASCADE"), index=True)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)
    ok: Mapped[bool] = mapped_column(Boolean)
    error: Mapped[str | None] = mapped_column(String(2000))
    duration_ms: Mapped[int | None] = mapped_column(Integer)


class MailOnce(Base):
    """Something told once only, whatever mail told it: a grade's notice, one assignment's
    due-date reminder for one student (several may share one mail)."""

    __tablename__ = "mail_once"

    key: Mapped[str] = mapped_column(String(200), primary_key=True)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)
