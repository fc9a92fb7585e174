"""An LMS course's roster, read from its platform (Names and Role Provisioning Services).

Launches alone bring only those who launch; the gradebook wants everyone. A launch that
names its course's memberships URL has it kept here (``remember``), and claims the
course's automatic sync when the roster was never synced or not within WINDOW: one sync
a window however many launch. An instructor's button and `grader course sync-roster`
sync at any time.

A sync (``sync``) reads every member first, then applies them in one transaction, so a
platform failing half-way changes nothing: each Active member becomes or stays a member
with the role their context roles give (roles.course_role), made a user as a launch makes
one; members who are users of the course's own platform and whom the LMS no longer lists
as Active lose their membership (their submissions, extensions and overrides stay). Local
members and other platforms' users are never touched. The outcome (counts, time) or the
error is kept on the course's LtiRoster row for the course page.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from grader import db, submissions
from grader.accounts.models import User
from grader import courses
from grader.courses.models import Course, CourseMember
from grader.db import now
from grader.lti import keys, roles
from grader.lti.models import LtiPlatform, LtiRoster
from grader.lti.platforms import as_platform, is_active, lms_user_id, off, service_url_ok
from grader.lti.tool import Member, ServiceError, fetch_members
from grader.tasks import NOTIFY_QUEUE, send_task

log = logging.getLogger(__name__)

SYNC_ROSTER_TASK = "grader.lti.sync_roster"  # grader.lti.tasks.sync_roster
WINDOW = timedelta(hours=24)
_CHUNK = 500  # user keys looked up per query


class NoRoster(LookupError):
    """The course has no roster to read: a local course, or an LMS that named no
    memberships URL in its launches."""


class PlatformOff(NoRoster):
    """The course's LMS registration is disabled or deleted: nothing is read from it."""


@dataclass(frozen=True)
class Synced:
    added: int
    changed: int  # members whose role changed
    removed: int
    active: int  # the members the LMS lists as Active

    def __str__(self) -> str:
        return (f"{self.added} added, {self.changed} roles changed, {self.removed} removed "
                f"({self.active} active in the LMS)")


def of_course(session: Session, course_id: int) -> LtiRoster | None:
    return session.scalar(select(LtiRoster).where(LtiRoster.course_id == course_id))


def remember(session: Session, course_id: int, memberships_url: str | None) -> bool:
    """Keep the memberships URL a launch of the course names. True when this launch
    claims the course's automatic sync (enqueue it once the launch has committed): its
    roster was never synced nor asked for within WINDOW."""
    if not service_url_ok(memberships_url):
        if memberships_url:
            log.warning("course %s: the memberships URL its launch names is not kept (https only, at most 2000 "
                        "characters): %r", course_id, memberships_url[:200])
        return False
    row = of_course(session, course_id)
    if row is None:
        session.add(LtiRoster(course_id=course_id, memberships_url=memberships_url, requested_at=now()))
        session.flush()
        return True
    if row.memberships_url != memberships_url:
        row.memberships_url = memberships_url
    cutoff = now() - WINDOW
    # One statement: of two launches at once, one claims it (the other finds requested_at new).
    claimed = session.execute(update(LtiRoster).where(
        LtiRoster.id == row.id, or_(LtiRoster.synced_at.is_(None), LtiRoster.synced_at < cutoff),
        or_(LtiRoster.requested_at.is_(None), LtiRoster.requested_at < cutoff))
        .values(requested_at=now()).execution_options(synchronize_session=False))
    return claimed.rowcount == 1


def enqueue(course_id: int) -> bool:
    """Have a worker sync the course's roster; False when the task could not be queued."""
    try:
        send_task(SYNC_ROSTER_TASK, [course_id], queue=NOTIFY_QUEUE)
    except Exception:
        log.exception("the roster sync of course %s could not be queued", course_id)
        return False
    return True


def sync(course_id: int, *, timeout: float = 10, database_url: str | None = None) -> Synced:
    """Read the course's roster from its LMS and apply it (see the module's text). NoRoster
    when there is none to read (PlatformOff: its LMS's registration is disabled or deleted);
    ServiceError when the LMS failed (recorded on the row, the roster as it was);
    IntegrityError when a launch made the same user meanwhile (recorded too: trying again
    finds it)."""
    with db.transaction(database_url) as session:
        course = session.get(Course, course_id) if 0 < course_id < 2**31 else None
        row = of_course(session, course_id) if course is not None else None
        if course is None:
            raise NoRoster(f"there is no course {course_id}")
        if course.platform_id is None or row is None:
            raise NoRoster(f"course {course_id} has no roster to read: a local course, or one whose LMS named no "
                           f"roster service (Names and Role Provisioning) in its launches")
        registration = session.get(LtiPlatform, course.platform_id)
        if not is_active(registration):
            raise PlatformOff(f"course {course_id}'s LMS registration is "
                              f"{off(registration)}: its roster is not read")
        platform = as_platform(registration)
        key = keys.current_pair(session)
        url = row.memberships_url
    try:
        found = fetch_members(platform, key, memberships_url=url, timeout=timeout)
    except ServiceError as exc:
        _failed(course_id, f"the LMS answered {exc.status}: {exc.detail}" if exc.status else exc.detail,
                database_url)
        raise
    try:
        with db.transaction(database_url) as session:
            # Two syncs of one course (a button, a launch) apply one after the other.
            row = session.scalar(select(LtiRoster).where(LtiRoster.course_id == course_id).with_for_update())
            result = apply(session, session.get(Course, course_id), found)
            row.synced_at, row.failed_at, row.error = now(), None, None
            row.added, row.changed, row.removed = result.added, result.changed, result.removed
    except IntegrityError:
        _failed(course_id, "a launch added the same user meanwhile; the next try finds them", database_url)
        raise
    return result


def apply(session: Session, course: Course, found: list[Member]) -> Synced:
    """Make the course's members of its platform those the LMS lists as Active."""
    platform_id = course.platform_id
    active = {lms_user_id(platform_id, m.user_id): m for m in found if m.status == "Active"}
    # This platform's members of the course now: only they may be changed or removed.
    ours = {external_id: member for member, external_id in session.execute(
        select(CourseMember, User.external_id).join(User, User.id == CourseMember.user_id).where(
            CourseMember.course_id == course.id,
            User.external_id.startswith(lms_user_id(platform_id, ""), autoescape=True)))}
    users = {}
    keys_ = list(active)
    for start in range(0, len(keys_), _CHUNK):
        users.update({u.external_id: u for u in session.scalars(
            select(User).where(User.external_id.in_(keys_[start:start + _CHUNK])))})
    added = changed = removed = 0
    for external_id, member in active.items():
        name = member.name[:200]
        user = users.get(external_id) or submissions.user_by_external_id(session, external_id, name=name)
        if name:
            user.name = name
        role = roles.course_role(member.roles)
        current = ours.get(external_id)
        if current is None:
            courses.set_role(session, course.id, user.id, role)
            added += 1
        elif current.role != role:
            current.role = role
            changed += 1
    for external_id, current in ours.items():
        if external_id not in active:
            session.delete(current)
            removed += 1
    session.flush()
    return Synced(added=added, changed=changed, removed=removed, active=len(active))


def _failed(course_id: int, error: str, database_url: str | None) -> None:
    with db.transaction(database_url) as session:
        row = of_course(session, course_id)
        if row is not None:
            row.failed_at, row.error = now(), error[:2000]
