"""Who sees which exercise: the one rule every surface asks (the catalogue's pages, an
exercise's page and its forms, the API with a key or a personal token, and through it the
notebook client, LTI launches and deep linking, assignments made on the site or the API).

A released exercise is everyone's. A draft (grader.catalog.drafts: published through an
upload and not released yet) is seen, and tried like a student tries it, by its author
(the user or API key whose upload it is graded with), the administrators, and the staff of
the courses whose assignments place it (for an API key: the courses it made). A course's
students see a draft only through their course's assignments, never on its own: it is not
listed to them, and its page, its forms and the API's exercise answer them "not found",
as for a slug that names nothing. A withdrawn exercise is no one's.
"""

from __future__ import annotations

from sqlalchemy import false, or_, select
from sqlalchemy.orm import Session

from grader.accounts.models import Role, User
from grader.catalog import drafts, is_slug
from grader.catalog.models import Exercise
from grader.courses.models import STAFF_ROLES, Assignment, Course, CourseMember


def visible(user: User | None = None, *, key_id: int | None = None):
    """A condition on Exercise: the exercises ``user`` (a signed-in user, or a personal
    token's owner) or the API key ``key_id`` (a service's key, acting as itself) sees.
    Neither: what anyone sees, the released catalogue."""
    if user is not None and user.role == Role.ADMIN:
        return Exercise.published.is_(True)
    ways = [drafts.released()]
    if user is not None or key_id is not None:
        ways.append(Exercise.published.is_(True) & drafts.authored(user.id if user is not None else None, key_id))
        ways.append(Exercise.published.is_(True) & Exercise.slug.in_(_placed_for_staff(user, key_id)))
    return or_(*ways)


def _placed_for_staff(user: User | None, key_id: int | None):
    """The slugs the assignments of the courses ``user`` is staff of (or ``key_id`` made) place."""
    courses = []
    if user is not None:
        courses.append(Assignment.course_id.in_(select(CourseMember.course_id).where(
            CourseMember.user_id == user.id, CourseMember.role.in_(STAFF_ROLES))))
    if key_id is not None:
        courses.append(Assignment.course_id.in_(select(Course.id).where(Course.api_key_id == key_id)))
    return select(Assignment.exercise_slug).where(or_(*courses) if courses else false())


def visible_to(session: Session, exercise: Exercise | None, user: User | None = None, *,
               key_id: int | None = None) -> bool:
    """Whether ``user`` (or the API key ``key_id``) sees ``exercise`` on its own: its page,
    its statement, submitting or practising on it outside an assignment."""
    if exercise is None:
        return False
    return session.scalar(select(Exercise.slug).where(Exercise.slug == exercise.slug,
                                                      visible(user, key_id=key_id))) is not None


def find(session: Session, slug, user: User | None = None, *, key_id: int | None = None) -> Exercise | None:
    """The exercise ``slug`` where the viewer sees it; None otherwise (never told apart
    from a slug that names nothing)."""
    row = session.get(Exercise, slug) if isinstance(slug, str) and is_slug(slug) else None
    return row if visible_to(session, row, user, key_id=key_id) else None


def listed(session: Session, user: User | None = None, *, key_id: int | None = None) -> list[Exercise]:
    """The exercises the viewer sees, by slug (drafts among them where they are theirs)."""
    return list(session.scalars(select(Exercise).where(visible(user, key_id=key_id)).order_by(Exercise.slug)))

