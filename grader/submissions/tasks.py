"""On a worker: grade a submission; re-enqueue what got stuck.

The database is the source of truth. A task only ever moves a row forward
(queued -> running -> graded), so running it twice changes nothing. A failure of
the grading infrastructure is never a score: the row goes back to the queue with
its reason, and after MAX_ATTEMPTS it is "failed", shown as "could not grade".
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import datetime, timedelta, timezone

from celery import signals
from sqlalchemy import select, update

from grader import db
from grader.catalog import CatalogError
from grader.catalog.uploads import UploadError, bundle_at, bundle_for
from grader.db import now
from grader.engine import SandboxUnavailable, grade
from grader.engine.grading import warm_up
from grader.inside import wire
from grader.protocol.report import INFRASTRUCTURE
from grader import logs, metrics
from grader.submissions import GRADE_TASK, QUEUE_DEADLINE, enqueue
from grader.submissions.models import FINISHED, PENDING, PracticeRun, Submission, SubmissionStatus
from grader.submissions.notify import after_grade
from grader.submissions.practice import PRACTICE_TASK
from grader.tasks import GRADE_HARD_LIMIT, celery, grading_on, orphans_of

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 3

# A grade's progress is for someone watching it, whose page asks every 0.3-2 s: it is
# written at most this often. Each write is a transaction on the grade's path, and with one
# per test a burst of submissions before a deadline queued the workers on the database's
# writer; a grade of a tenth of a second now writes none (its report's row says it all).
PROGRESS_EVERY_S = 0.25


def _now_and_then(write):
    """``write(done, total)``, passed on only once PROGRESS_EVERY_S has gone by since the
    grade began or since the last one passed on."""
    last = time.monotonic()

    def progress(done: int, total: int) -> None:
        nonlocal last
        if time.monotonic() - last >= PROGRESS_EVERY_S:
            write(done, total)
            last = time.monotonic()

    return progress


# Torch, loaded where the worker starts, before its pool forks: each pool process then
# shares the one copy of its modules rather than importing its own where it needs torch
# (the aliases of an exercise's blocked names; tensors it relays as wire.Values).
wire.load()


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
        slug = row.exercise_slug
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
            if row.attempts == 0:  # a new submission: how long it waited for a worker
                queue = (self.request.delivery_info or {}).get("routing_key") or "unknown"
                metrics.QUEUE_WAIT.labels(queue).observe(_seconds_since(row.created_at))
            try:
                # An assignment's submission is graded against the version it pinned.
                bundle = (bundle_at(session, row.exercise_slug, row.exercise_version) if row.assignment_id
                          else bundle_for(session, row.exercise_slug))
            except (CatalogError, UploadError) as exc:
                unreadable = str(exc)
            source = row.source
    if gave_up:
        _given_up(slug)
        after_grade(submission_id)  # the client hears that it could not be graded
        return "failed"

    @_now_and_then
    def progress(done: int, total: int) -> None:
        with db.transaction() as session:
            row = session.get(Submission, submission_id)
            if row is not None and row.status == SubmissionStatus.RUNNING:
                row.progress_done, row.progress_total = done, total

    # on every line logged from here; and Redis knows this worker grades it, should it die
    with logs.grading(submission_id, slug, self.request.hostname), grading_on(self.request.hostname, submission_id):
        if bundle is None:
            return _infrastructure_failure(self, submission_id, "exercise_unloadable",
                                           f"the exercise cannot be loaded: {unreadable}")
        started = time.monotonic()
        try:
            report = grade(bundle, source, on_progress=progress)
        except SandboxUnavailable as exc:
            return _infrastructure_failure(self, submission_id, "sandbox_unavailable", str(exc))
        took = time.monotonic() - started
        metrics.GRADE_DURATION.labels(slug).observe(took)
        if report.status in INFRASTRUCTURE:
            return _infrastructure_failure(self, submission_id, report.status, report.message or report.status)

        with db.transaction() as session:
            row = session.get(Submission, submission_id, with_for_update=True)
            if row.status == SubmissionStatus.GRADED:
                return row.status
            row.status, row.finished_at, row.failure_reason = SubmissionStatus.GRADED, now(), None
            row.exercise_version = report.version
            row.score, row.max_score, row.report = report.score, report.max_score, report.to_dict()
            row.progress_done = row.progress_total = len(report.tests)
        metrics.GRADES_FINISHED.labels(slug, report.status).inc()
        log.info("graded %s: %s, %s of %s points", submission_id, report.status, report.score, report.max_score,
                 extra={"duration_s": round(took, 3), "status": str(report.status)})
    after_grade(submission_id)  # LMS score passback and webhooks: their own tasks, enqueued after the commit
    return "graded"


def _seconds_since(moment: datetime) -> float:
    moment = moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)  # SQLite's are naive UTC
    return max(0.0, (now() - moment).total_seconds())


def _given_up(slug: str) -> None:
    metrics.GIVE_UPS.labels("grade").inc()
    metrics.GRADES_FINISHED.labels(slug, SubmissionStatus.FAILED).inc()


def _infrastructure_failure(task, submission_id: str, kind: str, reason: str) -> str:
    """``kind``: sandbox_unavailable, sandbox_error, internal_error or exercise_unloadable."""
    metrics.SANDBOX_FAILURES.labels(str(kind)).inc()
    log.warning("could not grade %s: %s", submission_id, reason)
    with db.transaction() as session:
        row = session.get(Submission, submission_id, with_for_update=True)
        row.failure_reason = reason[:2000]
        slug = row.exercise_slug
        if row.attempts >= MAX_ATTEMPTS:
            row.status, row.finished_at = SubmissionStatus.FAILED, now()
            device = None
        else:
            row.status, row.deadline = SubmissionStatus.QUEUED, now() + QUEUE_DEADLINE
            device, attempts = row.exercise.device, row.attempts
    if device is None:
        _given_up(slug)
        after_grade(submission_id)  # the client hears that it could not be graded
        return "failed"
    metrics.RETRIES.labels("grade").inc()
    enqueue(submission_id, device, countdown=5 * 2 ** attempts)  # back off, then again
    return "retrying"


def take_up_orphans(sender=None, **_kwargs) -> list[str]:
    """As a worker starts: the grades a worker of its name was running when it died (killed,
    out of memory) go back to the queue at once, rather than after the sweeper's deadline.
    Running twice changes nothing: a grade claims its row, and a graded row stays graded."""
    hostname = getattr(sender, "hostname", None)
    resent = []
    try:
        ids = orphans_of(hostname) if hostname else []
        if not ids:
            return []
        with db.transaction() as session:
            for row in session.scalars(select(Submission).where(Submission.id.in_(ids),
                                                                Submission.status == SubmissionStatus.RUNNING)):
                row.status, row.deadline = SubmissionStatus.QUEUED, now() + QUEUE_DEADLINE
                resent.append((row.id, row.exercise.device))
        for submission_id, device in resent:
            enqueue(submission_id, device)
        if resent:
            log.warning("took up %d grade(s) a worker named %s was running when it stopped", len(resent), hostname)
    except Exception:  # the sweeper remains
        log.exception("could not take up the grades a stopped worker was running")
    return [submission_id for submission_id, _ in resent]


signals.worker_ready.connect(take_up_orphans, weak=False)


def sandboxes_ahead(**_kwargs) -> threading.Thread:
    """In each process that will grade (a prefork child, or a solo worker itself), start its
    sandboxes while the worker finishes starting, for the queues it takes: the first grade
    after a start no longer waits the second or more each takes to import torch."""
    queues = set(celery.amqp.queues.consume_from or ())
    cpu, cuda = bool(queues & {"cpu", "cpu-regrade"}), bool(queues & {"gpu", "gpu-regrade"})
    thread = threading.Thread(target=warm_up, kwargs={"cpu": cpu or not cuda, "cuda": cuda},
                              name="grader-sandboxes-ahead", daemon=True)
    thread.start()
    return thread


signals.worker_process_init.connect(sandboxes_ahead, weak=False)


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
                _given_up(row.exercise_slug)
                continue
            row.status, row.deadline = SubmissionStatus.QUEUED, now() + QUEUE_DEADLINE
            resent.append((row.id, row.exercise.device))
    for submission_id in given_up:
        after_grade(submission_id)
    metrics.RETRIES.labels("grade").inc(len(resent))
    for submission_id, device in resent:
        enqueue(submission_id, device)
    return len(resent)


@celery.task(name=PRACTICE_TASK)
def run_practice(run_id: str) -> str:
    """Run a practice run's source against the visible tests alone. Never retried (a run
    the workers could not finish is failed: the student runs it again); never notifies
    anyone, as nothing of it counts."""
    with db.transaction() as session:
        claimed = session.execute(
            update(PracticeRun).where(PracticeRun.id == run_id, PracticeRun.status == SubmissionStatus.QUEUED,
                                      PracticeRun.deadline > now())
            .values(status=SubmissionStatus.RUNNING).execution_options(synchronize_session=False))
        if claimed.rowcount != 1:
            return "not queued"  # run already, lost past its deadline, or deleted
        row = session.get(PracticeRun, run_id)
        try:
            bundle = (bundle_at(session, row.exercise_slug, row.exercise_version) if row.assignment_id
                      else bundle_for(session, row.exercise_slug))
        except (CatalogError, UploadError) as exc:
            bundle, failure = None, f"the exercise cannot be loaded: {exc}"
        source = row.source

    @_now_and_then
    def progress(done: int, total: int) -> None:
        with db.transaction() as session:
            session.execute(update(PracticeRun).where(PracticeRun.id == run_id)
                            .values(progress_done=done, progress_total=total)
                            .execution_options(synchronize_session=False))

    report = None
    if bundle is not None:
        try:
            report = grade(bundle, source, on_progress=progress, visible_only=True)
            failure = report.message or report.status if report.status in INFRASTRUCTURE else None
        except SandboxUnavailable as exc:
            failure = str(exc)
    with db.transaction() as session:
        row = session.get(PracticeRun, run_id, with_for_update=True)
        if row is None:
            return "deleted"
        row.finished_at = now()
        if failure is not None:
            log.warning("could not run practice run %s: %s", run_id, failure)
            row.status, row.failure_reason = SubmissionStatus.FAILED, failure[:2000]
            return "failed"
        row.status, row.exercise_version = SubmissionStatus.GRADED, report.version
        row.score, row.max_score, row.report = report.score, report.max_score, report.to_dict()
        row.progress_done = row.progress_total = len(report.tests)
    return "graded"
