"""A submission: one student's source for one exercise, and what grading made of it."""

from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum

from sqlalchemy import JSON, DateTime, Float, ForeignKey, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column, relationship

from grader.accounts.models import User
from grader.catalog.models import Exercise
from grader.db import Base, now


class SubmissionStatus(StrEnum):
    """queued -> running -> graded; failed when the grading infrastructure gave up
    (never a zero score: the report is absent and the reason is shown)."""

    QUEUED = "queued"
    RUNNING = "running"
    GRADED = "graded"
    FAILED = "failed"


PENDING = (SubmissionStatus.QUEUED, SubmissionStatus.RUNNING)
FINISHED = (SubmissionStatus.GRADED, SubmissionStatus.FAILED)


class Submission(Base):
    __tablename__ = "submissions"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=lambda: uuid.uuid4().hex)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    exercise_slug: Mapped[str] = mapped_column(ForeignKey("exercises.slug"), index=True)
    exercise_version: Mapped[int] = mapped_column(Integer)  # the version it was graded against
    # The assignment it was made to (its course's rules decide what it counts for); None: practice.
    assignment_id: Mapped[int | None] = mapped_column(ForeignKey("assignments.id"), index=True)
    # Made with no assignment through an LMS course's link to the exercise: that course, whose
    # staff see it (grader.courses.access). None for all other work, the free catalogue's.
    course_id: Mapped[int | None] = mapped_column(ForeignKey("courses.id", ondelete="SET NULL"), index=True)
    source: Mapped[str] = mapped_column(Text)  # what was graded (a notebook's: its code cells as Python)
    # Set when it was submitted as a notebook: {"cells": [[cell, first line in source, lines], ...]}
    # (grader.submissions.notebooks), which reports use to name the cell of a line.
    notebook: Mapped[dict | None] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(20), default=SubmissionStatus.QUEUED, index=True)
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

    user: Mapped[User] = relationship()
    exercise: Mapped[Exercise] = relationship()


class PracticeRun(Base):
    """A practice run: a source run against the exercise's visible tests alone, for its
    student to see before submitting. Kept apart from submissions so that nothing that
    counts (best scores, attempts, the gradebook, LMS passback, webhooks, analytics) ever
    reads one. Never retried: one the workers could not run is "failed", run it again."""

    __tablename__ = "practice_runs"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=lambda: uuid.uuid4().hex)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    exercise_slug: Mapped[str] = mapped_column(ForeignKey("exercises.slug"))
    exercise_version: Mapped[int] = mapped_column(Integer)
    # Run for an assignment: against the version it pinned. It counts for nothing there either.
    assignment_id: Mapped[int | None] = mapped_column(ForeignKey("assignments.id"))
    source: Mapped[str] = mapped_column(Text)
    notebook: Mapped[dict | None] = mapped_column(JSON)  # as Submission.notebook
    status: Mapped[str] = mapped_column(String(20), default=SubmissionStatus.QUEUED)
    failure_reason: Mapped[str | None] = mapped_column(Text)
    progress_done: Mapped[int] = mapped_column(Integer, default=0)
    progress_total: Mapped[int] = mapped_column(Integer, default=0)
    score: Mapped[float | None] = mapped_column(Float)      # of the visible tests' points
    max_score: Mapped[float | None] = mapped_column(Float)
    report: Mapped[dict | None] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # Still queued or running past it, it is shown as failed (practice.shown_status).
    deadline: Mapped[datetime] = mapped_column(DateTime(timezone=True))

    user: Mapped[User] = relationship()
    exercise: Mapped[Exercise] = relationship()
