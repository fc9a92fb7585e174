"""The catalogue as the service stores it: published exercises, and the bundles
instructors upload (the zip itself, and what the check made of it)."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from sqlalchemy import JSON, Boolean, DateTime, Float, ForeignKey, Integer, LargeBinary, String, Text, true
from sqlalchemy.orm import Mapped, mapped_column

from grader.bundle import Bundle
from grader.db import Base, now


class Exercise(Base):
    """A published exercise: a bundle's metadata, at the version graded now.

    One published through an upload is a draft until released (grader.catalog.drafts):
    shown to its author and to the staff of the courses whose assignments place it, never
    listed in the catalogue. The catalogue folder's exercises are released when published."""

    __tablename__ = "exercises"

    slug: Mapped[str] = mapped_column(String(100), primary_key=True)
    version: Mapped[int] = mapped_column(Integer)
    title: Mapped[dict] = mapped_column(JSON)          # {"en": ..., "ko": ...}
    device: Mapped[str] = mapped_column(String(10))    # cpu, cuda or any
    max_score: Mapped[float] = mapped_column(Float, default=0.0)
    functions: Mapped[list] = mapped_column(JSON, default=list)
    published: Mapped[bool] = mapped_column(Boolean, default=True)
    # In the catalogue, for everyone; False: a draft (see grader.catalog.drafts).
    released: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())
    # The upload it is graded with; None: the catalogue folder on disk.
    upload_id: Mapped[int | None] = mapped_column(ForeignKey("uploads.id"))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now, onupdate=now)

    def publish(self, bundle: Bundle, max_score: float, *, upload_id: int | None = None) -> None:
        """Offer `bundle` under this slug from now on, worth `max_score`; `upload_id`: the
        upload it came from (None: the catalogue folder, which is released as it is
        published). A new exercise from an upload is a draft; a new version keeps the
        state of the one before it (a released exercise stays released)."""
        new = self.version is None
        self.version, self.title, self.device = bundle.version, dict(bundle.title), bundle.device
        self.functions, self.max_score, self.published = list(bundle.functions), max_score, True
        self.upload_id = upload_id
        if upload_id is None:
            self.released = True
        elif new:
            self.released = False


class UploadStatus(StrEnum):
    """checking -> published, or rejected (the check table or the error says why)."""

    CHECKING = "checking"
    PUBLISHED = "published"
    REJECTED = "rejected"


class Upload(Base):
    """A bundle an instructor uploaded as a zip: kept so that every worker grades with
    the same files, with what the check made of it."""

    __tablename__ = "uploads"

    id: Mapped[int] = mapped_column(primary_key=True)
    slug: Mapped[str] = mapped_column(String(100), index=True)
    version: Mapped[int] = mapped_column(Integer)
    device: Mapped[str] = mapped_column(String(10))
    archive: Mapped[bytes] = mapped_column(LargeBinary)
    sha256: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(20), default=UploadStatus.CHECKING)
    check_rows: Mapped[list | None] = mapped_column(JSON)  # catalog.check_table.CheckRow as dicts
    # What the check found worth a look that fails nothing (grader.authoring.warnings), as text.
    warnings: Mapped[list | None] = mapped_column(JSON)
    error: Mapped[str | None] = mapped_column(Text)
    uploaded_by: Mapped[int | None] = mapped_column(ForeignKey("users.id"))
    # The API key that sent it; None: the instructor page or the command line. An exercise
    # published through the API takes new versions from that key only.
    api_key_id: Mapped[int | None] = mapped_column(ForeignKey("api_keys.id", ondelete="SET NULL"), index=True)
    uploaded_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)
    checked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
