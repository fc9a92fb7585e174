"""Sending a queued mail: to the SMTP server, retried with growing delays, each try
recorded; or to the outbox where no server is set. And the sweeper for mails whose task
was lost (Redis down as they were queued)."""

from __future__ import annotations

import logging
import time
from datetime import timedelta
from email.message import EmailMessage
from email.utils import formataddr, format_datetime, make_msgid

from sqlalchemy import select

from grader import db
from grader.db import now
from grader.mail import DELIVER_TASK, HELD, LINK, digest
from grader.mail.models import Mail, MailAttempt
from grader.mail.transport import NotSent, send, server_from, to_outbox
from grader.settings import settings
from grader.tasks import NOTIFY_QUEUE, backoff, celery, send_task

log = logging.getLogger(__name__)

MAX_TRIES = 8
SWEEP_TASK = "grader.mail.sweep"
DIGEST_TASK = "grader.mail.digest"
LOST_AFTER = timedelta(minutes=10)  # queued this long with no try: its task was lost


def message(mail: Mail, link: str | None) -> EmailMessage:
    config = settings()
    text, html = mail.text, mail.html
    if mail.has_link:
        text, html = text.replace(LINK, link or ""), html.replace(LINK, link or "")
    out = EmailMessage()
    out["Subject"] = mail.subject
    out["From"] = formataddr(("Autograd grader", config.mail_from))
    out["To"] = mail.to_address
    out["Date"] = format_datetime(mail.created_at)
    out["Message-ID"] = make_msgid(f"mail{mail.id}", domain=config.mail_from.rpartition("@")[2] or None)
    out["Auto-Submitted"] = "auto-generated"  # no vacation replies to us
    if mail.unsubscribe:  # RFC 8058: the mail program's own "unsubscribe" button, one POST
        out["List-Unsubscribe"] = f"<{mail.unsubscribe}>"
        out["List-Unsubscribe-Post"] = "List-Unsubscribe=One-Click"
    out.set_content(text)
    out.add_alternative(html, subtype="html")
    out["Content-Language"] = mail.language  # after the content, which would clear it
    return out


@celery.task(name=DELIVER_TASK, bind=True, max_retries=MAX_TRIES, acks_late=True)
def deliver(self, mail_id: int, link: str | None = None) -> str:
    config = settings()
    with db.transaction() as session:
        mail = session.get(Mail, mail_id)
        if mail is None or mail.status != "queued":
            return "nothing to send"
        out = message(mail, link)
        kind = mail.kind
    started = time.monotonic()
    error, lasting = None, False
    try:
        server = server_from(config.smtp_url, config.http_timeout_s)
        if server is None:
            to_outbox(config.instance_dir / "outbox", f"{mail_id:06d}-{kind}.eml", out)
        else:
            send(server, out)
    except NotSent as exc:
        error, lasting = str(exc), exc.lasting
    except (ValueError, OSError) as exc:  # a bad GRADER_SMTP_URL, an outbox that cannot be written
        error = f"{type(exc).__name__}: {exc}"
    final = error is None or lasting or self.request.retries >= MAX_TRIES
    with db.transaction() as session:
        mail = session.get(Mail, mail_id)
        session.add(MailAttempt(mail_id=mail_id, ok=error is None, error=error and error[:2000],
                                duration_ms=int((time.monotonic() - started) * 1000)))
        mail.attempts = (mail.attempts or 0) + 1
        mail.last_error = error and error[:2000]
        if error is None:
            mail.status, mail.sent_at = ("outbox" if server is None else "sent"), now()
        elif final:
            mail.status = "failed"
    if error is None:
        return "sent"
    if final:
        log.error("mail %s (%s) not sent%s: %s", mail_id, kind, "" if lasting else " after every try", error)
        return "failed"
    log.warning("mail %s (%s) not sent yet (%s); trying again", mail_id, kind, error)
    raise self.retry(countdown=backoff(self.request.retries, min(config.retry_base_s, 30.0)))


@celery.task(name=SWEEP_TASK)
def sweep() -> int:
    """Mails queued long ago that no try reached (their task lost as Redis went down) are
    handed to a worker again. Not those with a link, which only their task held: a mail
    whose task is merely late behind a queue of grades still goes, and one whose task was
    lost stays queued on the administrators' page, for its user to ask again."""
    with db.transaction() as session:
        again = list(session.scalars(select(Mail.id).where(
            Mail.status == "queued", Mail.attempts == 0, Mail.has_link.is_(False),
            Mail.created_at < now() - LOST_AFTER).limit(500)))
    for mail_id in again:
        send_task(DELIVER_TASK, [mail_id, None], queue=NOTIFY_QUEUE)
    return len(again)


@celery.task(name=DIGEST_TASK)
def send_digests(database_url: str | None = None) -> int:
    """Each address with notices held over its hour's limit gets them as one mail, once the
    hour has room. Returns how many digests were sent."""
    sent = 0
    with db.transaction(database_url) as session:
        addresses = list(session.scalars(select(Mail.to_address).where(Mail.status == HELD).distinct().limit(1000)))
    for address in addresses:
        with db.transaction(database_url) as session:
            sent += digest(session, address) is not None
    return sent
