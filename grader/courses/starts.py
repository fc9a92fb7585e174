"""When a student starts a timed assignment: their clock (its time limit, an extension's
extra minutes on top) runs from that moment, by the service's clock, whichever way they
work. The start is recorded once, by the start button on the assignment's page or else
by their first submission (the API, the notebook client, an LMS's pages), and never moves.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from grader.accounts.models import User
from grader.courses.assignments import extension_of, require_member, rules_of
from grader.courses.models import Assignment, AssignmentStart
from grader.courses.rules import may_start
from grader.courses.times import aware
from grader.db import now


def started_at(session: Session, assignment: Assignment, user_id: int) -> datetime | None:
    """When the student started the assignment; None: not yet (or it is untimed)."""
    moment = session.scalar(select(AssignmentStart.started_at).where(
        AssignmentStart.assignment_id == assignment.id, AssignmentStart.user_id == user_id))
    return aware(moment) if moment is not None else None


def start(session: Session, assignment: Assignment, user: User, at: datetime | None = None) -> datetime | None:
    """The student's clock on a timed assignment started at ``at`` (now), unless it has
    started already: either way, when it did. None for an untimed assignment (nothing to
    start). Refused for a non-member, and before the assignment opens or once it has
    closed: a start then would only spend the student's time."""
    if assignment.time_limit_minutes is None:
        return None
    require_member(session, assignment, user)
    before = started_at(session, assignment, user.id)
    if before is not None:
        return before
    moment = at or now()
    may_start(rules_of(assignment, extension_of(session, assignment, user.id)), moment)
    try:
        with session.begin_nested():  # two first starts at once: the pair is unique, the first one stays
            session.add(AssignmentStart(assignment_id=assignment.id, user_id=user.id, started_at=moment))
    except IntegrityError:
        return started_at(session, assignment, user.id)
    return moment
