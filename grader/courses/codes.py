"""A course's code (DL101): one code names one course on the whole site, so that
``grader gradebook export --course DL101``, an export's file name and whoever reads a
code aloud all mean the same course.

Codes are told apart without regard to case: "DL101" and "dl101" would be two courses
to the database but one to anyone typing the code, and their exports (DL101-students.csv,
dl101-students.csv) one file on the case-insensitive file systems of macOS and Windows.
Case is folded by the database's own lower(), for the check here and for the unique index
on lower(code) that migration 0019 adds (which also settles two requests racing past the
check): ASCII letters on SQLite, every letter on PostgreSQL. An empty code (an LMS context
that sends no label) is no code and collides with nothing.

Local courses (the course page, the API, ``grader course create``) are refused a code that
is taken (``course_code_taken``). A course made from an LMS launch is never refused: where
its context's label is taken it gets the first free one of label-2, label-3, ..."""

from __future__ import annotations

import re

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from grader.courses.fields import CourseError
from grader.courses.models import CODE_INDEX, Course

CODE_LENGTH = 200


def holder(session: Session, code: str, *, but: Course | None = None) -> Course | None:
    """The course (other than ``but``) whose code is ``code``, ignoring case; None if the
    code is free or empty."""
    if not code:
        return None
    query = select(Course).where(func.lower(Course.code) == func.lower(code), Course.code != "")  # the index
    if but is not None and but.id is not None:
        query = query.where(Course.id != but.id)
    return session.scalars(query.order_by(Course.id).limit(1)).first()


def require_free(session: Session, code: str) -> None:
    """CourseError ``course_code_taken`` where another course has the code."""
    if holder(session, code) is not None:
        raise taken(code)


def taken(code: str) -> CourseError:
    return CourseError("course_code_taken", f"there is already a course with the code {code!r}: course codes are "
                                            f"unique (whatever their case), so choose another", course_code=code)


def was_taken(exc: IntegrityError) -> bool:
    """Whether a failed flush was another course taking the same code first."""
    return CODE_INDEX in str(exc.orig)


def with_suffix(code: str, number: int) -> str:
    """``code`` with ``-number`` after it, shortened so that the whole fits a code."""
    suffix = f"-{number}"
    return code[:CODE_LENGTH - len(suffix)] + suffix


def lms_code(session: Session, label: str, course: Course) -> str:
    """The code an LMS course gets from its context's ``label``: the label where no other
    course has it; else the code the course already holds if it is the label with a
    suffix (so each launch keeps it); else the first free of label-2, label-3, ...
    The same rows always give the same code."""
    label = label[:CODE_LENGTH]
    if not label or holder(session, label, but=course) is None:
        return label
    suffixed = re.fullmatch(r".*-([1-9][0-9]{0,8})", course.code or "")
    if suffixed and int(suffixed.group(1)) >= 2 \
            and course.code.lower() == with_suffix(label, int(suffixed.group(1))).lower():
        return course.code
    number = 2
    while holder(session, with_suffix(label, number), but=course) is not None:
        number += 1
    return with_suffix(label, number)
