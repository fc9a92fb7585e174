"""Creating submissions and handing them to the workers.

Used by every way in (web form, REST API, LTI). It never imports the engine: a
submission is a row, committed first, then a task enqueued by name on the queue
its exercise's device picks.
"""

from __future__ import annotations

import re
from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from grader.models import Exercise, Submission, User, now
from grader.settings import MAX_SOURCE_BYTES, settings

GRADE_TASK = "grader.grade_submission"
_SLUG = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")
# How long a queued or running submission may take before the sweeper sends it again.
QUEUE_DEADLINE = timedelta(minutes=10)


class SubmissionError(ValueError):
    """A submission that cannot be accepted; ``code`` is machine-readable."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code, self.message = code, message


def check_source(source: str | bytes) -> str:
    """The source as text, or SubmissionError saying what is wrong with it."""
    if isinstance(source, bytes):
        if len(source) > MAX_SOURCE_BYTES:
            raise SubmissionError("source_too_large", f"the source is {len(source)} bytes; "
                                                      f"the limit is {MAX_SOURCE_BYTES}")
        try:
            source = source.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SubmissionError("source_not_utf8", f"the source is not UTF-8 text (byte {exc.start})") from None
    if not isinstance(source, str):
        raise SubmissionError("source_invalid", "the source must be a string")
    if not source.strip():
        raise SubmissionError("source_empty", "the source is empty")
    try:
        size = len(source.encode("utf-8"))
    except UnicodeEncodeError as exc:  # a lone surrogate, as JSON's "\ud800" gives
        raise SubmissionError("source_not_utf8", f"the source is not UTF-8 text (character {exc.start})") from None
    if size > MAX_SOURCE_BYTES:
        raise SubmissionError("source_too_large", f"the source is {size} bytes; the limit is {MAX_SOURCE_BYTES}")
    if "\x00" in source:
        raise SubmissionError("source_invalid", "the source contains a NUL character")
    return source


def create(session: Session, *, user: User, exercise_slug: str, source: str | bytes) -> Submission:
    """Add a queued submission to the session (the caller commits, then calls enqueue)."""
    text = check_source(source)
    # Only a well-formed slug reaches the database (PostgreSQL refuses NUL with an error).
    well_formed = isinstance(exercise_slug, str) and _SLUG.fullmatch(exercise_slug)
    exercise = session.get(Exercise, exercise_slug) if well_formed else None
    if exercise is None or not exercise.published:
        raise SubmissionError("unknown_exercise", f"there is no exercise {str(exercise_slug)[:100]!r}")
    submission = Submission(user=user, exercise_slug=exercise.slug, exercise_version=exercise.version,
                            source=text, status="queued", progress_done=0, progress_total=0,
                            attempts=0, deadline=now() + QUEUE_DEADLINE)
    session.add(submission)
    session.flush()
    return submission


def queue_for(device: str) -> str:
    """cpu exercises go to the cpu queue, cuda ones to gpu; "any" to gpu only where the
    deployment has GPU workers."""
    if device == "cuda" or (device == "any" and settings().gpu_queue):
        return "gpu"
    return "cpu"


def enqueue(submission_id: str, device: str, *, countdown: float = 0) -> None:
    """Send the grading task. Call only after the row's transaction committed: a worker
    must never look for a row that is not there yet."""
    from worker.app import celery  # the Celery app only: it imports no engine

    celery.send_task(GRADE_TASK, args=[submission_id], queue=queue_for(device),
                     countdown=countdown or None)


def user_by_external_id(session: Session, external_id: str, *, name: str = "") -> User:
    """The user an outside system calls ``external_id``, made on first sight."""
    if not external_id or len(external_id) > 500 or any(ord(c) < 32 for c in external_id):
        raise SubmissionError("invalid_user", "the user id must be 1 to 500 printable characters")
    user = session.scalar(select(User).where(User.external_id == external_id))
    if user is None:
        user = User(external_id=external_id, name=name or external_id, role="student")
        session.add(user)
        session.flush()
    return user
