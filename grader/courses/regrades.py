"""Regrading an assignment after its exercise changed (a test fixed, a version published):
every graded source is graded again against the exercise's current version, as a new grade
beside the old one, on a queue the workers take only when no live submission waits. Staff
then read the diff (per student the score that counts before and after, and which tests'
verdicts changed) and publish it (the new grades count from then on; LMS line items and
webhooks hear of it) or discard it. The database is the source of truth: a regrade
survives worker and Redis restarts as grades do (courses/tasks.py sweeps what got stuck).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from grader.accounts.models import User
from grader.catalog.models import Exercise
from grader.courses import notices
from grader.courses.fields import CourseError
from grader.courses.counting import counted, release_of
from grader.courses.assignments import extension_of, override_of, rules_of
from grader.courses.models import Assignment, Regrade, RegradeGrade, RegradeStatus
from grader.courses.rules import Counted
from grader import db
from grader.db import now
from grader import metrics
from grader.submissions.models import Submission, SubmissionStatus
from grader.tasks import NOTIFY_QUEUE, queue_for, send_task

REGRADE_TASK = "grader.regrade_one"
PUBLISHED_TASK = "grader.regrade_published"
QUEUE_DEADLINE = timedelta(minutes=30)  # regrades wait behind live work: a longer grace than a submission's


def regrade_queue(device: str) -> str:
    """The low-priority twin of a device's queue: workers drain ``cpu`` before ``cpu-regrade``."""
    return queue_for(device) + "-regrade"


def start(session: Session, assignment: Assignment, *, by: str) -> Regrade:
    """A regrade of every graded source of the assignment against the exercise's current
    version (the caller commits, then calls :func:`send`)."""
    exercise = session.get(Exercise, assignment.exercise_slug)
    if exercise is None or not exercise.published:
        raise CourseError("invalid_regrade", f"{assignment.exercise_slug} is not published any more")
    if session.scalar(select(Regrade.id).where(Regrade.assignment_id == assignment.id,
                                               Regrade.status == RegradeStatus.RUNNING)) is not None:
        raise CourseError("invalid_regrade", "a regrade of this assignment is running already")
    sources = session.scalars(select(Submission).where(Submission.assignment_id == assignment.id,
                                                       Submission.status == SubmissionStatus.GRADED)).all()
    if not sources:
        raise CourseError("invalid_regrade", "this assignment has no graded submission to regrade")
    regrade = Regrade(assignment_id=assignment.id, version=exercise.version, status=RegradeStatus.RUNNING,
                      requested_by=by[:200])
    session.add(regrade)
    session.flush()
    for row in sources:
        session.add(RegradeGrade(regrade_id=regrade.id, submission_id=row.id, status="queued", attempts=0,
                                 deadline=now() + QUEUE_DEADLINE, old_version=row.exercise_version,
                                 old_score=row.score, old_max_score=row.max_score, old_report=row.report))
    session.flush()
    return regrade


def start_across(session: Session, assignments: list[Assignment], *, by: str
                 ) -> tuple[list[Regrade], list[tuple[Assignment, str]]]:
    """A regrade of each of these assignments (an exercise's, in the courses the caller
    runs), after a test of the exercise was fixed: one regrade per assignment, each
    published or discarded on its own. An assignment with nothing to regrade, or with a
    regrade running, is skipped with the reason."""
    started, skipped = [], []
    for assignment in assignments:
        try:
            started.append(start(session, assignment, by=by))
        except CourseError as exc:  # raised before anything of it was added
            skipped.append((assignment, exc.message))
    return started, skipped


def start_for(session: Session, *, assignment_id: int | None = None, slug: str | None = None, by: str
              ) -> tuple[list[Regrade], list[tuple[Assignment, str]]]:
    """A regrade of the assignment ``assignment_id``, or of each assignment of the exercise
    ``slug`` (skipping, with the reason, those :func:`start_across` skips); the caller
    commits, then calls :func:`send`. CourseError if there is no such assignment, or if the
    one assignment cannot be regraded."""
    if slug is not None:
        placed = session.scalars(select(Assignment).where(Assignment.exercise_slug == slug)
                                 .order_by(Assignment.id)).all()
        if not placed:
            raise CourseError("assignment_not_found", f"no assignment is of {slug!r}")
        return start_across(session, placed, by=by)
    assignment = session.get(Assignment, assignment_id) if 0 < assignment_id < 2**31 else None
    if assignment is None:
        raise CourseError("assignment_not_found", f"there is no assignment {assignment_id}")
    return [start(session, assignment, by=by)], []


def send(session: Session, regrade: Regrade) -> int:
    """Enqueue the regrade's pending grades (after the commit that made them)."""
    device = session.get(Exercise, session.get(Assignment, regrade.assignment_id).exercise_slug).device
    pending = session.scalars(select(RegradeGrade.id).where(RegradeGrade.regrade_id == regrade.id,
                                                            RegradeGrade.status == "queued")).all()
    for grade_id in pending:
        send_task(REGRADE_TASK, [grade_id], queue=regrade_queue(device))
    metrics.REGRADES.labels("started").inc()
    metrics.REGRADE_GRADES.labels("queued").inc(len(pending))
    return len(pending)


def progress(session: Session, regrade: Regrade) -> tuple[int, int]:
    grades = session.scalars(select(RegradeGrade.status).where(RegradeGrade.regrade_id == regrade.id)).all()
    return sum(status in ("graded", "failed") for status in grades), len(grades)


@dataclass
class TestChange:
    submission_id: str
    test: str
    was: bool      # passed before
    now: bool      # passes after


@dataclass
class StudentChange:
    user: User
    before: Counted
    after: Counted
    tests: list[TestChange] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.before.score != self.after.score or bool(self.tests)


def diff(session: Session, regrade: Regrade) -> list[StudentChange]:
    """Per student whose sources were regraded: the score that counts with the old grades
    and with the new ones, and each test whose verdict changed."""
    assignment = session.get(Assignment, regrade.assignment_id)
    grades = {g.submission_id: g for g in session.scalars(select(RegradeGrade).where(
        RegradeGrade.regrade_id == regrade.id))}
    rows = session.scalars(select(Submission).where(Submission.id.in_(list(grades)))
                           .order_by(Submission.created_at)).all()
    by_student: dict[int, list[Submission]] = {}
    for row in rows:
        by_student.setdefault(row.user_id, []).append(row)
    changes = []
    for user_id, subs in by_student.items():
        rules = rules_of(assignment, extension_of(session, assignment, user_id))
        override = override_of(session, assignment, user_id)
        old = [_as_graded(s, grades[s.id].old_score, grades[s.id].old_max_score) for s in subs]
        new = [_as_graded(s, *_new_score(grades[s.id])) for s in subs]
        change = StudentChange(session.get(User, user_id), counted(rules, old, override), counted(rules, new, override))
        for s in subs:
            change.tests += _verdict_changes(s.id, grades[s.id].old_report, grades[s.id].report)
        changes.append(change)
    return sorted(changes, key=lambda c: (not c.changed, c.user.name or "", c.user.id))


def _new_score(grade: RegradeGrade) -> tuple[float | None, float | None]:
    # A source the grader could not grade again keeps its grade.
    return (grade.score, grade.max_score) if grade.status == "graded" else (grade.old_score, grade.old_max_score)


def _as_graded(row: Submission, score, max_score) -> Submission:
    """A detached copy of the submission with another grade, for counting."""
    return Submission(id=row.id, user_id=row.user_id, created_at=row.created_at, score=score, max_score=max_score,
                      status=SubmissionStatus.GRADED)


def _verdict_changes(submission_id: str, before: dict | None, after: dict | None) -> list[TestChange]:
    if not before or not after:
        return []
    was = {t["id"]: t["passed"] for t in before.get("tests", [])}
    changes = []
    for test in after.get("tests", []):
        if test["id"] in was and was[test["id"]] != test["passed"]:
            changes.append(TestChange(submission_id, test.get("name") or test["id"], was[test["id"]], test["passed"]))
        elif test["id"] not in was:
            changes.append(TestChange(submission_id, test.get("name") or test["id"], False, test["passed"]))
    return changes


def publish(session: Session, regrade: Regrade) -> list[str]:
    """The new grades count from now on, and the assignment grades against the regrade's
    version. Returns one submission per affected student, to tell the LMS and webhooks."""
    if regrade.status != RegradeStatus.READY:
        raise CourseError("invalid_regrade", f"only a finished regrade can be published; this one is {regrade.status}")
    assignment = session.get(Assignment, regrade.assignment_id)
    notices.regraded(session, assignment, diff(session, regrade))  # mailed once this commits
    notify: dict[int, str] = {}
    for grade in session.scalars(select(RegradeGrade).where(RegradeGrade.regrade_id == regrade.id,
                                                            RegradeGrade.status == "graded")):
        row = session.get(Submission, grade.submission_id, with_for_update=True)
        if (row.score, row.report) != (grade.score, grade.report):
            notify[row.user_id] = row.id
        row.score, row.max_score, row.report = grade.score, grade.max_score, grade.report
        row.exercise_version = regrade.version
    assignment.exercise_version = regrade.version
    regrade.status, regrade.decided_at = RegradeStatus.PUBLISHED, now()
    metrics.REGRADES.labels("published").inc()
    return list(notify.values())


def announce(submission_ids: list[str]) -> None:
    """After a publish has committed: each affected student's LMS line items and webhooks
    hear of the new grade (a worker's task, as after any grade)."""
    if submission_ids:
        send_task(PUBLISHED_TASK, [submission_ids], queue=NOTIFY_QUEUE)


class StillRunning(TimeoutError):
    """A regrade still running when its caller stopped waiting: ``done`` of ``total`` sources graded again."""

    def __init__(self, regrade_id: int, done: int, total: int):
        super().__init__(f"regrade {regrade_id} is still running ({done} of {total})")
        self.regrade_id, self.done, self.total = regrade_id, done, total


def wait(regrade_id: int, timeout: float, *, every: float = 2) -> None:
    """Wait, looking every ``every`` seconds, until the regrade runs no more; StillRunning
    once ``timeout`` seconds have passed."""
    deadline = time.monotonic() + timeout
    while True:
        with db.transaction() as session:
            regrade = session.get(Regrade, regrade_id)
            done, total = progress(session, regrade)
            if regrade.status != RegradeStatus.RUNNING:
                return
        if time.monotonic() > deadline:
            raise StillRunning(regrade_id, done, total)
        time.sleep(every)


def publish_finished(regrade_id: int) -> list[StudentChange]:
    """Publish a finished regrade, in a transaction of its own, then announce the new
    grades. Returns what it changed, as :func:`diff`."""
    with db.transaction() as session:
        regrade = session.get(Regrade, regrade_id)
        changes = diff(session, regrade)
        announced = publish(session, regrade)
    announce(announced)
    return changes


def discard(session: Session, regrade: Regrade) -> None:
    if regrade.status in (RegradeStatus.PUBLISHED, RegradeStatus.DISCARDED):
        raise CourseError("invalid_regrade", f"this regrade is {regrade.status} already")
    regrade.status, regrade.decided_at = RegradeStatus.DISCARDED, now()
    metrics.REGRADES.labels("discarded").inc()


def notes_for(session: Session, assignment: Assignment, user_id: int) -> list[tuple[Regrade, RegradeGrade | None]]:
    """The published regrades that changed this student's grades on the assignment, each
    with what it changed; while the student's hidden results are held (courses.release_of),
    each of their submissions a regrade regraded, with only that it was (None): the scores,
    or which ones changed, would tell them what is held."""
    rows = session.execute(select(Regrade, RegradeGrade).join(RegradeGrade, RegradeGrade.regrade_id == Regrade.id)
                           .join(Submission, Submission.id == RegradeGrade.submission_id)
                           .where(Regrade.assignment_id == assignment.id, Regrade.status == RegradeStatus.PUBLISHED,
                                  Submission.user_id == user_id, RegradeGrade.status == "graded")
                           .order_by(Regrade.decided_at)).all()
    if release_of(session, assignment, user_id) is not None:
        # Every regraded submission, changed or not: which ones changed would tell the score.
        return [(r, None) for r, _g in rows]
    return [(r, g) for r, g in rows if (g.old_score, g.old_max_score) != (g.score, g.max_score)]
