"""Who may see which submissions, and who is staff of which course.

An administrator (a local account, `grader create-user --role admin`) sees everything.
Staff of a course (ta, instructor) see the course's own work: submissions made for its
assignments, and, in a course an LMS made, what its members of that LMS submitted to the
exercises its links opened. A submission to the free catalogue is its author's (and the
administrators'): being someone's staff in one course never opens their work elsewhere.
Everyone sees their own.
"""

from __future__ import annotations

from sqlalchemy import false, or_, select
from sqlalchemy.orm import Session

from grader.accounts.models import Role, User
from grader.catalog.models import Exercise
from grader.courses.models import STAFF_ROLES, Assignment, CourseExercise, CourseMember
from grader.submissions.models import Submission


def is_admin(user: User | None) -> bool:
    return user is not None and user.role == Role.ADMIN


def may_register_platforms(user: User | None) -> bool:
    """Local instructors and administrators (an LMS user never registers an LMS)."""
    return user is not None and bool(user.password_hash) and user.role in (Role.INSTRUCTOR, Role.ADMIN)


def is_staff(session: Session, user: User) -> bool:
    """An administrator, or staff (ta, instructor) of some course: who sees the course
    submission pages."""
    return is_admin(user) or bool(staff_courses(session, user))


def staff_courses(session: Session, user: User) -> list[int]:
    return list(session.scalars(select(CourseMember.course_id).where(
        CourseMember.user_id == user.id, CourseMember.role.in_(STAFF_ROLES))))


def is_staff_of(session: Session, user: User, course_id: int) -> bool:
    return session.scalar(select(CourseMember.id).where(
        CourseMember.user_id == user.id, CourseMember.course_id == course_id,
        CourseMember.role.in_(STAFF_ROLES))) is not None


def _in_courses(course_ids: list[int]):
    """A condition on Submission: the course work of one of the courses. Made for one of
    their assignments; or, with no assignment, made through one of their LMS links (the
    course the submission keeps, grader.courses.taking.lms_link_course)."""
    return or_(Submission.assignment_id.in_(select(Assignment.id).where(Assignment.course_id.in_(course_ids))),
               Submission.course_id.in_(course_ids))


def visible(session: Session, user: User, query):
    """``query`` (over Submission) narrowed to what ``user`` may see as staff or admin."""
    if is_admin(user):
        return query
    courses = staff_courses(session, user)
    return query.where(_in_courses(courses)) if courses else query.where(false())


def course_exercises(session: Session, user: User) -> list[str]:
    """The slugs placed in the courses ``user`` is staff of (all of them for an admin)."""
    if is_admin(user):
        return list(session.scalars(select(Exercise.slug).order_by(Exercise.slug)))
    courses = staff_courses(session, user)
    if not courses:
        return []
    return list(session.scalars(select(CourseExercise.exercise_slug).where(
        CourseExercise.course_id.in_(courses)).distinct().order_by(CourseExercise.exercise_slug)))


def is_course_staff(session: Session, user: User, row: Submission) -> bool:
    """Whether ``user`` is staff (ta, instructor) of the course whose work ``row`` is: who
    sees it as staff, and who comments on it (grader.courses.comments)."""
    courses = staff_courses(session, user)
    return bool(courses) and session.scalar(select(Submission.id).where(Submission.id == row.id,
                                                                     _in_courses(courses))) is not None


def may_see(session: Session, user: User, row: Submission) -> bool:
    return row.user_id == user.id or is_admin(user) or is_course_staff(session, user, row)
