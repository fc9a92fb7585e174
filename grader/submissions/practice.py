"""Practice runs: a student's source run against the exercise's visible tests alone,
through the same queue and sandbox as a submission and reported the same way, counted
for nothing (see models.PracticeRun). The web page and the API start them here."""

from __future__ import annotations

import logging
from datetime import timedelta

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from grader.accounts.models import User
from grader.db import now
from grader.submissions import check_source, known_total, published_exercise
from grader.submissions.models import PENDING, PracticeRun, SubmissionStatus
from grader.submissions.notebooks import Notebook
from grader.tasks import queue_for, send_task

log = logging.getLogger(__name__)

PRACTICE_TASK = "grader.run_practice"
# A run still pending this long after it was made is shown as failed: it was lost (a
# worker died, the broker was down) and the student runs it again; nothing retries it.
RUN_DEADLINE = timedelta(minutes=10)
KEPT_PER_USER = 20  # a student's latest runs; older ones are deleted as new ones come


def start(session: Session, *, user: User, exercise_slug: str, source: str | bytes | Notebook,
          assignment_id: int | None = None, version: int | None = None) -> PracticeRun:
    """Add a queued practice run (the caller commits, then calls send). For an assignment,
    it runs against the ``version`` the assignment pinned; SubmissionError as create()."""
    text = check_source(source)
    exercise = published_exercise(session, exercise_slug)
    version = version or exercise.version
    run = PracticeRun(user=user, exercise_slug=exercise.slug, exercise_version=version,
                      assignment_id=assignment_id, source=text, status=SubmissionStatus.QUEUED,
                      notebook=source.converted().cell_map() if isinstance(source, Notebook) else None,
                      progress_done=0, progress_total=known_total(session, exercise.slug, version, visible_only=True),
                      deadline=now() + RUN_DEADLINE)
    session.add(run)
    session.flush()
    _forget_old(session, user, run)
    return run


def _forget_old(session: Session, user: User, new: PracticeRun) -> None:
    kept = select(PracticeRun.id).where(PracticeRun.user_id == user.id).order_by(
        PracticeRun.created_at.desc(), PracticeRun.id).limit(KEPT_PER_USER)
    session.execute(delete(PracticeRun).where(PracticeRun.user_id == user.id, PracticeRun.id != new.id,
                                              PracticeRun.id.not_in(kept))
                    .execution_options(synchronize_session=False))


def send(run_id: str, device: str) -> None:
    """Hand the run to the workers, after the commit that made it. If the broker cannot be
    reached the run is shown as failed at its deadline; the student runs it again."""
    try:
        send_task(PRACTICE_TASK, [run_id], queue=queue_for(device))
    except Exception:
        log.exception("practice run %s stored but not enqueued", run_id)


def shown_status(run: PracticeRun) -> str:
    """Its status as shown: one still pending past its deadline was lost, so failed."""
    deadline = run.deadline if run.deadline.tzinfo else run.deadline.replace(tzinfo=now().tzinfo)  # SQLite: naive
    if run.status in PENDING and deadline < now():
        return SubmissionStatus.FAILED
    return run.status
