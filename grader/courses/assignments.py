"""An assignment: an exercise placed in a course at a pinned version, with its due date
and rules, and what staff change for one student (an extension, a score set by hand).

Every function adds to the caller's session and raises CourseError before it changes
anything, so that nothing is half-stored.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from grader.accounts.models import User
from grader.catalog import is_slug
from grader.catalog.models import Exercise, Upload, UploadStatus
from grader.courses import exercises
from grader.courses import rules as course_rules
from grader.courses.fields import CourseError, choice, moment, number, text
from grader.courses.models import Assignment, Course, CourseMember, Extension, Revocation, ScoreOverride
from grader.courses.rules import Rules
from grader.courses.times import aware
from grader.db import now
from grader.tasks import NOTIFY_QUEUE, send_task

log = logging.getLogger(__name__)

MAX_TIME_LIMIT_MINUTES = 7 * 24 * 60  # a timed assignment gives each student at most a week


def create_assignment(session: Session, course: Course, *, exercise, due_at, title=None, opens_at=None,
                      late_until=None, late_policy=None, late_percent=None, late_cap=None, attempts=None,
                      cooldown_minutes=None, counts=None, feedback=None, version=None,
                      time_limit_minutes=None, by: User | None = None, key_id: int | None = None) -> Assignment:
    """An exercise placed in the course at its published version (or ``version``, one kept
    as an upload), with its due date and rules; every value checked first. The exercise is
    one its placer sees (grader.courses.exercises): ``by``, the staff member on the site,
    or ``key_id``, the API key; neither: the site's operator (the command line), who places
    any published exercise. A draft placed so is seen by the course's students through
    this assignment. ``time_limit_minutes``: each student's time from their own start
    (grader.courses.starts); None, untimed."""
    exercise_row = session.get(Exercise, exercise) if is_slug(exercise) else None
    if by is None and key_id is None:
        seen = exercise_row is not None and exercise_row.published
    else:
        seen = exercises.visible_to(session, exercise_row, by, key_id=key_id)
    if not seen:
        raise CourseError("unknown_exercise", f"there is no exercise {str(exercise)[:100]!r}")
    version = number(version, "the version", low=1, high=1e9, whole=True)
    if version is not None and version != exercise_row.version and session.scalar(select(Upload.id).where(
            Upload.slug == exercise_row.slug, Upload.version == version, Upload.status == UploadStatus.PUBLISHED)) is None:
        raise CourseError("invalid_assignment", f"version {version} of {exercise_row.slug} is not kept; "
                                                f"version {exercise_row.version} is published")
    due = moment(due_at, "the due date", required=True)
    opens, late = moment(opens_at, "the opening time"), moment(late_until, "the end of late submissions")
    if opens is not None and opens >= due:
        raise CourseError("invalid_assignment", "the assignment must open before it is due")
    if late is not None and late < due:
        raise CourseError("invalid_assignment", "late submissions must end after the due date, not before it")
    policy = choice(late_policy, "the late policy", course_rules.LATE_POLICIES, "none")
    percent = number(late_percent, "the late penalty", low=0, high=100) or 0.0
    if policy != "none" and not percent:
        raise CourseError("invalid_assignment", "a late policy other than none needs a penalty above 0 percent")
    assignment = Assignment(
        course_id=course.id, exercise_slug=exercise_row.slug, exercise_version=version or exercise_row.version,
        title=text(title, "the title", 500, required=False) or exercise_row.title.get("en", exercise_row.slug),
        opens_at=opens, due_at=due, late_until=late, late_policy=policy, late_percent=percent,
        late_cap=number(late_cap, "the late penalty's cap", low=0, high=100),
        attempts=number(attempts, "the number of attempts", low=1, high=10_000, whole=True),
        cooldown_seconds=60 * (number(cooldown_minutes, "the cool-down", low=0, high=60 * 24 * 7, whole=True) or 0),
        counts=choice(counts, "which attempt counts", course_rules.COUNTS, "best"),
        feedback=choice(feedback, "when hidden feedback is shown", course_rules.FEEDBACK, "immediate"),
        time_limit_minutes=time_limit(time_limit_minutes))
    session.add(assignment)
    session.flush()
    return assignment


def time_limit(value) -> int | None:
    """A time limit in whole minutes, 1 to a week; None (or empty): untimed."""
    return number(value, "the time limit in minutes", low=1, high=MAX_TIME_LIMIT_MINUTES, whole=True)


def rules_of(assignment: Assignment, extension: Extension | None = None, started_at=None) -> Rules:
    """The assignment's rules for one student: with their extension, and for a timed
    assignment when they started it (None: not yet)."""
    rules = Rules(due_at=aware(assignment.due_at), opens_at=assignment.opens_at and aware(assignment.opens_at),
                  late_until=assignment.late_until and aware(assignment.late_until),
                  late_policy=assignment.late_policy, late_percent=assignment.late_percent,
                  late_cap=assignment.late_cap, attempts=assignment.attempts,
                  cooldown=timedelta(seconds=assignment.cooldown_seconds), counts=assignment.counts,
                  feedback=assignment.feedback,
                  time_limit=timedelta(minutes=assignment.time_limit_minutes)
                  if assignment.time_limit_minutes is not None else None,
                  started_at=started_at and aware(started_at))
    if extension is not None:
        rules = rules.extended(extension.due_at and aware(extension.due_at), extension.extra_attempts,
                               extension.extra_minutes or 0)
    return rules


def require_member(session: Session, assignment: Assignment, user: User) -> None:
    if session.scalar(select(CourseMember.id).where(CourseMember.course_id == assignment.course_id,
                                                    CourseMember.user_id == user.id)) is None:
        raise CourseError("not_a_member", "this student is not a member of the assignment's course")


def extension_of(session: Session, assignment: Assignment, user_id: int) -> Extension | None:
    return session.scalar(select(Extension).where(Extension.assignment_id == assignment.id,
                                                  Extension.user_id == user_id))


def grant_extension(session: Session, assignment: Assignment, user: User, *, due_at=None, extra_attempts=None,
                    extra_minutes=None, reason, by: str) -> Extension:
    """A later due date, extra attempts and/or (on a timed assignment) extra minutes on the
    student's time limit, for one student, with the reason they see. A later due date
    never lengthens a timed assignment's limit: only extra minutes do."""
    require_member(session, assignment, user)
    due = moment(due_at, "the new due date")
    extra = number(extra_attempts, "the extra attempts", low=0, high=10_000, whole=True) or 0
    minutes = number(extra_minutes, "the extra minutes", low=0, high=MAX_TIME_LIMIT_MINUTES, whole=True) or 0
    reason = text(reason, "the reason", 2000)
    if minutes and assignment.time_limit_minutes is None:
        raise CourseError("invalid_extension", "extra minutes are for a timed assignment; this one has no time limit")
    if due is None and not extra and not minutes:
        raise CourseError("invalid_extension", "an extension gives a later due date, extra attempts, extra minutes "
                                               "(on a timed assignment), or some of these")
    if due is not None and due <= aware(assignment.due_at):
        raise CourseError("invalid_extension", "the new due date must be after the assignment's own")
    extension = extension_of(session, assignment, user.id) or Extension(assignment_id=assignment.id, user_id=user.id)
    extension.due_at, extension.extra_attempts, extension.reason, extension.granted_by = due, extra, reason, by[:200]
    extension.extra_minutes = minutes
    session.add(extension)
    session.flush()
    return extension


def list_extensions(session: Session, assignment: Assignment) -> list[tuple[Extension, User]]:
    """The assignment's extensions, each with its student, by the students' names."""
    return [(extension, user) for extension, user in session.execute(
        select(Extension, User).join(User, User.id == Extension.user_id)
        .where(Extension.assignment_id == assignment.id).order_by(User.name, User.id))]


def revoke_extension(session: Session, assignment: Assignment, user_id: int, *, by: str) -> None:
    """The student's extension taken back: their due date and attempts are the assignment's
    again, and what counts is counted under those (the caller commits, then announces
    the standing, as after a grant)."""
    extension = extension_of(session, assignment, user_id) if 0 < user_id < 2**31 else None
    if extension is None:
        raise CourseError("extension_not_found", f"student {user_id} has no extension on assignment {assignment.id}")
    session.add(Revocation(assignment_id=assignment.id, user_id=user_id, kind="extension", due_at=extension.due_at,
                           extra_attempts=extension.extra_attempts or 0, extra_minutes=extension.extra_minutes or 0,
                           reason=extension.reason or "", granted_by=extension.granted_by or "",
                           granted_at=extension.granted_at, revoked_by=by[:200], revoked_at=now()))
    session.delete(extension)
    session.flush()
    log.info("the extension of user %s on assignment %s revoked by %s", user_id, assignment.id, by[:200])


def override_of(session: Session, assignment: Assignment, user_id: int) -> ScoreOverride | None:
    return session.scalar(select(ScoreOverride).where(ScoreOverride.assignment_id == assignment.id,
                                                      ScoreOverride.user_id == user_id))


def set_override(session: Session, assignment: Assignment, user: User, *, score, reason, by: str) -> ScoreOverride:
    """A score set by hand, in place of the one the rules count; kept with who and when."""
    require_member(session, assignment, user)
    exercise = session.get(Exercise, assignment.exercise_slug)
    most = exercise.max_score if exercise is not None and exercise.max_score else 1e6
    score = number(score, "the score", low=0, high=most, optional=False)
    override = override_of(session, assignment, user.id) or ScoreOverride(assignment_id=assignment.id, user_id=user.id)
    override.score, override.reason, override.set_by = score, text(reason, "the reason", 2000), by[:200]
    session.add(override)
    session.flush()
    return override


def list_overrides(session: Session, assignment: Assignment) -> list[tuple[ScoreOverride, User]]:
    """The assignment's scores set by hand, each with its student, by the students' names."""
    return [(override, user) for override, user in session.execute(
        select(ScoreOverride, User).join(User, User.id == ScoreOverride.user_id)
        .where(ScoreOverride.assignment_id == assignment.id).order_by(User.name, User.id))]


def revoke_override(session: Session, assignment: Assignment, user_id: int, *, by: str) -> None:
    """The score set by hand taken back: the rules count the student's graded work again
    (the caller commits, then announces the standing, as after setting one)."""
    override = override_of(session, assignment, user_id) if 0 < user_id < 2**31 else None
    if override is None:
        raise CourseError("override_not_found", f"student {user_id} has no score set by hand on assignment "
                                                f"{assignment.id}")
    session.add(Revocation(assignment_id=assignment.id, user_id=user_id, kind="override", score=override.score,
                           extra_attempts=0, extra_minutes=0, reason=override.reason or "",
                           granted_by=override.set_by or "", granted_at=override.set_at, revoked_by=by[:200],
                           revoked_at=now()))
    session.delete(override)
    session.flush()
    log.info("the score set by hand for user %s on assignment %s revoked by %s", user_id, assignment.id, by[:200])


def list_revoked(session: Session, assignment: Assignment) -> list[tuple[Revocation, User]]:
    """The assignment's revoked extensions and scores set by hand, each with its student,
    the latest revoked first: the history that the live listings no longer show."""
    return [(revoked, user) for revoked, user in session.execute(
        select(Revocation, User).join(User, User.id == Revocation.user_id)
        .where(Revocation.assignment_id == assignment.id)
        .order_by(Revocation.revoked_at.desc(), Revocation.id.desc()))]


STANDING_TASK = "grader.standing_changed"


def announce_standing(assignment_id: int, user_id: int) -> None:
    """After an override or extension has been set, changed or revoked, and committed: the
    student's LMS line items get the score that counts now, and the student a notice (a
    worker's task; the change itself is stored either way)."""
    try:
        send_task(STANDING_TASK, [assignment_id, user_id, now().isoformat()], queue=NOTIFY_QUEUE)
    except Exception:
        log.exception("the LMS will not hear of assignment %s's new standing for user %s", assignment_id, user_id)


def course_of(session: Session, assignment: Assignment) -> Course:
    return session.get(Course, assignment.course_id)
