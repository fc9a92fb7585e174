"""On a worker: grade a submission; re-enqueue what got stuck.

The database is the source of truth. A task only ever moves a row forward
(queued -> running -> graded), so running it twice changes nothing. A failure of
the grading infrastructure is never a score: the row goes back to the queue with
its reason, and after MAX_ATTEMPTS it is "failed", shown as "could not grade".
"""

from __future__ import annotations

import logging
from datetime import timedelta

from sqlalchemy import select, update

from grader import db
from grader.catalog import CatalogError
from grader.catalog.uploads import UploadError, bundle_at, bundle_for
from grader.db import now
from grader.engine import SandboxUnavailable, grade
from grader.engine.report import INFRASTRUCTURE
from grader.submissions import GRADE_TASK, QUEUE_DEADLINE, enqueue
from grader.submissions.models import FINISHED, PENDING, Submission, SubmissionStatus
from grader.submissions.notify import after_grade
from grader.tasks import GRADE_HARD_LIMIT, celery

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 3


@celery.task(name=GRADE_TASK, bind=True, max_retries=MAX_ATTEMPTS)
def grade_submission(self, submission_id: str) -> str:
    bundle = unreadable = None
    with db.transaction() as session:
        row = session.get(Submission, submission_id, with_for_update=True)
        if row is None:
            log.error("no submission %s", submission_id)
            return "missing"
        if row.status in FINISHED:
            return row.status  # already done: a redelivered task changes nothing
        gave_up = row.attempts >= MAX_ATTEMPTS
        if gave_up:
            row.status, row.finished_at = SubmissionStatus.FAILED, now()
            row.failure_reason = row.failure_reason or "grading was attempted too many times"
        else:
            # Claim the row only if nobody did since it was read: SELECT ... FOR UPDATE
            # locks nothing on SQLite, so two workers handed the same task at once are
            # told apart by the attempt count.
            claimed = session.execute(
                update(Submission).where(Submission.id == submission_id, Submission.attempts == row.attempts,
                                         Submission.status.in_(PENDING))
                .values(status=SubmissionStatus.RUNNING, attempts=row.attempts + 1, started_at=now(),
                        deadline=now() + timedelta(seconds=GRADE_HARD_LIMIT))
                .execution_options(synchronize_session=False))
            if claimed.rowcount != 1:
                return "claimed elsewhere"
            try:
                # An assignment's submission is graded against the version it pinned.
                bundle = (bundle_at(session, row.exercise_slug, row.exercise_version) if row.assignment_id
                          else bundle_for(session, row.exercise_slug))
            except (CatalogError, UploadError) as exc:
                unreadable = str(exc)
            source = row.source
    if gave_up:
        after_grade(submission_id)  # the client hears that it could not be graded
        return "failed"

    def progress(done: int, total: int) -> None:
        with db.transaction() as session:
            row = session.get(Submission, submission_id)
            if row is not None and row.status == SubmissionStatus.RUNNING:
                row.progress_done, row.progress_total = done, total

    if bundle is None:
        return _infrastructure_failure(self, submission_id, f"the exercise cannot be loaded: {unreadable}")
    try:
        report = grade(bundle, source, on_progress=progress)
    except SandboxUnavailable as exc:
        return _infrastructure_failure(self, submission_id, str(exc))
    if report.status in INFRASTRUCTURE:
        return _infrastructure_failure(self, submission_id, report.message or report.status)

    with db.transaction() as session:
        row = session.get(Submission, submission_id, with_for_update=True)
        if row.status == SubmissionStatus.GRADED:
            return row.status
        row.status, row.finished_at, row.failure_reason = SubmissionStatus.GRADED, now(), None
        row.exercise_version = report.version
        row.score, row.max_score, row.report = report.score, report.max_score, report.to_dict()
        row.progress_done = row.progress_total = len(report.tests)
    after_grade(submission_id)  # LMS score passback and webhooks: their own tasks, enqueued after the commit
    return "graded"


def _infrastructure_failure(task, submission_id: str, reason: str) -> str:
    log.warning("could not grade %s: %s", submission_id, reason)
    with db.transaction() as session:
        row = session.get(Submission, submission_id, with_for_update=True)
        row.failure_reason = reason[:2000]
        if row.attempts >= MAX_ATTEMPTS:
            row.status, row.finished_at = SubmissionStatus.FAILED, now()
            device = None
        else:
            row.status, row.deadline = SubmissionStatus.QUEUED, now() + QUEUE_DEADLINE
            device, attempts = row.exercise.device, row.attempts
    if device is None:
        after_grade(submission_id)  # the client hears that it could not be graded
        return "failed"
    enqueue(submission_id, device, countdown=5 * 2 ** attempts)  # back off, then again
    return "retrying"


@celery.task(name="grader.sweep_stuck")
def sweep_stuck() -> int:
    """Re-enqueue submissions queued or running past their deadline (a lost message, a
    worker killed without requeue); give up on those that used up their attempts."""
    resent, given_up = [], []
    with db.transaction() as session:
        stuck = session.scalars(select(Submission).where(
            Submission.status.in_(PENDING), Submission.deadline < now())).all()
        for row in stuck:
            if row.attempts >= MAX_ATTEMPTS:
                row.status, row.finished_at = SubmissionStatus.FAILED, now()
                row.failure_reason = row.failure_reason or "grading did not finish in time, repeatedly"
                given_up.append(row.id)
                continue
            row.status, row.deadline = SubmissionStatus.QUEUED, now() + QUEUE_DEADLINE
            resent.append((row.id, row.exercise.device))
    for submission_id in given_up:
        after_grade(submission_id)
    for submission_id, device in resent:
        enqueue(submission_id, device)
    return len(resent)
