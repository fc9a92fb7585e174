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

from grader import mail
from grader.accounts import links, users
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
# What a mail's To header reads as a list, a group, a comment, a quote or an address in
# brackets: an address typed on a link's page holds none, so its mail goes to it alone.
_HEADER_SPECIALS = frozenset(',;:<>()[]"\\')


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
    return _open(session, row)


def _open(session: Session, row: Invitation) -> tuple[Invitation, Course]:
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
    return _join(session, *find(session, token), user)


def _join(session: Session, row: Invitation, course: Course, user: User) -> tuple[Course, str, bool]:
    before = role_in(session, course, user)
    if before is None or _RANK.get(before, 0) < _RANK[row.role]:
        # The link's row first (PostgreSQL's row lock, SQLite's write lock), then the membership
        # read again: the same user's other join (a double click), committed meanwhile, shows
        # here and takes no second place.
        session.execute(update(Invitation).where(Invitation.id == row.id).values(uses=Invitation.uses)
                        .execution_options(synchronize_session=False))
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


# ------------------------------------------------------------------ answered with an address

def ask(session: Session, token: str, *, email: str, name: str, language: str | None = None) -> None:
    """Someone gave their address on the link's page. Whatever it is, the page answers
    alike ("check your mail"): an address with a local account is mailed a link that signs
    in and joins; a new one, a link that makes the account once a password is chosen, and
    so proves the address; anything else gets nothing. (The caller commits.)"""
    row, course = find(session, token)
    name = users.check_name(name)
    email = users.check_email(email)
    if any(c in _HEADER_SPECIALS for c in email):  # "x,ada@example.org" would mail x and Ada
        raise users.AccountError(f"{email[:80]!r} is not one e-mail address", "invalid_email")
    user = users.by_email(session, email)
    if user is not None and not users.is_local(user):
        return
    purpose = "join_existing" if user is not None else "join_new"
    secret = links.issue(session, purpose, email=email, user=user, data={"invitation": row.id, "name": name})
    mail.send(session, kind=purpose, to=email, user_id=user.id if user else None,
              language=(user.language if user else None) or language, link=mail.link_to(links.path(secret)),
              values={"name": user.name if user else "", "email": email, "course": course.title,
                      "hours": links.JOIN_HOURS})


def _invitation_of(session: Session, link) -> Invitation | None:
    """The invitation a mailed join link answered; None for any other link, or one gone."""
    if link.purpose not in ("join_new", "join_existing"):
        return None
    return session.get(Invitation, int(link.data.get("invitation") or 0))


def course_of_link(session: Session, link) -> Course | None:
    """The course a mailed join link joins; None for any other link. Refused (as joining
    would be) where the invitation it answered is gone, withdrawn, expired or used up, so
    that the link's page says so rather than offer a form that cannot work."""
    if link.purpose not in ("join_new", "join_existing"):
        return None
    invitation = _invitation_of(session, link)
    if invitation is None:
        raise CourseError("unknown_invitation", "the invitation this link answered is gone")
    return _open(session, invitation)[1]


def join_by_mail(session: Session, secret: str, password: str | None = None) -> tuple[User, Course, str]:
    """A mailed join link followed: (the user, now signed in by the caller; the course;
    their role). A new address's link makes its account with ``password``."""
    link = links.find(session, secret)
    if link.purpose not in ("join_new", "join_existing"):
        raise links.LinkRefused("link_spent", "this link does not join a course")
    invitation = _invitation_of(session, link)
    if invitation is None:
        raise CourseError("unknown_invitation", "the invitation this link answered is gone")
    invitation, course = _open(session, invitation)
    if link.purpose == "join_new":
        user = users.create_user(session, email=link.email, password=password if password is not None else "",
                                 role="student", name=link.data.get("name") or "")
    else:
        user = session.get(User, link.user_id) if link.user_id else None
        if user is None or user.email != link.email:
            raise links.LinkRefused("link_spent", "this link was for another address")
    links.spend(session, link)
    if user.self_registered:
        # Made through a link before addresses were confirmed: whoever typed this address
        # then chose its password. Its owner, now proven by the mail, is let in; that
        # password, its sessions and tokens are not (they choose their own by reset).
        users.take_back(session, user)
    _course, role, _joined = _join(session, invitation, course, user)
    return user, course, role
