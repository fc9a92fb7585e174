"""Changing a course: who is in it with which role, and which exercises it uses."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from grader.courses.models import MEMBER_ROLES, CourseExercise, CourseMember


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
