"""On a worker: grade a regrade's sources again; sweep what got stuck.

As with submissions (submissions/tasks.py), the database is the source of truth and a task
only moves a row forward (queued -> running -> graded), so a task delivered twice changes
nothing, and a grade lost with its worker is sent again by the sweeper. The grades go on the
``*-regrade`` queues, which a worker takes only when its live queue is empty.
"""

from __future__ import annotations

import logging
import time
from datetime import timedelta

from sqlalchemy import select, update

from grader import db
from grader.catalog import CatalogError
from grader.catalog.uploads import UploadError, bundle_at
from grader.courses import comments
from grader.courses import notices  # its listeners: the grade and standing notices a worker mails
from grader.courses.assignments import STANDING_TASK
from grader.courses.models import Regrade, RegradeGrade, RegradeStatus
from grader.courses.regrades import PUBLISHED_TASK, QUEUE_DEADLINE, REGRADE_TASK, regrade_queue
from grader.db import now
from grader.engine import SandboxUnavailable, grade
from grader.protocol.report import INFRASTRUCTURE
from grader import metrics
from grader.submissions.models import Submission
from grader.submissions.notify import after_grade, after_standing_change
from grader.tasks import GRADE_HARD_LIMIT, celery, send_task

log = logging.getLogger(__name__)

REMIND_TASK = "grader.courses.remind_due"
COMMENTS_TASK = "grader.courses.tell_comments"

MAX_ATTEMPTS = 3
PENDING = ("queued", "running")


@celery.task(name=REGRADE_TASK)
def regrade_one(grade_id: int) -> str:
    with db.transaction() as session:
        row = session.get(RegradeGrade, grade_id)
        if row is None or row.status not in PENDING:
            return "done" if row is not None else "missing"
        regrade = session.get(Regrade, row.regrade_id)
        if regrade.status != RegradeStatus.RUNNING:
            return "not running"  # discarded meanwhile
        claimed = session.execute(
            update(RegradeGrade).where(RegradeGrade.id == grade_id, RegradeGrade.attempts == row.attempts,
                                       RegradeGrade.status.in_(PENDING))
            .values(status="running", attempts=row.attempts + 1,
                    deadline=now() + timedelta(seconds=GRADE_HARD_LIMIT))
            .execution_options(synchronize_session=False))
        if claimed.rowcount != 1:
            return "claimed elsewhere"
        source = session.get(Submission, row.submission_id)
        slug, text, version, regrade_id = source.exercise_slug, source.source, regrade.version, regrade.id
        try:
            bundle = bundle_at(session, slug, version)
        except (CatalogError, UploadError) as exc:
            bundle, unreadable = None, str(exc)
    if bundle is None:
        return _failed(grade_id, "exercise_unloadable", f"the exercise cannot be loaded: {unreadable}")
    started = time.monotonic()
    try:
        report = grade(bundle, text)
    except SandboxUnavailable as exc:
        return _failed(grade_id, "sandbox_unavailable", str(exc))
    metrics.GRADE_DURATION.labels(slug).observe(time.monotonic() - started)
    if report.status in INFRASTRUCTURE:
        return _failed(grade_id, report.status, report.message or report.status)
    with db.transaction() as session:
        row = session.get(RegradeGrade, grade_id, with_for_update=True)
        if row.status == "running":
            row.status, row.finished_at, row.failure_reason = "graded", now(), None
            row.score, row.max_score, row.report = report.score, report.max_score, report.to_dict()
            metrics.REGRADE_GRADES.labels("graded").inc()
    _finish_if_done(regrade_id)
    return "graded"


def _failed(grade_id: int, kind: str, reason: str) -> str:
    """An infrastructure failure (``kind``, as submissions/tasks.py names them): sent again
    with a back-off, or given up on after the attempts (the source then keeps its old grade
    in the diff)."""
    metrics.SANDBOX_FAILURES.labels(str(kind)).inc()
    log.warning("could not regrade %s: %s", grade_id, reason)
    with db.transaction() as session:
        row = session.get(RegradeGrade, grade_id, with_for_update=True)
        row.failure_reason = reason[:2000]
        if row.attempts >= MAX_ATTEMPTS:
            row.status, row.finished_at, device = "failed", now(), None
        else:
            row.status, row.deadline = "queued", now() + QUEUE_DEADLINE
            device, attempts = _device(session, row), row.attempts
        regrade_id = row.regrade_id
    if device is None:
        _given_up()
        _finish_if_done(regrade_id)
        return "failed"
    metrics.RETRIES.labels("regrade").inc()
    send_task(REGRADE_TASK, [grade_id], queue=regrade_queue(device), countdown=5 * 2 ** attempts)
    return "retrying"


def _device(session, row: RegradeGrade) -> str:
    return session.get(Submission, row.submission_id).exercise.device


def _finish_if_done(regrade_id: int) -> None:
    with db.transaction() as session:
        regrade = session.get(Regrade, regrade_id, with_for_update=True)
        if regrade.status != RegradeStatus.RUNNING:
            return
        waiting = session.scalar(select(RegradeGrade.id).where(RegradeGrade.regrade_id == regrade_id,
                                                               RegradeGrade.status.in_(PENDING)).limit(1))
        if waiting is None:
            regrade.status = RegradeStatus.READY
            metrics.REGRADES.labels("ready").inc()


def _given_up() -> None:
    metrics.GIVE_UPS.labels("regrade").inc()
    metrics.REGRADE_GRADES.labels("failed").inc()


@celery.task(name="grader.sweep_regrades")
def sweep_regrades() -> int:
    """Send again the regrade grades queued or running past their deadline (a lost message,
    a worker killed); give up on those that used their attempts."""
    resent, finished = [], set()
    with db.transaction() as session:
        stuck = session.scalars(select(RegradeGrade).join(Regrade, Regrade.id == RegradeGrade.regrade_id).where(
            Regrade.status == RegradeStatus.RUNNING, RegradeGrade.status.in_(PENDING),
            RegradeGrade.deadline < now())).all()
        for row in stuck:
            if row.attempts >= MAX_ATTEMPTS:
                row.status, row.finished_at = "failed", now()
                row.failure_reason = row.failure_reason or "grading did not finish in time, repeatedly"
                finished.add(row.regrade_id)
                _given_up()
                continue
            row.status, row.deadline = "queued", now() + QUEUE_DEADLINE
            resent.append((row.id, _device(session, row)))
    for regrade_id in finished:
        _finish_if_done(regrade_id)
    metrics.RETRIES.labels("regrade").inc(len(resent))
    for grade_id, device in resent:
        send_task(REGRADE_TASK, [grade_id], queue=regrade_queue(device))
    return len(resent)


@celery.task(name=PUBLISHED_TASK)
def regrade_published(submission_ids: list[str]) -> int:
    """A published regrade changed these students' grades: their LMS line items get the
    score that counts now, and webhooks hear of it, as after a grade."""
    return sum(after_grade(submission_id) for submission_id in submission_ids)


@celery.task(name=REMIND_TASK)
def remind_due() -> int:
    """Students with an assignment due within a day and attempts left are reminded, once."""
    with db.transaction() as session:
        return notices.remind_due(session)


@celery.task(name=COMMENTS_TASK)
def tell_comments() -> int:
    """Students whose feedback was released since staff commented on it are told, once."""
    with db.transaction() as session:
        return comments.tell_released(session)


@celery.task(name=STANDING_TASK)
def standing_changed(assignment_id: int, user_id: int, at: str) -> int:
    """Staff set a score by hand or gave an extension: the integrations hear of the
    score that counts now."""
    return after_standing_change(assignment_id, user_id, at)
