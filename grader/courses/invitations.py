"""Invitation links: a local course's instructor makes a link; whoever opens it joins the
course with the link's role (student or TA), signed in already or with an account made
on the spot. A link ends at its expiry, after its number of uses, or when revoked.

Only the token's hash is stored (as for API keys): the link is shown once, when made.
Every refusal is a CourseError, raised before anything changes.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session

from grader.accounts.models import User
from grader.courses.fields import CourseError
from grader.courses.roster import require_local, role_in, set_role
from grader.courses.models import Course, Invitation, MemberRole
from grader.clock import as_utc
from grader.db import now

INVITED_ROLES = (MemberRole.STUDENT, MemberRole.TA)  # an instructor is made by the roster, never by a link
MAX_DAYS = 180
MAX_USES = 10_000
MAX_OPEN = 50  # links a course may have open at once
_RANK = {MemberRole.STUDENT: 0, MemberRole.TA: 1, MemberRole.INSTRUCTOR: 2}


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


def _invalid(message: str) -> CourseError:
    """A link that cannot be made; its words for people say the limits."""
    return CourseError("invalid_invitation", message, days=MAX_DAYS, uses=MAX_USES)


def _whole(value, what: str, low: int, high: int, *, optional: bool = False) -> int | None:
    if value is None or value == "":
        if optional:
            return None
        raise _invalid(f"{what} is required")
    try:
        number = int(str(value).strip())
    except ValueError:
        number = None
    if number is None or not low <= number <= high:
        raise _invalid(f"{what} must be a whole number from {low} to {high}, not {str(value)[:20]!r}")
    return number


def create(session: Session, course: Course, *, role, days, max_uses=None, by: str = "") -> tuple[Invitation, str]:
    """A new link to the course: (its row, the token, which is not stored)."""
    require_local(course)
    role = str(role or MemberRole.STUDENT).strip().lower()
    if role not in INVITED_ROLES:
        raise _invalid(f"an invitation makes a student or a ta, not {role[:20]!r}")
    days = _whole(days, "the days the link is valid", 1, MAX_DAYS)
    max_uses = _whole(max_uses, "the number of uses", 1, MAX_USES, optional=True)
    if len(open_ones(session, course)) >= MAX_OPEN:
        raise CourseError("too_many_invitations", f"the course has {MAX_OPEN} open invitation links: revoke "
                                                  "one you no longer need first", n=MAX_OPEN)
    token = secrets.token_urlsafe(24)
    row = Invitation(course_id=course.id, token_hash=_hash(token), prefix=token[:8], role=role,
                     expires_at=now() + timedelta(days=days), max_uses=max_uses, uses=0, created_by=by[:200])
    session.add(row)
    session.flush()
    return row, token


def open_ones(session: Session, course: Course) -> list[Invitation]:
    """The course's links that still let people in, newest first."""
    return list(session.scalars(select(Invitation).where(
        Invitation.course_id == course.id, Invitation.revoked_at.is_(None), Invitation.expires_at > now(),
        or_(Invitation.max_uses.is_(None), Invitation.uses < Invitation.max_uses))
        .order_by(Invitation.created_at.desc(), Invitation.id.desc())))


def revoke(session: Session, course: Course, invitation_id: int) -> Invitation:
    row = session.get(Invitation, invitation_id) if 0 < invitation_id < 2**31 else None
    if row is None or row.course_id != course.id:
        raise CourseError("unknown_invitation", "the course has no such invitation link")
    if row.revoked_at is None:
        row.revoked_at = now()
    return row


def find(session: Session, token: str) -> tuple[Invitation, Course]:
    """The link the token opens, while it still lets people in."""
    row = session.scalar(select(Invitation).where(Invitation.token_hash == _hash(token))) \
        if isinstance(token, str) and 0 < len(token) <= 100 else None
    if row is None:
        raise CourseError("unknown_invitation", "this invitation link is not one of the grader's: check that "
                                                "it was copied whole")
    if row.revoked_at is not None:
        raise CourseError("invitation_revoked", "this invitation link was withdrawn by the course's instructor")
    if as_utc(row.expires_at) <= now():
        raise CourseError("invitation_expired", "this invitation link has expired")
    if row.max_uses is not None and row.uses >= row.max_uses:
        raise CourseError("invitation_used_up", "this invitation link has been used as many times as it allows")
    return row, session.get(Course, row.course_id)


def accept(session: Session, token: str, user: User) -> tuple[Course, str, bool]:
    """The user joins the link's course: (the course, their role in it now, whether they
    joined just now). A member already keeps a higher role, and uses no place of the link."""
    row, course = find(session, token)
    before = role_in(session, course, user)
    if before is not None and _RANK.get(before, 0) >= _RANK[row.role]:
        return course, before, False
    # Counted in the database itself, so that two people at once never pass the last place.
    taken = session.execute(update(Invitation).where(
        Invitation.id == row.id, Invitation.revoked_at.is_(None), Invitation.expires_at > now(),
        or_(Invitation.max_uses.is_(None), Invitation.uses < Invitation.max_uses))
        .values(uses=Invitation.uses + 1).execution_options(synchronize_session=False)).rowcount
    if taken != 1:
        raise CourseError("invitation_used_up", "this invitation link has been used as many times as it allows")
    set_role(session, course.id, user.id, row.role)
    return course, row.role, before is None
