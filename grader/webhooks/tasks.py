"""Delivering a graded submission's result to a webhook: signed, retried with growing
delays, every attempt recorded (the instructor sees them under Deliveries)."""

from __future__ import annotations

import logging
import time

import requests

from grader import db, outbound
from grader import metrics
from grader.settings import settings
from grader.submissions.models import Submission
from grader.submissions.notify import on_finished
from grader.tasks import backoff, celery
from grader.webhooks import DELIVER_TASK, EVENT, Webhook, WebhookDelivery, hooks_for, payload, sign

log = logging.getLogger(__name__)

MAX_TRIES = 8
TRY_AGAIN = (408, 425, 429)


@on_finished
def deliveries(session, row: Submission) -> list[tuple[str, list]]:
    """A finished submission's result (graded or not: a client waits for either) goes
    to each webhook of the API key it came through."""
    return [(DELIVER_TASK, [row.id, webhook_id]) for webhook_id in hooks_for(session, row.id)]


@celery.task(name=DELIVER_TASK, bind=True, max_retries=MAX_TRIES, acks_late=True)
def deliver(self, submission_id: str, webhook_id: int) -> str:
    config = settings()
    with db.transaction() as session:
        row = session.get(Submission, submission_id)
        hook = session.get(Webhook, webhook_id)
        if row is None or hook is None or not hook.active:
            return "missing"
        body, url, secret = payload(row), hook.url, hook.secret
    timestamp = str(int(time.time()))
    headers = {"Content-Type": "application/json", "User-Agent": "autograd-grader-webhooks",
               "X-Grader-Event": EVENT, "X-Grader-Delivery": f"{submission_id}-{webhook_id}",
               "X-Grader-Timestamp": timestamp}
    attempt, status, error = self.request.retries + 1, None, None
    started = time.monotonic()
    try:
        signed = {**headers, "X-Grader-Signature": sign(secret, timestamp, body)}
        with outbound.session(config.http_timeout_s, user_agent="autograd-grader-webhooks") as client:
            status = client.post(url, data=body, headers=signed).status_code
    except outbound.Refused as exc:
        # Checked as the request left: the name may point somewhere internal by now.
        with db.transaction() as session:
            session.add(WebhookDelivery(webhook_id=webhook_id, submission_id=submission_id, attempt=attempt,
                                        ok=False, error=f"not sent: {exc}"[:2000], request_headers=headers))
        log.warning("webhook %s: not sent (%s)", webhook_id, exc)
        metrics.WEBHOOK_DELIVERIES.labels("not_sent").inc()
        return "refused"
    except requests.RequestException as exc:
        error = f"{type(exc).__name__}: {exc}"[:2000]
    ok = status is not None and 200 <= status < 300
    with db.transaction() as session:
        session.add(WebhookDelivery(webhook_id=webhook_id, submission_id=submission_id, attempt=attempt, ok=ok,
                                    status_code=status, error=error,
                                    duration_ms=int((time.monotonic() - started) * 1000),
                                    request_headers=headers))
    if ok:
        metrics.WEBHOOK_DELIVERIES.labels("delivered").inc()
        return "delivered"
    if status is not None and 400 <= status < 500 and status not in TRY_AGAIN:
        log.warning("webhook %s refused submission %s (%s); not retrying", webhook_id, submission_id, status)
        metrics.WEBHOOK_DELIVERIES.labels("refused").inc()
        return "refused"
    if self.request.retries >= MAX_TRIES:
        log.error("webhook %s: submission %s not delivered after %d tries", webhook_id, submission_id, attempt)
        metrics.WEBHOOK_DELIVERIES.labels("gave_up").inc()
        return "gave_up"
    metrics.WEBHOOK_DELIVERIES.labels("retrying").inc()
    log.warning("webhook %s: delivery of %s failed (%s); trying again", webhook_id, submission_id,
                status or error)
    raise self.retry(countdown=backoff(self.request.retries, config.retry_base_s))
