"""What the service stores: users, exercises, submissions, API keys."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone

from sqlalchemy import JSON, Boolean, DateTime, Float, ForeignKey, Integer, LargeBinary, String, Text
from sqlalchemy.orm import Mapped, mapped_column, relationship

from grader.db import Base

# A local account's site role. Only "admin" has site-wide powers (uploading bundles, every
# submission, every registration); "instructor" may register an LMS it then owns. Rights in a
# course come from grader.courses (an LMS user's from its launches), never from this column.
ROLES = ("student", "instructor", "admin")
# queued -> running -> graded; "failed" when the grading infrastructure gave up
# (never a zero score: the report is absent and the reason is shown).
STATUSES = ("queued", "running", "graded", "failed")


def now() -> datetime:
    return datetime.now(timezone.utc)


class User(Base):
    __tablename__ = "users"

    id: Mapped[int] = mapped_column(primary_key=True)
    email: Mapped[str | None] = mapped_column(String(320), unique=True)
    name: Mapped[str] = mapped_column(String(200), default="")
    role: Mapped[str] = mapped_column(String(20), default="student")
    password_hash: Mapped[str | None] = mapped_column(String(300))
    # Who the user is elsewhere: an API client's user id, or an LMS's ("issuer|subject").
    external_id: Mapped[str | None] = mapped_column(String(500), unique=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)

    submissions: Mapped[list["Submission"]] = relationship(back_populates="user")


class Exercise(Base):
    """A published exercise: the catalogue bundle's metadata, at the version graded now."""

    __tablename__ = "exercises"

    slug: Mapped[str] = mapped_column(String(100), primary_key=True)
    version: Mapped[int] = mapped_column(Integer)
    title: Mapped[dict] = mapped_column(JSON)          # {"en": ..., "ko": ...}
    device: Mapped[str] = mapped_column(String(10))    # cpu, cuda or any
    max_score: Mapped[float] = mapped_column(Float, default=0.0)
    functions: Mapped[list] = mapped_column(JSON, default=list)
    published: Mapped[bool] = mapped_column(Boolean, default=True)
    # The uploaded bundle it is graded with; None: the catalogue folder on disk.
    bundle_id: Mapped[int | None] = mapped_column(ForeignKey("bundles.id"))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now, onupdate=now)

    def publish(self, bundle, max_score: float, *, bundle_id: int | None = None) -> None:
        """Offer `bundle` (a catalog.Exercise) under this slug from now on, worth `max_score`;
        `bundle_id`: the upload it came from (None: the catalogue folder)."""
        self.version, self.title, self.device = bundle.version, dict(bundle.title), bundle.device
        self.functions, self.max_score, self.published = list(bundle.functions), max_score, True
        self.bundle_id = bundle_id


# checking -> published, or rejected (the check table or the error says why)
BUNDLE_STATUSES = ("checking", "published", "rejected")


class Bundle(Base):
    """An exercise bundle an instructor uploaded: the zip itself, kept so that every
    worker grades with the same files, and what the catalogue's check made of it."""

    __tablename__ = "bundles"

    id: Mapped[int] = mapped_column(primary_key=True)
    slug: Mapped[str] = mapped_column(String(100), index=True)
    version: Mapped[int] = mapped_column(Integer)
    device: Mapped[str] = mapped_column(String(10))
    archive: Mapped[bytes] = mapped_column(LargeBinary)
    sha256: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(20), default="checking")
    check_rows: Mapped[list | None] = mapped_column(JSON)  # catalog.CheckRow as dicts
    error: Mapped[str | None] = mapped_column(Text)
    uploaded_by: Mapped[int | None] = mapped_column(ForeignKey("users.id"))
    uploaded_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)
    checked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class Submission(Base):
    __tablename__ = "submissions"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=lambda: uuid.uuid4().hex)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    exercise_slug: Mapped[str] = mapped_column(ForeignKey("exercises.slug"), index=True)
    exercise_version: Mapped[int] = mapped_column(Integer)  # the version it was graded against
    source: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(20), default="queued", index=True)
    failure_reason: Mapped[str | None] = mapped_column(Text)
    progress_done: Mapped[int] = mapped_column(Integer, default=0)
    progress_total: Mapped[int] = mapped_column(Integer, default=0)
    score: Mapped[float | None] = mapped_column(Float)
    max_score: Mapped[float | None] = mapped_column(Float)
    report: Mapped[dict | None] = mapped_column(JSON)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now, index=True)
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # When the current attempt should be over; the sweeper re-enqueues rows past it.
    deadline: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), index=True)

    user: Mapped[User] = relationship(back_populates="submissions")
    exercise: Mapped[Exercise] = relationship()


class ApiKey(Base):
    """A key for the REST API. Only its hash is stored; the prefix identifies it."""

    __tablename__ = "api_keys"

    id: Mapped[int] = mapped_column(primary_key=True)
    prefix: Mapped[str] = mapped_column(String(16), unique=True)
    key_hash: Mapped[str] = mapped_column(String(128))
    scopes: Mapped[list] = mapped_column(JSON, default=list)
    name: Mapped[str] = mapped_column(String(200), default="")
    created_by: Mapped[int | None] = mapped_column(ForeignKey("users.id"))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
