"""Creating submissions and handing them to the workers.

Used by every way in (web form, REST API, LTI). It never imports the engine: a
submission is a row, committed first, then a task enqueued by name on the queue
its exercise's device picks.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from grader import source as source_rules
from grader.tasks import queue_for, send_task
from grader.accounts.models import Role, User
from grader.catalog import is_slug
from grader.catalog.models import Exercise
from grader.db import now
from grader.submissions.models import Submission, SubmissionStatus

log = logging.getLogger(__name__)

GRADE_TASK = "grader.grade_submission"
# How long a queued or running submission may take before the sweeper sends it again.
QUEUE_DEADLINE = timedelta(minutes=10)


class SubmissionError(ValueError):
    """A submission that cannot be accepted; ``code`` is machine-readable."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code, self.message = code, message


def check_source(source: str | bytes) -> str:
    """The source as text, or SubmissionError saying what is wrong with it."""
    try:
        return source_rules.check(source)
    except source_rules.SourceError as exc:
        raise SubmissionError(exc.code, exc.message) from None


def create(session: Session, *, user: User, exercise_slug: str, source: str | bytes) -> Submission:
    """Add a queued submission to the session (the caller commits, then calls enqueue)."""
    text = check_source(source)
    # Only a well-formed slug reaches the database (PostgreSQL refuses NUL with an error).
    exercise = session.get(Exercise, exercise_slug) if is_slug(exercise_slug) else None
    if exercise is None or not exercise.published:
        raise SubmissionError("unknown_exercise", f"there is no exercise {str(exercise_slug)[:100]!r}")
    submission = Submission(user=user, exercise_slug=exercise.slug, exercise_version=exercise.version,
                            source=text, status=SubmissionStatus.QUEUED, progress_done=0, progress_total=0,
                            attempts=0, deadline=now() + QUEUE_DEADLINE)
    session.add(submission)
    session.flush()
    return submission


def enqueue(submission_id: str, device: str, *, countdown: float = 0) -> None:
    """Send the grading task. Call only after the row's transaction committed: a worker
    must never look for a row that is not there yet."""
    send_task(GRADE_TASK, [submission_id], queue=queue_for(device), countdown=countdown or None)


def send(submission_id: str, device: str) -> None:
    """Hand a new submission to the workers, once the transaction that made it has
    committed (every way in calls this right after its commit). A broker that cannot be
    reached loses nothing: the row is queued with a deadline, and the sweeper sends it
    once the broker is back."""
    try:
        enqueue(submission_id, device)
    except Exception:
        log.exception("submission %s stored but not enqueued; the sweeper will send it", submission_id)


def user_by_external_id(session: Session, external_id: str, *, name: str = "") -> User:
    """The user an outside system calls ``external_id``, made on first sight."""
    if not external_id or len(external_id) > 500 or any(ord(c) < 32 for c in external_id):
        raise SubmissionError("invalid_user", "the user id must be 1 to 500 printable characters")
    user = session.scalar(select(User).where(User.external_id == external_id))
    if user is None:
        user = User(external_id=external_id, name=name or external_id, role=Role.STUDENT)
        session.add(user)
        session.flush()
    return user
