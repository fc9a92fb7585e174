"""Webhooks: an API client registers a callback URL; when one of its submissions is
graded, the service POSTs the result there, signed.

Signature: ``X-Grader-Signature: sha256=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>``
with ``X-Grader-Timestamp: <unix seconds>``. A receiver recomputes the HMAC over the
exact bytes it received and refuses timestamps older than a few minutes (replays).
The secret is shown once, when the webhook is registered.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from datetime import datetime

from sqlalchemy import JSON, Boolean, DateTime, ForeignKey, Integer, String, Text, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from grader import outbound
from grader.db import Base, now
from grader.submissions.models import Submission
from grader.submissions import notebooks, shown_external_id

DELIVER_TASK = "grader.webhooks.deliver"
EVENT = "submission.completed"


class Webhook(Base):
    """A callback URL of an API key: results of the submissions made with that key go there."""

    __tablename__ = "webhooks"

    id: Mapped[int] = mapped_column(primary_key=True)
    api_key_id: Mapped[int] = mapped_column(ForeignKey("api_keys.id", ondelete="CASCADE"), index=True)
    url: Mapped[str] = mapped_column(String(2000))
    secret: Mapped[str] = mapped_column(String(100))  # needed in clear to sign; never shown again
    active: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)


class ApiSubmission(Base):
    """Which API key made a submission (its webhooks hear about it)."""

    __tablename__ = "api_submissions"

    submission_id: Mapped[str] = mapped_column(ForeignKey("submissions.id", ondelete="CASCADE"),
                                               primary_key=True)
    api_key_id: Mapped[int] = mapped_column(ForeignKey("api_keys.id", ondelete="CASCADE"), index=True)


class WebhookDelivery(Base):
    """One attempt at delivering one submission's result to one webhook."""

    __tablename__ = "webhook_deliveries"

    id: Mapped[int] = mapped_column(primary_key=True)
    webhook_id: Mapped[int] = mapped_column(ForeignKey("webhooks.id", ondelete="CASCADE"), index=True)
    submission_id: Mapped[str] = mapped_column(ForeignKey("submissions.id", ondelete="CASCADE"), index=True)
    attempt: Mapped[int] = mapped_column(Integer, default=1)
    ok: Mapped[bool] = mapped_column(Boolean, default=False)
    status_code: Mapped[int | None] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(Text)
    duration_ms: Mapped[int | None] = mapped_column(Integer)
    request_headers: Mapped[dict | None] = mapped_column(JSON)  # without the signature
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now, index=True)


class WebhookError(ValueError):
    pass


def check_url(url) -> str:
    """The URL, if a delivery may go there (grader.outbound's rules), else WebhookError.
    Checked when registered and again, by the outbound client, on each delivery."""
    try:
        outbound.vet(url)
    except outbound.Refused as exc:
        raise WebhookError(f"'url': {exc}") from None
    return url


def register(session: Session, api_key_id: int, url: str) -> tuple[Webhook, str]:
    """Add a webhook; returns the row and its secret (the caller shows it once)."""
    secret = "whsec_" + secrets.token_urlsafe(32)
    row = Webhook(api_key_id=api_key_id, url=check_url(url), secret=secret, active=True)
    session.add(row)
    session.flush()
    return row, secret


def sign(secret: str, timestamp: int | str, body: bytes) -> str:
    digest = hmac.new(secret.encode("utf-8"), f"{timestamp}.".encode("ascii") + body, hashlib.sha256)
    return "sha256=" + digest.hexdigest()


def verify(secret: str, timestamp: str, body: bytes, signature: str, *, now_s: float,
           tolerance_s: float = 300) -> bool:
    """What a receiver does (and the tests): the signature matches and the timestamp is recent."""
    try:
        age = abs(now_s - int(timestamp))
    except (TypeError, ValueError):
        return False
    return age <= tolerance_s and hmac.compare_digest(sign(secret, timestamp, body), signature or "")


def payload(row: Submission) -> bytes:
    """The body POSTed: the submission's result, as GET /api/v1/submissions/<id> shows it."""
    document = {
        "event": EVENT,
        "submission": {
            "id": row.id, "exercise": row.exercise_slug, "exercise_version": row.exercise_version,
            "user": shown_external_id(row.user), "status": row.status, "score": row.score,
            "max_score": row.max_score, "failure_reason": row.failure_reason,
            "report": notebooks.located_report(row.report, row.notebook),
            "notebook": notebooks.described(row.notebook),
            "finished_at": row.finished_at.isoformat() if row.finished_at else None,
        },
    }
    return json.dumps(document, separators=(",", ":"), sort_keys=True).encode("utf-8")


def hooks_for(session: Session, submission_id: str) -> list[int]:
    """The active webhooks that hear about this submission."""
    return list(session.scalars(
        select(Webhook.id).join(ApiSubmission, ApiSubmission.api_key_id == Webhook.api_key_id)
        .where(ApiSubmission.submission_id == submission_id, Webhook.active.is_(True))))
