"""A course and who is in it: making a course, finding one, its members and their roles,
and a roster (CSV or an API body) imported whole or not at all."""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlalchemy import func, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from grader.accounts import users
from grader.accounts.models import User
from grader.courses import codes, notices
from grader.courses.fields import CourseError, text
from grader.courses.models import MEMBER_ROLES, Course, CourseExercise, CourseMember

MAX_ROSTER_LINES = 5000
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+$")


def set_role(session: Session, course_id: int, user_id: int, role: str) -> CourseMember:
    """The user's role in the course from now on (made a member if not one yet)."""
    if role not in MEMBER_ROLES:
        raise ValueError(f"a member's role is one of {', '.join(MEMBER_ROLES)}, not {role!r}")
    member = session.scalar(select(CourseMember).where(CourseMember.course_id == course_id,
                                                       CourseMember.user_id == user_id))
    if member is None:
        member = CourseMember(course_id=course_id, user_id=user_id, role=role)
        session.add(member)
    else:
        member.role = role
    return member


def place(session: Session, course_id: int, exercise_slug: str) -> None:
    """The exercise is used in the course (once, however many links open it)."""
    if session.scalar(select(CourseExercise.id).where(CourseExercise.course_id == course_id,
                                                      CourseExercise.exercise_slug == exercise_slug)) is None:
        session.add(CourseExercise(course_id=course_id, exercise_slug=exercise_slug))


def create_course(session: Session, *, title, code, time_zone=None, api_key_id: int | None = None,
                  instructor: User | None = None) -> Course:
    """A local course. Refused (CourseError) with an invalid field, or a code another course
    has (``course_code_taken``, grader.courses.codes); a course that took the code in the
    meantime is found by the database's index, and that refusal ends the transaction."""
    title, code = text(title, "the title", 500), text(code, "the code", codes.CODE_LENGTH)
    time_zone = text(time_zone, "the time zone", 64, required=False) or "UTC"
    try:
        ZoneInfo(time_zone)
    except (ZoneInfoNotFoundError, ValueError):
        raise CourseError("invalid_course", f"{time_zone!r} is not a time zone; use an IANA name such as "
                                            "'Asia/Seoul' or 'Europe/Berlin'") from None
    codes.require_free(session, code)
    course = Course(title=title, code=code, time_zone=time_zone, api_key_id=api_key_id)
    session.add(course)
    try:
        session.flush()
    except IntegrityError as exc:
        if codes.was_taken(exc):
            raise codes.taken(code) from None
        raise
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
    """The course whose code is ``code`` (ignoring case, as codes are told apart), or whose
    id it is; CourseError if there is none, or if it is one course's code and another's id."""
    code = code.strip()
    found = session.scalars(select(Course).where(or_(
        (func.lower(Course.code) == func.lower(code)) & (Course.code != ""),
        Course.id == (int(code) if code.isdigit() and len(code) < 10 else -1)))).all()
    if not found:
        raise CourseError("course_not_found", f"no course {code!r}")
    if len(found) > 1:
        by_code = next(c for c in found if c.id != int(code))
        raise CourseError("ambiguous_course", f"{code!r} is the code of course {by_code.id} and the id of another "
                                              f"course: name the course you mean by its own code")
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


def require_local(course: Course) -> None:
    """An LMS course's members come from its LMS alone (launches and the LMS's roster):
    adding anyone else by hand would give its staff, whom any LMS registration makes,
    a way to local accounts they have no course with."""
    if course.platform_id is not None:
        raise CourseError("lms_course", "an LMS course's members come from the LMS (their launches and its "
                                        "roster), not from roster files or invitation links")


def import_roster(session: Session, course: Course, rows: list[dict], *, find_user=None,
                  language: str | None = None) -> RosterResult:
    """Members from roster lines with ``email``, ``name`` and ``role`` (student, ta or
    instructor; student where empty). Every line is checked before any is stored. A line's
    e-mail finds a local account, or makes one without a password and mails it a link to
    choose one (in ``language`` where the account has none of its own). ``find_user(
    identifier, name)`` names members another way too (an API key's users): a line with a
    ``user`` and no ``email`` is that key's user."""
    require_local(course)
    if not rows:
        raise CourseError("invalid_roster", "the roster has no members: its first line names the columns "
                                            "email,name,role and each line after it is one member")
    if len(rows) > MAX_ROSTER_LINES:
        raise CourseError("invalid_roster", f"the roster has {len(rows)} lines; the limit is {MAX_ROSTER_LINES}")

    def key_of(row) -> str | None:
        if not isinstance(row, dict):
            return None
        if isinstance(row.get("email"), str) and row.get("email", "").strip():
            return "email"
        return "user" if find_user is not None and isinstance(row.get("user"), str) else None

    if not all(key_of(row) for row in rows):
        wanted_key = "email (or user)" if find_user is not None else "email"
        raise CourseError("invalid_roster", f"every member of the roster needs an {wanted_key} (a CSV's first line "
                                            f"names the columns email,name,role)")
    problems, wanted = [], []
    for number, row in enumerate(rows, start=2):
        key = key_of(row)
        who = row[key].strip()
        role, name = row.get("role") or "student", row.get("name") or ""
        if not isinstance(role, str) or not isinstance(name, str):
            problems.append(f"line {number}: the name and role must be text")
            continue
        role, name = role.strip().lower(), name.strip()
        if key == "email" and (not _EMAIL.match(who) or len(who) > 320):
            problems.append(f"line {number}: {who[:80]!r} is not an e-mail address")
        elif not who or len(who) > (320 if key == "email" else 200) or any(ord(c) < 32 for c in who + name):
            problems.append(f"line {number}: the {key} must be 1 to 200 printable characters")
        elif role not in MEMBER_ROLES:
            problems.append(f"line {number}: the role must be one of {', '.join(MEMBER_ROLES)}, not {role[:40]!r}")
        else:
            wanted.append((key, who, name[:200], role))
    emails = [who.lower() for key, who, _n, _r in wanted if key == "email"]
    # An address typed by whoever made the account (through an invitation link, before
    # addresses were confirmed by mail) proves nothing: naming it on a roster must not hand
    # that account this course.
    claimed = set(session.scalars(select(func.lower(User.email)).where(
        User.self_registered.is_(True), func.lower(User.email).in_(emails)))) if emails else set()
    problems += [f"{who} has an account its owner made through an invitation link, with an address "
                 f"never confirmed: invite them with a link instead" for key, who, _n, _r in wanted
                 if key == "email" and who.lower() in claimed]
    if problems:
        raise CourseError("invalid_roster", "nothing was imported: " + "; ".join(problems[:20])
                          + (f"; and {len(problems) - 20} more" if len(problems) > 20 else ""))
    result = RosterResult()
    for key, who, name, role in wanted:
        if key == "user":
            user = find_user(who, name)
        else:
            user = session.scalar(select(User).where(func.lower(User.email) == who.lower()))
            if user is None:
                user = users.create_user(session, email=who, password=None, name=name or who.split("@")[0])
                users.welcome(session, user, course=course.title, language=language)
                result.new_accounts.append(who)
        before = role_in(session, course, user)
        set_role(session, course.id, user.id, role)
        (result.added if before is None else result.changed if before != role else []).append(who)
        if before is None and who not in result.new_accounts:  # a new account's welcome says it all
            notices.added(session, course, user, role, language=language)
    return result
