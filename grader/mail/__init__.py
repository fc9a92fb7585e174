"""Outgoing mail: what the service tells people (a set-password link, a course they were
added to), never inside a request.

:func:`send` renders the mail in the recipient's language and stores it in the caller's
transaction; once that transaction has committed, a task (grader.mail.tasks) hands it to
the SMTP server of ``GRADER_SMTP_URL``, retrying with growing delays, each try recorded,
or, with no server set, writes it to the instance folder's outbox, where whoever runs the
service (and the administrators' mail page) can read it. A mail whose transaction rolled
back never leaves. A link that opens an account is never stored with the mail; it goes
with the task alone.

Bounded, in two budgets an address does not share, so that nobody who can make the
service mail an address (asking for its password reset, answering a class link with it) can
use up what that address's own course news needs:
- notices (a mail with an unsubscribe link, and the digest of them): PER_ADDRESS_HOUR an
  hour; one over it is held, and the digest task sends what was held as one mail once the
  hour has room again. Nothing a course tells a student is lost to the limit.
- the mails that get someone in (welcome, reset, join): ACCESS_PER_ADDRESS_HOUR an hour;
  one over it is stored as dropped, for the administrators to see, and not sent (whoever
  asked may ask again).
The site sends at most SITE_HOUR an hour of either (notices over it are held as well).
"""

from __future__ import annotations

import logging
from datetime import timedelta

from sqlalchemy import event, func, or_, select
from sqlalchemy.orm import Session

from grader.db import now
from grader.mail.models import Mail, MailAttempt, MailOnce
from grader.mail.render import LANGUAGES, language_of, render
from grader.settings import settings
from grader.tasks import NOTIFY_QUEUE, send_task

__all__ = ["LANGUAGES", "LINK", "Mail", "MailAttempt", "digest", "language_of", "link_to", "send"]

log = logging.getLogger(__name__)

DELIVER_TASK = "grader.mail.deliver"
LINK = "[link: sent in the mail only]"  # what the stored text holds where the mail's link was
PER_ADDRESS_HOUR = 10
ACCESS_PER_ADDRESS_HOUR = 10
SITE_HOUR = 5000
DIGEST = "digest"         # the kind of the mail that carries held notices
DIGEST_MOST = 100         # held notices one digest carries (the rest go in the next)
HELD, DIGESTED = "held", "digested"
_NOT_SENT = ("dropped", HELD, DIGESTED)
_PENDING = "grader.mail.pending"


def link_to(path: str) -> str:
    """The absolute URL of a path of the site, as mail links need (GRADER_PUBLIC_URL)."""
    return settings().public_url + "/" + path.lstrip("/")


def send(session: Session, *, kind: str, to: str, language: str | None = None, user_id: int | None = None,
         values: dict | None = None, link: str | None = None, once: str | None = None,
         unsubscribe: str | None = None) -> Mail | None:
    """Queue a mail of ``kind`` (a template pair in grader/templates/mail/) to ``to``. The
    caller commits; the mail leaves after that. ``link``: a secret link (a set-password or
    sign-in link) that the mail carries and the database never holds. ``once``: a key
    naming this mail; a second mail with the same key is not queued (None is returned).
    ``unsubscribe``: the one-click link that switches this kind of mail off (a notice's).
    Returns the stored mail (dropped, where over a limit)."""
    if once is not None:
        if sent_once(session, once):
            return None
        mark_once(session, once)
    language = language_of(language)
    shown = {"name": "", "course": "", **(values or {}), "unsubscribe": unsubscribe or "", "language": language,
             "home": link_to("/"), "link": LINK if link else ""}
    subject, text, html = render(kind, language, shown)
    mail = Mail(kind=kind, to_address=to, user_id=user_id, language=language, subject=subject[:300], text=text,
                html=html, has_link=link is not None, status="queued", unsubscribe=unsubscribe)
    notice = unsubscribe is not None or kind == DIGEST
    if _over_limit(session, to, notice=notice):
        if notice and kind != DIGEST:
            mail.status, mail.last_error = HELD, "over the hour's notices: it goes in the next digest"
        else:
            mail.status, mail.last_error = "dropped", "over the mail limits: not sent"
            log.warning("mail %s to one address not sent: over the mail limits", kind)
    session.add(mail)
    session.flush()
    if mail.status == "queued":
        _after_commit(session, mail.id, link)
    return mail


def sent_once(session: Session, key: str) -> bool:
    """Whether what ``key`` names was told already."""
    return session.get(MailOnce, key) is not None


def mark_once(session: Session, key: str) -> None:
    """What ``key`` names is told (in the caller's transaction: two workers racing on one
    key, one commit fails on the key and its mail never leaves)."""
    session.add(MailOnce(key=key))
    session.flush()


def digest(session: Session, to: str) -> Mail | None:
    """Send the notices held for ``to`` as one mail, where the hour has room for it; the
    held ones are then marked as carried. None when nothing is held or there is no room."""
    held = list(session.scalars(select(Mail).where(Mail.status == HELD, func.lower(Mail.to_address) == to.lower())
                                .order_by(Mail.created_at, Mail.id).limit(DIGEST_MOST)))
    if not held or _over_limit(session, to, notice=True):
        return None
    items = [{"subject": m.subject, "text": m.text.split("\n-- \n", 1)[0].strip()} for m in held]
    out = send(session, kind=DIGEST, to=held[-1].to_address, language=held[-1].language, user_id=held[-1].user_id,
               values={"items": items, "settings": link_to("/account/mail")})
    for m in held:
        m.status, m.last_error = DIGESTED, f"carried by the digest mail {out.id}"
    return out


def _over_limit(session: Session, to: str, *, notice: bool) -> bool:
    since = now() - timedelta(hours=1)
    recent = select(func.count(Mail.id)).where(Mail.created_at > since, Mail.status.notin_(_NOT_SENT))
    is_notice = or_(Mail.unsubscribe.isnot(None), Mail.kind == DIGEST)
    mine = recent.where(func.lower(Mail.to_address) == to.lower(), is_notice if notice else ~is_notice)
    return (session.scalar(mine) >= (PER_ADDRESS_HOUR if notice else ACCESS_PER_ADDRESS_HOUR)
            or session.scalar(recent) >= SITE_HOUR)


def _after_commit(session: Session, mail_id: int, link: str | None) -> None:
    session.info.setdefault(_PENDING, []).append((mail_id, link))


@event.listens_for(Session, "after_commit")
def _hand_over(session: Session) -> None:
    for mail_id, link in session.info.pop(_PENDING, []):
        try:
            send_task(DELIVER_TASK, [mail_id, link], queue=NOTIFY_QUEUE)
        except Exception:  # the mail is stored: the sweeper sends it (or it waits, if it has a link)
            log.exception("mail %s could not be handed to a worker now", mail_id)


@event.listens_for(Session, "after_soft_rollback")
def _forget(session: Session, _previous) -> None:
    session.info.pop(_PENDING, None)
