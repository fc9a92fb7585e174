"""Taking a submission or a practice run under an assignment's rules, and where a student
stands: attempts used and left, the score that counts, why a submission now would be
refused, and whether the hidden tests' results are held from them."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from grader import submissions
from grader.accounts.models import User
from grader.catalog.models import Exercise
from grader.courses import rules as course_rules
from grader.courses import starts
from grader.courses.assignments import extension_of, override_of, require_member, rules_of
from grader.courses.fields import CourseError
from grader.courses.models import STAFF_ROLES, Assignment, CourseMember, Extension, MemberRole, ScoreOverride
from grader.courses.rules import Attempt, Counted, Refusal, Rules
from grader.courses.times import aware
from grader.db import now
from grader.submissions import practice as practice_runs
from grader.submissions.models import PracticeRun, Submission, SubmissionStatus


COUNTED_STATUSES = (SubmissionStatus.QUEUED, SubmissionStatus.RUNNING, SubmissionStatus.GRADED)


def _attempts(session: Session, assignment: Assignment, user_id: int) -> list[Submission]:
    """The student's attempts: every submission but those the grader failed to grade
    (a failure of ours never costs an attempt)."""
    return list(session.scalars(select(Submission).where(
        Submission.assignment_id == assignment.id, Submission.user_id == user_id,
        Submission.status.in_(COUNTED_STATUSES)).order_by(Submission.created_at)))


def submit(session: Session, *, user: User, assignment: Assignment, source) -> Submission:
    """A submission to the assignment, if its rules accept one from ``user`` now;
    SubmissionError with the refusal's code (and ``reopens_at``) where they do not. A
    timed assignment's first submission by a student who never pressed its start button
    starts their clock (rolled back with the transaction if the submission is refused)."""
    submissions.check_source(source)  # first: a source that does not parse spends no attempt
    try:
        require_member(session, assignment, user)
        rules = _rules(session, assignment, user.id)
        made = _attempts(session, assignment, user.id)
        moment = now()
        if rules.timed and rules.started_at is None:
            rules = rules.started(starts.start(session, assignment, user, at=moment))
        course_rules.may_submit(rules, moment, len(made), aware(made[-1].created_at) if made else None)
    except (CourseError, Refusal) as refusal:  # to the ways in, a submission refused, details and all
        raise submissions.SubmissionError(refusal.code, refusal.message, **refusal.details) from None
    return submissions.create(session, user=user, exercise_slug=assignment.exercise_slug, source=source,
                              assignment_id=assignment.id, version=assignment.exercise_version)


def practice(session: Session, *, user: User, assignment: Assignment, source) -> PracticeRun:
    """A practice run for the assignment, by one of its course's members: the visible
    tests of the version it pinned, at any time, counted for nothing (no attempt used).
    On a timed assignment while it is open, only within the student's own time: the first
    run starts their clock as a first submission does, so that practice is no way around it."""
    submissions.check_source(source)  # first, as submit()
    try:
        require_member(session, assignment, user)
        if assignment.time_limit_minutes is not None:
            _practice_in_time(session, assignment, user)
    except (CourseError, Refusal) as refusal:
        raise submissions.SubmissionError(refusal.code, refusal.message, **refusal.details) from None
    return practice_runs.start(session, user=user, exercise_slug=assignment.exercise_slug, source=source,
                               assignment_id=assignment.id, version=assignment.exercise_version)


def _rules(session: Session, assignment: Assignment, user_id: int) -> Rules:
    """The student's own rules: their extension, and on a timed assignment their start."""
    began = starts.started_at(session, assignment, user_id) if assignment.time_limit_minutes is not None else None
    return rules_of(assignment, extension_of(session, assignment, user_id), began)


def _practice_in_time(session: Session, assignment: Assignment, user: User) -> None:
    rules, moment = _rules(session, assignment, user.id), now()
    if not course_rules.is_open(rules, moment):
        return  # outside the assignment's window no one's clock runs: practice as on any assignment
    if rules.started_at is None:
        starts.start(session, assignment, user, at=moment)
    else:
        course_rules.within_time(rules, moment)


@dataclass
class Standing:
    """Where one student stands on one assignment."""

    rules: Rules
    extension: Extension | None
    override: ScoreOverride | None
    attempts_used: int
    counted: Counted
    refusal: Refusal | None       # why a submission now would be refused (None: it would be taken)
    held_until: datetime | None = None  # the hidden results (and what counts) held from the student until
    late_by: timedelta | None = None    # how late a submission made now would be (None: on time)
    penalty_now: float = 0.0            # the percentage a submission made now would lose

    @property
    def attempts_left(self) -> int | None:
        return None if self.rules.attempts is None else max(0, self.rules.attempts - self.attempts_used)

    @property
    def not_started(self) -> bool:
        """A timed assignment whose clock the student has not started."""
        return self.rules.timed and self.rules.started_at is None

    @property
    def ends_at(self) -> datetime | None:
        """The student's own deadline on a timed assignment they started; else None."""
        return self.rules.ends_at if self.rules.timed and self.rules.started_at is not None else None


def counted(rules: Rules, graded: list[Submission], override: ScoreOverride | None) -> Counted:
    if override is not None:
        best = course_rules.counting(rules, [_attempt(s) for s in graded])
        return Counted(score=override.score, max_score=best.max_score, how="override", of=best.of)
    return course_rules.counting(rules, [_attempt(s) for s in graded])


def _attempt(row: Submission) -> Attempt:
    return Attempt(row.id, aware(row.created_at), row.score or 0.0, row.max_score or 0.0)


def standing(session: Session, assignment: Assignment, user: User) -> Standing:
    extension = extension_of(session, assignment, user.id)
    override = override_of(session, assignment, user.id)
    rules = _rules(session, assignment, user.id)
    made = _attempts(session, assignment, user.id)
    graded = [s for s in made if s.status == SubmissionStatus.GRADED]
    refusal, moment = None, now()  # one moment for every answer below
    try:
        course_rules.may_submit(rules, moment, len(made), aware(made[-1].created_at) if made else None)
    except Refusal as exc:
        refusal = exc
    late_by = moment - rules.due_at if moment > rules.due_at else None
    counts = counted(rules, graded, override)
    if counts.max_score is None and override is not None:  # set by hand with nothing graded: out of the exercise's
        exercise = session.get(Exercise, assignment.exercise_slug)
        counts = replace(counts, max_score=exercise.max_score if exercise is not None else None)
    return Standing(rules, extension, override, len(made), counts, refusal,
                    _held_until(rules, moment), late_by, course_rules.late_penalty(rules, moment))


def release_of(session: Session, assignment: Assignment, user_id: int) -> datetime | None:
    """When the hidden tests' results of the student's work on ``assignment`` are released
    to them (their own due date, an extension's included), while that is still ahead; None
    once released or never held. Every surface asks this: pages, API, LMS passback, notes."""
    return _held_until(rules_of(assignment, extension_of(session, assignment, user_id)), now())


def _held_until(rules: Rules, moment: datetime) -> datetime | None:
    return None if course_rules.feedback_released(rules, moment) else rules.due_at


def feedback_held_until(session: Session, row: Submission, viewer_id: int) -> datetime | None:
    """When the hidden tests' results of ``row`` are shown to its student, if they are held
    from ``viewer_id`` now (an assignment that releases them after its due date); else None.
    Staff of the course see everything. The student's own work on the free catalogue is held
    too while an assignment of theirs on the same exercise holds its results: the same
    source sent there would otherwise undo the hold."""
    if row.user_id != viewer_id:
        return None
    if row.assignment_id is None:
        return exercise_held_until(session, row.exercise_slug, row.user_id)
    assignment = session.get(Assignment, row.assignment_id)
    until = release_of(session, assignment, row.user_id)
    if until is None:
        return None
    staff = session.scalar(select(CourseMember.id).where(
        CourseMember.course_id == assignment.course_id, CourseMember.user_id == viewer_id,
        CourseMember.role.in_(STAFF_ROLES)))
    return None if staff is not None else until


def exercise_held_until(session: Session, slug: str, user_id: int) -> datetime | None:
    """Until when the hidden results of ``slug`` are held from the student by assignments of
    the courses they are a student of (the latest release among them); None: held by none."""
    held = [release_of(session, assignment, user_id) for assignment in session.scalars(
        select(Assignment).join(CourseMember, CourseMember.course_id == Assignment.course_id).where(
            Assignment.exercise_slug == slug, CourseMember.user_id == user_id,
            CourseMember.role == MemberRole.STUDENT, Assignment.feedback != "immediate"))]
    return max((until for until in held if until is not None), default=None)
