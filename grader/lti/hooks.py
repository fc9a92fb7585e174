"""What happens after a submission is graded, beyond the grade itself: its score goes to
each LMS line item the student launched the exercise from, and its result to each
webhook of the API key it came through. Each is its own retried task, enqueued here
after the grade's transaction committed; nothing here ever fails the grade."""

from __future__ import annotations

import logging

from sqlalchemy import select

from grader import db
from grader.lti.models import LtiGradeTarget
from grader.models import Submission
from grader.webhooks import DELIVER_TASK, hooks_for

log = logging.getLogger(__name__)

PUBLISH_SCORE_TASK = "grader.lti.publish_score"
QUEUE = "cpu"  # every deployment has CPU workers; these tasks only talk HTTP


def after_grade(submission_id: str, database_url: str | None = None) -> int:
    """Enqueue score passback (when graded) and webhook deliveries (when graded or
    failed: a client waits for either) for a finished submission; returns how many
    tasks were sent."""
    try:
        with db.transaction(database_url) as session:
            row = session.get(Submission, submission_id)
            if row is None:
                return 0
            targets = [] if row.status != "graded" else list(session.scalars(select(LtiGradeTarget.id).where(
                LtiGradeTarget.user_id == row.user_id, LtiGradeTarget.exercise_slug == row.exercise_slug)))
            hooks = hooks_for(session, submission_id)
        from worker.app import celery

        for target_id in targets:
            celery.send_task(PUBLISH_SCORE_TASK, args=[submission_id, target_id], queue=QUEUE)
        for webhook_id in hooks:
            celery.send_task(DELIVER_TASK, args=[submission_id, webhook_id], queue=QUEUE)
        return len(targets) + len(hooks)
    except Exception:  # the grade is stored; a lost notification must not undo it
        log.exception("could not enqueue the notifications of submission %s", submission_id)
        return 0


def backoff(retries: int, base: float, cap: float = 600.0) -> float:
    """Seconds before the next try: base, 2*base, 4*base... at most ``cap`` (below the
    broker's visibility timeout, so a waiting task is not handed out twice)."""
    return min(cap, base * 2 ** retries)
