"""Assignment and Grade Services: publish a student's score to an LMS line item.

Never inside a web request: hooks.after_grade enqueues it after each grade. The score
is the student's best on the exercise (GRADER_LTI_SCORE_POLICY=latest: the newest),
stamped with the grade's finish time, so a delivery arriving late carries an older
timestamp than a newer score and the platform keeps the newer one.
"""

from __future__ import annotations

import logging

from sqlalchemy import func, select

from grader import db
from grader.lti import keys
from grader.lti.hooks import PUBLISH_SCORE_TASK, backoff
from grader.lti.models import LtiGradeTarget, LtiScorePost
from grader.lti.platforms import as_platform
from grader.lti.tool import KeyPair, ServiceError, post_score
from grader.models import Submission
from grader.settings import settings
from worker.app import celery

log = logging.getLogger(__name__)

MAX_TRIES = 8
GIVE_UP = range(400, 500)  # the platform refuses the request itself: trying again changes nothing
TRY_AGAIN = (408, 425, 429)


def _score(session, row: Submission, policy: str) -> float:
    if policy == "latest":
        return float(row.score or 0)
    best = session.scalar(select(func.max(Submission.score)).where(
        Submission.user_id == row.user_id, Submission.exercise_slug == row.exercise_slug,
        Submission.status == "graded"))
    return float(max(best or 0, row.score or 0))


@celery.task(name=PUBLISH_SCORE_TASK, bind=True, max_retries=MAX_TRIES, acks_late=True)
def publish_score(self, submission_id: str, target_id: int) -> str:
    config = settings()
    with db.transaction() as session:
        row = session.get(Submission, submission_id)
        target = session.get(LtiGradeTarget, target_id)
        if row is None or target is None or row.status != "graded":
            return "missing"
        if config.lti_score_policy == "latest" and session.scalar(select(func.count()).where(
                Submission.user_id == row.user_id, Submission.exercise_slug == row.exercise_slug,
                Submission.status == "graded", Submission.finished_at > row.finished_at)):
            return "superseded"  # a newer grade's own task sends the latest score
        platform = as_platform(target.platform)
        key_row = keys.current(session)
        key = KeyPair(kid=key_row.kid, private_pem=key_row.private_pem, public_pem=key_row.public_pem)
        score = _score(session, row, config.lti_score_policy)
        maximum = float(row.max_score or row.exercise.max_score or 0)
        lineitem, user_id, finished = target.lineitem_url, target.lti_user_id, row.finished_at
    attempt = self.request.retries + 1
    try:
        status = post_score(platform, key, lineitem_url=lineitem, user_id=user_id, score=score,
                            maximum=maximum, timestamp=finished, timeout=config.http_timeout_s)
    except ServiceError as exc:
        stale = exc.status == 409  # the platform holds a newer score: ours is late, and that is fine
        _record(target_id, submission_id, score, maximum, attempt, "stale" if stale else "error",
                exc.status, None if stale else exc.detail)
        if stale:
            return "stale"
        if exc.status in GIVE_UP and exc.status not in TRY_AGAIN:
            log.error("LTI score of %s refused by %s (%s); not retrying", submission_id, platform.issuer,
                      exc.status)
            return "refused"
        if self.request.retries >= MAX_TRIES:
            log.error("LTI score of %s not delivered to %s after %d tries", submission_id, platform.issuer,
                      attempt)
            return "gave_up"
        log.warning("LTI score of %s to %s failed (%s); trying again", submission_id, platform.issuer,
                    exc.status or "unreachable")
        raise self.retry(countdown=backoff(self.request.retries, config.retry_base_s))
    _record(target_id, submission_id, score, maximum, attempt, "sent", status, None)
    log.info("LTI score %g/%g of %s sent to %s", score, maximum, submission_id, platform.issuer)
    return "sent"


def _record(target_id, submission_id, score, maximum, attempt, outcome, status, error) -> None:
    with db.transaction() as session:
        session.add(LtiScorePost(target_id=target_id, submission_id=submission_id, score_given=score,
                                 score_maximum=maximum, attempt=attempt, outcome=outcome, status_code=status,
                                 error=(error or None) and error[:2000]))
