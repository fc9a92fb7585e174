"""Creating submissions and handing them to the workers.

Used by every way in (web form, REST API, LTI). It never imports the engine: a
submission is a row, committed first, then a task enqueued by name on the queue
its exercise's device picks.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from grader import source as source_rules
from grader.tasks import queue_for, send_task, workers_taking
from grader.accounts.models import Role, User
from grader.catalog import is_slug
from grader.refusals import Refused
from grader.catalog.models import Exercise
from grader.db import now
from grader import metrics
from grader.submissions.models import PENDING, Submission, SubmissionStatus
from grader.submissions.notebooks import Notebook

log = logging.getLogger(__name__)

GRADE_TASK = "grader.grade_submission"
# How long a queued or running submission may take before the sweeper sends it again.
QUEUE_DEADLINE = timedelta(minutes=10)


class SubmissionError(Refused):
    """A submission that cannot be accepted (a grader.refusals code, its message, details)."""


def check_source(source: str | bytes | Notebook) -> str:
    """The source as text with LF line endings (a notebook's: its code cells as plain
    Python, see grader.submissions.notebooks), or SubmissionError saying what is wrong
    with it. Every way in calls this before any rule is applied or anything stored, so a
    source that does not parse (``syntax_error``) costs nothing: no row, no attempt. Such
    an error carries ``where`` (line, column; a notebook's cell and cell_line) and ``reason``."""
    try:
        if isinstance(source, Notebook):
            return source.converted().source
        return source_rules.check(source)
    except source_rules.SourceError as exc:
        raise SubmissionError(exc.code, exc.message, where=exc.where, reason=exc.reason,
                              **{key: value for key, value in exc.details.items() if key.startswith("why")}) from None


def create(session: Session, *, user: User, exercise_slug: str, source: str | bytes | Notebook,
           assignment_id: int | None = None, version: int | None = None, course_id: int | None = None) -> Submission:
    """Add a queued submission to the session (the caller commits, then calls enqueue).
    Made to an assignment (grader.courses.counting.submit), it is graded against the
    ``version`` the assignment pinned; otherwise against the one published now. A
    notebook is stored as the Python graded, with the map of its lines to the cells."""
    text = check_source(source)
    exercise = published_exercise(session, exercise_slug)
    version = version or exercise.version
    submission = Submission(user=user, exercise_slug=exercise.slug, exercise_version=version,
                            assignment_id=assignment_id, course_id=course_id, source=text,
                            status=SubmissionStatus.QUEUED,
                            notebook=source.converted().cell_map() if isinstance(source, Notebook) else None,
                            progress_done=0, progress_total=known_total(session, exercise.slug, version),
                            attempts=0, deadline=now() + QUEUE_DEADLINE)
    session.add(submission)
    session.flush()
    return submission


def known_total(session: Session, slug: str, version: int, *, visible_only: bool = False) -> int:
    """How many tests a grade of this exercise version runs, as its latest grades showed
    (0 before the first): progress reads "0 / 8" from the start, not "0 / ?"."""
    reports = session.scalars(select(Submission.report).where(
        Submission.exercise_slug == slug, Submission.exercise_version == version,
        Submission.status == SubmissionStatus.GRADED).order_by(Submission.created_at.desc()).limit(5))
    counts = [sum(1 for t in (report or {}).get("tests") or [] if t.get("visible") or not visible_only)
              for report in reports]
    return max(counts, default=0)


def published_exercise(session: Session, slug: str) -> Exercise:
    """The published exercise ``slug``, or SubmissionError unknown_exercise."""
    # Only a well-formed slug reaches the database (PostgreSQL refuses NUL with an error).
    exercise = session.get(Exercise, slug) if is_slug(slug) else None
    if exercise is None or not exercise.published:
        raise SubmissionError("unknown_exercise", f"there is no exercise {str(slug)[:100]!r}")
    return exercise


def enqueue(submission_id: str, device: str, *, countdown: float = 0) -> None:
    """Send the grading task. Call only after the row's transaction committed: a worker
    must never look for a row that is not there yet."""
    send_task(GRADE_TASK, [submission_id], queue=queue_for(device), countdown=countdown or None)


def delayed(row: Submission) -> bool:
    """Whether a submission waiting for its grade waits because no worker that takes its
    queue is up (one was killed, or none was started): the pages say so at once, rather
    than a progress bar that stands still until the sweeper's deadline."""
    if row.status not in PENDING:
        return False
    device = row.exercise.device if row.exercise is not None else "cpu"
    return workers_taking(queue_for(device)) == 0


def send(submission_id: str, device: str, *, exercise: str = "", way: str = "web") -> None:
    """Hand a new submission to the workers, once the transaction that made it has
    committed (every way in calls this right after its commit, naming itself: web, lti,
    api). A broker that cannot be reached loses nothing: the row is queued with a deadline,
    and the sweeper sends it once the broker is back."""
    metrics.SUBMISSIONS_RECEIVED.labels(exercise, way).inc()
    try:
        enqueue(submission_id, device)
    except Exception:
        log.exception("submission %s stored but not enqueued; the sweeper will send it", submission_id)


def way_in(user: User) -> str:
    """How a signed-in user's web submission came: through an LMS launch (lti) or not (web)."""
    return "lti" if (user.external_id or "").startswith("lti:") else "web"


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


# ------------------------------------------------------------------ API users

def api_external_id(key_id: int, user: str) -> str:
    """What an API key's ``user`` value is stored as: in the key's own namespace, apart
    from LMS users ("lti:..." / "issuer|subject") and from every other key's users."""
    return f"api:{key_id}:{user}"


def api_user(session: Session, key_id: int, user: str, *, new_per_hour: int) -> User:
    """The user ``user`` of API key ``key_id``, made on first sight unless the key made
    ``new_per_hour`` users in the last hour already (SubmissionError too_many_new_users)."""
    external_id = api_external_id(key_id, user)
    if len(external_id) > 500 or any(ord(c) < 32 for c in user):
        raise SubmissionError("invalid_user", "the user id must be 1 to 480 printable characters")
    found = session.scalar(select(User).where(User.external_id == external_id))
    if found is not None:
        if found.api_key_id != key_id:  # an account that only looks like ours: never share it
            raise SubmissionError("invalid_user", "this user id cannot be used")
        return found
    recent = session.scalar(select(func.count()).select_from(User).where(
        User.api_key_id == key_id, User.created_at >= now() - timedelta(hours=1)))
    if recent >= new_per_hour:
        oldest = session.scalar(select(func.min(User.created_at)).where(
            User.api_key_id == key_id, User.created_at >= now() - timedelta(hours=1)))
        if oldest is not None and oldest.tzinfo is None:  # SQLite hands back naive UTC
            oldest = oldest.replace(tzinfo=now().tzinfo)
        error = SubmissionError("too_many_new_users", f"this API key made {recent} new users in the last "
                                                      f"hour; the limit is {new_per_hour}")
        wait = (oldest + timedelta(hours=1) - now()).total_seconds() if oldest is not None else 3600
        error.retry_after = max(1, int(wait) + 1)
        raise error
    made = User(external_id=external_id, name=user[:200], role="student", api_key_id=key_id)
    session.add(made)
    session.flush()
    return made


def shown_external_id(user: User) -> str | None:
    """A user's id as the outside system that named it knows it (the API client's own
    value, without the key's namespace)."""
    if user.api_key_id is not None and user.external_id:
        return user.external_id.removeprefix(f"api:{user.api_key_id}:")
    return user.external_id
