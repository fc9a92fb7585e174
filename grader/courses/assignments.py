"""Running a course: making it, filling it with members, setting assignments, granting
extensions and overrides, taking submissions under the rules, and the score that counts.

Every function adds to the caller's session and raises CourseError (with a code for the
API and a message for people) before it changes anything, so that nothing is half-stored.
"""

from __future__ import annotations

import csv
import io
import logging
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from grader import submissions
from grader.accounts.models import Role, User
from grader.catalog import is_slug
from grader.clock import as_utc
from grader.catalog.models import Exercise, Upload, UploadStatus
from grader.courses import rules as course_rules
from grader.courses.members import set_role
from grader.courses.models import MEMBER_ROLES, STAFF_ROLES, Assignment, Course, CourseMember, Extension, ScoreOverride
from grader.courses.rules import Attempt, Counted, Refusal, Rules
from grader.db import now
from grader.submissions import practice as practice_runs
from grader.submissions.models import PracticeRun, Submission, SubmissionStatus
from grader.tasks import NOTIFY_QUEUE, send_task

log = logging.getLogger(__name__)

MAX_ROSTER_LINES = 5000
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+$")


class CourseError(ValueError):
    """A course change that cannot be made; ``code`` is machine-readable."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code, self.message = code, message


def _text(value, what: str, limit: int, *, required: bool = True) -> str:
    if value is None:
        value = ""
    if not isinstance(value, str) or len(value) > limit or any(ord(c) < 32 for c in value):
        raise CourseError("invalid_course", f"{what} must be text of at most {limit} printable characters")
    if required and not value.strip():
        raise CourseError("invalid_course", f"{what} is required")
    return value.strip()


def zone(name: str | None) -> ZoneInfo:
    """A course's time zone (UTC where it has none)."""
    try:
        return ZoneInfo(name or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


def shown(moment: datetime | None, course: Course) -> str:
    """A time as the course reads it, always with its zone: 2026-12-10 23:59 KST (Asia/Seoul)."""
    if moment is None:
        return ""
    tz = zone(course.time_zone)
    local = _aware(moment).astimezone(tz)
    return f"{local:%Y-%m-%d %H:%M} {local.tzname()} ({tz.key})"


_aware = as_utc  # every time the service stores is UTC; SQLite hands it back naive


# ------------------------------------------------------------------ courses and members

def create_course(session: Session, *, title, code, time_zone=None, api_key_id: int | None = None,
                  instructor: User | None = None) -> Course:
    title, code = _text(title, "the title", 500), _text(code, "the code", 200)
    time_zone = _text(time_zone, "the time zone", 64, required=False) or "UTC"
    try:
        ZoneInfo(time_zone)
    except (ZoneInfoNotFoundError, ValueError):
        raise CourseError("invalid_course", f"{time_zone!r} is not a time zone; use an IANA name such as "
                                            "'Asia/Seoul' or 'Europe/Berlin'") from None
    course = Course(title=title, code=code, time_zone=time_zone, api_key_id=api_key_id)
    session.add(course)
    session.flush()
    if instructor is not None:
        set_role(session, course.id, instructor.id, "instructor")
    return course


def course_by_id(session: Session, course_id: int) -> Course:
    """The course with this id; CourseError if there is none."""
    course = session.get(Course, course_id) if 0 < course_id < 2**31 else None
    if course is None:
        raise CourseError("course_not_found", f"there is no course {course_id}")
    return course


def course_called(session: Session, code: str) -> Course:
    """The one course whose code is ``code``, or whose id it is; CourseError if there is
    none, or if several courses share the code (the id tells them apart)."""
    found = session.scalars(select(Course).where(or_(Course.code == code, Course.id == (
        int(code) if code.isdigit() and len(code) < 10 else -1)))).all()
    if not found:
        raise CourseError("course_not_found", f"no course {code!r}")
    if len(found) > 1:
        raise CourseError("ambiguous_course", f"{len(found)} courses are called {code!r}: give the id instead")
    return found[0]


def members(session: Session, course: Course) -> list[tuple[User, str]]:
    rows = session.execute(select(User, CourseMember.role).join(CourseMember, CourseMember.user_id == User.id)
                           .where(CourseMember.course_id == course.id).order_by(User.name, User.id)).all()
    return [(user, role) for user, role in rows]


def role_in(session: Session, course: Course, user: User) -> str | None:
    return session.scalar(select(CourseMember.role).where(CourseMember.course_id == course.id,
                                                          CourseMember.user_id == user.id))


@dataclass
class RosterResult:
    added: list[str] = field(default_factory=list)     # who became a member
    changed: list[str] = field(default_factory=list)   # members whose role changed
    new_accounts: list[str] = field(default_factory=list)  # accounts made for e-mails not seen before


def roster_rows(text: str) -> list[dict]:
    """The lines of a roster CSV (a first line naming its columns) as dicts."""
    try:
        return list(csv.DictReader(io.StringIO(text)))
    except csv.Error as exc:
        raise CourseError("invalid_roster", f"the roster is not CSV ({exc})") from None


def import_roster(session: Session, course: Course, rows: list[dict], *, find_user=None) -> RosterResult:
    """Members from roster lines with ``email``, ``name`` and ``role`` (student, ta or
    instructor; student where empty). Every line is checked before any is stored.
    ``find_user(identifier, name)`` names members another way (an API key's users, by a
    ``user`` column); by default a line's e-mail finds a local account, made without a
    password where there is none."""
    if not rows:
        raise CourseError("invalid_roster", "the roster has no members: its first line names the columns "
                                            "email,name,role and each line after it is one member")
    if len(rows) > MAX_ROSTER_LINES:
        raise CourseError("invalid_roster", f"the roster has {len(rows)} lines; the limit is {MAX_ROSTER_LINES}")
    key = "user" if find_user is not None else "email"
    if not all(isinstance(row, dict) and isinstance(row.get(key), str) for row in rows):
        raise CourseError("invalid_roster", f"every member of the roster needs a {key} (a CSV's first line names "
                                            f"the columns {key},name,role)")
    problems, wanted = [], []
    for number, row in enumerate(rows, start=2):
        who = row[key].strip()
        role, name = row.get("role") or "student", row.get("name") or ""
        if not isinstance(role, str) or not isinstance(name, str):
            problems.append(f"line {number}: the name and role must be text")
            continue
        role, name = role.strip().lower(), name.strip()
        if key == "email" and not _EMAIL.match(who):
            problems.append(f"line {number}: {who[:80]!r} is not an e-mail address")
        elif not who or len(who) > 200 or any(ord(c) < 32 for c in who + name):
            problems.append(f"line {number}: the {key} must be 1 to 200 printable characters")
        elif role not in MEMBER_ROLES:
            problems.append(f"line {number}: the role must be one of {', '.join(MEMBER_ROLES)}, not {role[:40]!r}")
        else:
            wanted.append((who, name[:200], role))
    if find_user is None:
        # An address typed by whoever made the account (through an invitation link) proves
        # nothing: naming it on a roster must not hand that account this course.
        claimed = set(session.scalars(select(func.lower(User.email)).where(
            User.self_registered.is_(True), func.lower(User.email).in_([who.lower() for who, _n, _r in wanted]))))
        problems += [f"{who} has an account its owner made through an invitation link, with an address "
                     f"never confirmed: invite them with a link instead" for who, _n, _r in wanted
                     if who.lower() in claimed]
    if problems:
        raise CourseError("invalid_roster", "nothing was imported: " + "; ".join(problems[:20])
                          + (f"; and {len(problems) - 20} more" if len(problems) > 20 else ""))
    result = RosterResult()
    for who, name, role in wanted:
        if find_user is not None:
            user = find_user(who, name)
        else:
            user = session.scalar(select(User).where(func.lower(User.email) == who.lower()))
            if user is None:
                user = User(email=who, name=name or who, role=Role.STUDENT)
                session.add(user)
                session.flush()
                result.new_accounts.append(who)
        before = role_in(session, course, user)
        set_role(session, course.id, user.id, role)
        (result.added if before is None else result.changed if before != role else []).append(who)
    return result


# ------------------------------------------------------------------ assignments

def _when(value, what: str, *, required: bool = False) -> datetime | None:
    if value is None or value == "":
        if required:
            raise CourseError("invalid_assignment", f"{what} is required")
        return None
    if isinstance(value, datetime):
        moment = value
    else:
        try:
            moment = datetime.fromisoformat(str(value))
        except ValueError:
            raise CourseError("invalid_assignment", f"{what} must be a time such as 2026-12-10T23:59+09:00, "
                                                    f"not {str(value)[:40]!r}") from None
    if moment.tzinfo is None:
        raise CourseError("invalid_assignment", f"{what} must say its time zone (2026-12-10T23:59+09:00)")
    return moment.astimezone(ZoneInfo("UTC"))


def _number(value, what: str, *, low: float, high: float, whole: bool = False, optional: bool = True):
    if value is None or value == "":
        if optional:
            return None
        raise CourseError("invalid_assignment", f"{what} is required")
    try:
        number = int(value) if whole else float(value)
    except (TypeError, ValueError):
        number = None
    if number is None or (whole and isinstance(value, float) and not value.is_integer()) or not low <= number <= high:
        kind = "a whole number" if whole else "a number"
        raise CourseError("invalid_assignment", f"{what} must be {kind} from {low:g} to {high:g}")
    return number


def _choice(value, what: str, choices: tuple[str, ...], default: str) -> str:
    value = default if value in (None, "") else value
    if value not in choices:
        raise CourseError("invalid_assignment", f"{what} must be one of {', '.join(choices)}, not {str(value)[:40]!r}")
    return value


def create_assignment(session: Session, course: Course, *, exercise, due_at, title=None, opens_at=None,
                      late_until=None, late_policy=None, late_percent=None, late_cap=None, attempts=None,
                      cooldown_minutes=None, counts=None, feedback=None, version=None) -> Assignment:
    """An exercise placed in the course at its published version (or ``version``, one kept
    as an upload), with its due date and rules; every value checked first."""
    exercise_row = session.get(Exercise, exercise) if is_slug(exercise) else None
    if exercise_row is None or not exercise_row.published:
        raise CourseError("unknown_exercise", f"there is no exercise {str(exercise)[:100]!r}")
    version = _number(version, "the version", low=1, high=1e9, whole=True)
    if version is not None and version != exercise_row.version and session.scalar(select(Upload.id).where(
            Upload.slug == exercise_row.slug, Upload.version == version, Upload.status == UploadStatus.PUBLISHED)) is None:
        raise CourseError("invalid_assignment", f"version {version} of {exercise_row.slug} is not kept; "
                                                f"version {exercise_row.version} is published")
    due = _when(due_at, "the due date", required=True)
    opens, late = _when(opens_at, "the opening time"), _when(late_until, "the end of late submissions")
    if opens is not None and opens >= due:
        raise CourseError("invalid_assignment", "the assignment must open before it is due")
    if late is not None and late < due:
        raise CourseError("invalid_assignment", "late submissions must end after the due date, not before it")
    policy = _choice(late_policy, "the late policy", course_rules.LATE_POLICIES, "none")
    percent = _number(late_percent, "the late penalty", low=0, high=100) or 0.0
    if policy != "none" and not percent:
        raise CourseError("invalid_assignment", "a late policy other than none needs a penalty above 0 percent")
    assignment = Assignment(
        course_id=course.id, exercise_slug=exercise_row.slug, exercise_version=version or exercise_row.version,
        title=_text(title, "the title", 500, required=False) or exercise_row.title.get("en", exercise_row.slug),
        opens_at=opens, due_at=due, late_until=late, late_policy=policy, late_percent=percent,
        late_cap=_number(late_cap, "the late penalty's cap", low=0, high=100),
        attempts=_number(attempts, "the number of attempts", low=1, high=10_000, whole=True),
        cooldown_seconds=60 * (_number(cooldown_minutes, "the cool-down", low=0, high=60 * 24 * 7, whole=True) or 0),
        counts=_choice(counts, "which attempt counts", course_rules.COUNTS, "best"),
        feedback=_choice(feedback, "when hidden feedback is shown", course_rules.FEEDBACK, "immediate"))
    session.add(assignment)
    session.flush()
    return assignment


def rules_of(assignment: Assignment, extension: Extension | None = None) -> Rules:
    rules = Rules(due_at=_aware(assignment.due_at), opens_at=assignment.opens_at and _aware(assignment.opens_at),
                  late_until=assignment.late_until and _aware(assignment.late_until),
                  late_policy=assignment.late_policy, late_percent=assignment.late_percent,
                  late_cap=assignment.late_cap, attempts=assignment.attempts,
                  cooldown=timedelta(seconds=assignment.cooldown_seconds), counts=assignment.counts,
                  feedback=assignment.feedback)
    if extension is not None:
        rules = rules.extended(extension.due_at and _aware(extension.due_at), extension.extra_attempts)
    return rules


def _member(session: Session, assignment: Assignment, user: User) -> None:
    if session.scalar(select(CourseMember.id).where(CourseMember.course_id == assignment.course_id,
                                                    CourseMember.user_id == user.id)) is None:
        raise CourseError("not_a_member", "this student is not a member of the assignment's course")


def extension_of(session: Session, assignment: Assignment, user_id: int) -> Extension | None:
    return session.scalar(select(Extension).where(Extension.assignment_id == assignment.id,
                                                  Extension.user_id == user_id))


def grant_extension(session: Session, assignment: Assignment, user: User, *, due_at=None, extra_attempts=None,
                    reason, by: str) -> Extension:
    """A later due date and/or extra attempts for one student, with the reason they see."""
    _member(session, assignment, user)
    due = _when(due_at, "the new due date")
    extra = _number(extra_attempts, "the extra attempts", low=0, high=10_000, whole=True) or 0
    reason = _text(reason, "the reason", 2000)
    if due is None and not extra:
        raise CourseError("invalid_extension", "an extension gives a later due date, extra attempts, or both")
    if due is not None and due <= _aware(assignment.due_at):
        raise CourseError("invalid_extension", "the new due date must be after the assignment's own")
    extension = extension_of(session, assignment, user.id) or Extension(assignment_id=assignment.id, user_id=user.id)
    extension.due_at, extension.extra_attempts, extension.reason, extension.granted_by = due, extra, reason, by[:200]
    session.add(extension)
    session.flush()
    return extension


def override_of(session: Session, assignment: Assignment, user_id: int) -> ScoreOverride | None:
    return session.scalar(select(ScoreOverride).where(ScoreOverride.assignment_id == assignment.id,
                                                      ScoreOverride.user_id == user_id))


def set_override(session: Session, assignment: Assignment, user: User, *, score, reason, by: str) -> ScoreOverride:
    """A score set by hand, in place of the one the rules count; kept with who and when."""
    _member(session, assignment, user)
    exercise = session.get(Exercise, assignment.exercise_slug)
    most = exercise.max_score if exercise is not None and exercise.max_score else 1e6
    score = _number(score, "the score", low=0, high=most, optional=False)
    override = override_of(session, assignment, user.id) or ScoreOverride(assignment_id=assignment.id, user_id=user.id)
    override.score, override.reason, override.set_by = score, _text(reason, "the reason", 2000), by[:200]
    session.add(override)
    session.flush()
    return override


STANDING_TASK = "grader.standing_changed"


def announce_standing(assignment_id: int, user_id: int) -> None:
    """After an override or extension has committed: the student's LMS line items get the
    score that counts now (a worker's task; the change itself is stored either way)."""
    try:
        send_task(STANDING_TASK, [assignment_id, user_id, now().isoformat()], queue=NOTIFY_QUEUE)
    except Exception:
        log.exception("the LMS will not hear of assignment %s's new standing for user %s", assignment_id, user_id)


# ------------------------------------------------------------------ submitting, and what counts

COUNTED_STATUSES = (SubmissionStatus.QUEUED, SubmissionStatus.RUNNING, SubmissionStatus.GRADED)


def _attempts(session: Session, assignment: Assignment, user_id: int) -> list[Submission]:
    """The student's attempts: every submission but those the grader failed to grade
    (a failure of ours never costs an attempt)."""
    return list(session.scalars(select(Submission).where(
        Submission.assignment_id == assignment.id, Submission.user_id == user_id,
        Submission.status.in_(COUNTED_STATUSES)).order_by(Submission.created_at)))


def submit(session: Session, *, user: User, assignment: Assignment, source) -> Submission:
    """A submission to the assignment, if its rules accept one from ``user`` now;
    SubmissionError with the refusal's code (and ``reopens_at``) where they do not."""
    try:
        _member(session, assignment, user)
    except CourseError as exc:
        raise submissions.SubmissionError(exc.code, exc.message) from None
    rules = rules_of(assignment, extension_of(session, assignment, user.id))
    made = _attempts(session, assignment, user.id)
    try:
        course_rules.may_submit(rules, now(), len(made), _aware(made[-1].created_at) if made else None)
    except Refusal as refusal:
        error = submissions.SubmissionError(refusal.code, refusal.message)
        error.reopens_at = refusal.reopens_at
        raise error from None
    return submissions.create(session, user=user, exercise_slug=assignment.exercise_slug, source=source,
                              assignment_id=assignment.id, version=assignment.exercise_version)


def practice(session: Session, *, user: User, assignment: Assignment, source) -> PracticeRun:
    """A practice run for the assignment, by one of its course's members: the visible
    tests of the version it pinned, at any time, counted for nothing (no attempt used)."""
    try:
        _member(session, assignment, user)
    except CourseError as exc:
        raise submissions.SubmissionError(exc.code, exc.message) from None
    return practice_runs.start(session, user=user, exercise_slug=assignment.exercise_slug, source=source,
                               assignment_id=assignment.id, version=assignment.exercise_version)


@dataclass
class Standing:
    """Where one student stands on one assignment."""

    rules: Rules
    extension: Extension | None
    override: ScoreOverride | None
    attempts_used: int
    counted: Counted
    refusal: Refusal | None       # why a submission now would be refused (None: it would be taken)

    @property
    def attempts_left(self) -> int | None:
        return None if self.rules.attempts is None else max(0, self.rules.attempts - self.attempts_used)


def counted(rules: Rules, graded: list[Submission], override: ScoreOverride | None) -> Counted:
    if override is not None:
        best = course_rules.counting(rules, [_attempt(s) for s in graded])
        return Counted(score=override.score, max_score=best.max_score, how="override", of=best.of)
    return course_rules.counting(rules, [_attempt(s) for s in graded])


def _attempt(row: Submission) -> Attempt:
    return Attempt(row.id, _aware(row.created_at), row.score or 0.0, row.max_score or 0.0)


def standing(session: Session, assignment: Assignment, user: User) -> Standing:
    extension = extension_of(session, assignment, user.id)
    override = override_of(session, assignment, user.id)
    rules = rules_of(assignment, extension)
    made = _attempts(session, assignment, user.id)
    graded = [s for s in made if s.status == SubmissionStatus.GRADED]
    refusal = None
    try:
        course_rules.may_submit(rules, now(), len(made), _aware(made[-1].created_at) if made else None)
    except Refusal as exc:
        refusal = exc
    return Standing(rules, extension, override, len(made), counted(rules, graded, override), refusal)


def feedback_held_until(session: Session, row: Submission, viewer_id: int) -> datetime | None:
    """When the hidden tests' results of ``row`` are shown to its student, if they are held
    from ``viewer_id`` now (an assignment that releases them after its due date); else None.
    Staff of the course see everything; so does anyone looking at a submission of no assignment."""
    if row.assignment_id is None or row.user_id != viewer_id:
        return None
    assignment = session.get(Assignment, row.assignment_id)
    rules = rules_of(assignment, extension_of(session, assignment, row.user_id))
    if course_rules.feedback_released(rules, now()):
        return None
    staff = session.scalar(select(CourseMember.id).where(
        CourseMember.course_id == assignment.course_id, CourseMember.user_id == viewer_id,
        CourseMember.role.in_(STAFF_ROLES)))
    return None if staff is not None else rules.due_at


def course_of(session: Session, assignment: Assignment) -> Course:
    return session.get(Course, assignment.course_id)
