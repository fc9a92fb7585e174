"""Assignment and Grade Services: publish a student's score to an LMS line item; and
Names and Role Provisioning Services: sync an LMS course's roster (grader.lti.roster).

Never inside a web request: its listener enqueues it after each grade (submissions.notify). For an
assignment's line item the score is the one that counts under its rules (late penalty, best or
latest, an override); otherwise the student's best on the exercise (GRADER_LTI_SCORE_POLICY=latest: the newest),
stamped with the grade's finish time, so a delivery arriving late carries an older
timestamp than a newer score and the platform keeps the newer one. A score set by hand for
a student with no grade goes on its own, stamped with when it was set.

An assignment that holds its hidden tests' results until the student's due date
(courses.release_of, extensions included) holds its score too: until then its line item
is told only that the work is in ("Pending", no score), whether a grade, a score set by
hand or an extension sent it, and the target is marked with the release time; every
minute (beat) ``release_held`` sends each such target whose time has come the score that
counts, once, through the same two tasks, stamped no earlier than the release, so it is
newer than the pending post.

A target recorded from a placement without a line item (only the context's container)
gets its line item here, once: the resource link's, found in the container or created
there, then stored on the target.

Nothing goes to an LMS whose registration is disabled or deleted (grader.lti.platforms):
the tasks skip it, saying so in the log, and held scores wait for it to be enabled.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from datetime import datetime

import redis as redis_py
from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError

from grader import db
from grader.clock import as_utc, now
from grader.accounts.models import User
from grader.catalog.models import Exercise
from grader import courses
from grader.courses.models import Assignment, ScoreOverride
from grader.lti import keys, roster
from grader.lti.models import LtiGradeTarget, LtiPlatform, LtiScorePost
from grader.lti.platforms import as_platform, is_active, lms_user, off
from grader.lti.tool import KeyPair, Platform, ServiceError, find_or_create_lineitem, post_score
from grader import metrics
from grader.settings import settings
from grader.submissions.models import Submission, SubmissionStatus
from grader.submissions.notify import on_finished, on_standing_changed
from grader.tasks import NOTIFY_QUEUE, backoff, celery, send_task

log = logging.getLogger(__name__)

PUBLISH_SCORE_TASK = "grader.lti.publish_score"
PUBLISH_STANDING_TASK = "grader.lti.publish_standing"
RELEASE_HELD_TASK = "grader.lti.release_held"
RELEASE_BATCH = 500  # targets looked at per run; any beyond wait for the next run, a minute later
SYNC_ROSTER_TASK = roster.SYNC_ROSTER_TASK
MAX_TRIES = 8
GIVE_UP = range(400, 500)  # the platform refuses the request itself: trying again changes nothing
TRY_AGAIN = (408, 425, 429)


@on_finished
def score_targets(session, row: Submission) -> list[tuple[str, list]]:
    """A graded submission's score goes to each LMS line item the student launched
    the exercise from."""
    if row.status != SubmissionStatus.GRADED:
        return []
    # An assignment's submission goes to its assignment's line items; practice to the exercise's.
    targets = session.scalars(select(LtiGradeTarget.id).where(
        LtiGradeTarget.user_id == row.user_id, LtiGradeTarget.exercise_slug == row.exercise_slug,
        LtiGradeTarget.assignment_id.is_(None) if row.assignment_id is None
        else LtiGradeTarget.assignment_id == row.assignment_id))
    return [(PUBLISH_SCORE_TASK, [row.id, target_id]) for target_id in targets]


@on_standing_changed
def standing_targets(session, assignment_id: int, user_id: int, at: str) -> list[tuple[str, list]]:
    """A score set by hand or an extension changes what counts: the assignment's line items
    get it, stamped with when it changed (a newer score than the last grade's). Sent with
    the student's latest grade, whose record it is kept with.

    A student with no grade has a score set by hand sent on its own: to their line items,
    or, never having launched the assignment (a member from the roster), to the line items
    the launches of others made for it on the student's platform. Neither grade nor such a
    score (an extension alone): nothing to send. While the student's results are held, the
    tasks send "pending" instead."""
    latest = _latest_grade(session, assignment_id, user_id)
    targets = list(session.scalars(select(LtiGradeTarget.id).where(
        LtiGradeTarget.user_id == user_id, LtiGradeTarget.assignment_id == assignment_id)))
    if latest is not None:
        return [(PUBLISH_SCORE_TASK, [latest, target_id, at]) for target_id in targets]
    if not _has_override(session, assignment_id, user_id):
        return []
    targets = targets or _derived_targets(session, assignment_id, user_id)
    return [(PUBLISH_STANDING_TASK, [target_id, at]) for target_id in targets]


def _latest_grade(session, assignment_id: int, user_id: int) -> str | None:
    """The student's latest graded submission to the assignment: what counts is sent with it."""
    return session.scalar(select(Submission.id).where(
        Submission.assignment_id == assignment_id, Submission.user_id == user_id,
        Submission.status == SubmissionStatus.GRADED).order_by(Submission.finished_at.desc()).limit(1))


def _has_override(session, assignment_id: int, user_id: int) -> bool:
    return session.scalar(select(ScoreOverride.id).where(ScoreOverride.assignment_id == assignment_id,
                                                         ScoreOverride.user_id == user_id)) is not None


def _derived_targets(session, assignment_id: int, user_id: int) -> list[int]:
    """Targets made for a student of a platform who never launched the assignment, after
    those others' launches made: the same line item (or, for a placement whose line item
    is found later, the same link), for the student's LMS user id (their key's sub)."""
    user = session.get(User, user_id)
    known = lms_user(user.external_id if user is not None else None)
    if known is None:
        return []  # a local user: no LMS knows them
    platform_id, sub = known
    others = session.scalars(select(LtiGradeTarget).where(
        LtiGradeTarget.assignment_id == assignment_id, LtiGradeTarget.platform_id == platform_id,
        LtiGradeTarget.user_id != user_id)).all()
    made, seen = [], set()
    for other in sorted(others, key=lambda t: (t.lineitem_url is None, t.id)):  # known line items first
        link = ("link", other.lineitems_url, other.resource_link_id)
        if ("item", other.lineitem_url) in seen or link in seen:
            continue
        seen |= {("item", other.lineitem_url), link} if other.lineitem_url else {link}
        target = LtiGradeTarget(user_id=user_id, exercise_slug=other.exercise_slug, assignment_id=assignment_id,
                                platform_id=platform_id, lineitem_url=other.lineitem_url,
                                lineitems_url=other.lineitems_url, resource_link_id=other.resource_link_id,
                                lti_user_id=sub, scopes=list(other.scopes or ()))
        try:
            with session.begin_nested():
                session.add(target)
        except IntegrityError:
            continue  # the student has that line item's target already (another task made it)
        made.append(target.id)
    return made


def _score(session, row: Submission, policy: str) -> float:
    if row.assignment_id is not None:
        assignment = session.get(Assignment, row.assignment_id)
        counted = courses.standing(session, assignment, row.user).counted
        return float(counted.score or 0)
    if policy == "latest":
        return float(row.score or 0)
    best = session.scalar(select(func.max(Submission.score)).where(
        Submission.user_id == row.user_id, Submission.exercise_slug == row.exercise_slug,
        Submission.status == "graded", Submission.assignment_id.is_(None)))
    return float(max(best or 0, row.score or 0))


@dataclass(frozen=True)
class _Outgoing:
    """One score to send, as the database had it before any call to the platform."""

    target_id: int
    submission_id: str | None  # the grade it is kept with; None: a score set by hand, no grade
    platform: Platform
    key: KeyPair
    lineitem: str | None
    user_id: str  # the platform's
    score: float | None  # None: held with the hidden results, "pending" is sent
    maximum: float | None
    timestamp: datetime
    wanted: dict | None  # what the line item is made with, should the link have none yet

    @property
    def what(self) -> str:  # for the log
        return self.submission_id or f"the score set by hand of target {self.target_id}"

    @property
    def shown(self) -> str:  # for the log
        return "pending" if self.score is None else f"{self.score:g}/{self.maximum:g}"


def _held(session, target: LtiGradeTarget, assignment: Assignment | None) -> datetime | None:
    """Until when the target's score is held with the student's hidden results on the
    assignment (the rule is courses.release_of); None: the score goes now (practice, never
    held, released). The target is marked with it, so that release_held sends the score
    then; a score going now clears the mark, the release having nothing left to send."""
    if assignment is None:
        return None
    target.held_until = until = courses.release_of(session, assignment, target.user_id)
    return until


def _wanted(target: LtiGradeTarget, exercise: Exercise) -> dict | None:
    return None if target.lineitem_url else dict(
        lineitems_url=target.lineitems_url, resource_link_id=target.resource_link_id,
        label=exercise.title.get("en") or exercise.slug, score_maximum=float(exercise.max_score),
        resource_id=exercise.slug, tag=f"grader:{exercise.slug}")


@celery.task(name=PUBLISH_SCORE_TASK, bind=True, max_retries=MAX_TRIES, acks_late=True)
def publish_score(self, submission_id: str, target_id: int, changed_at: str | None = None) -> str:
    config = settings()
    with db.transaction() as session:
        row = session.get(Submission, submission_id)
        target = session.get(LtiGradeTarget, target_id)
        if row is None or target is None or row.status != "graded":
            return "missing"
        if not is_active(target.platform):
            return _platform_off(target, submission_id)
        practice = row.assignment_id is None
        if practice and config.lti_score_policy == "latest" and session.scalar(select(func.count()).where(
                Submission.user_id == row.user_id, Submission.exercise_slug == row.exercise_slug,
                Submission.status == "graded", Submission.finished_at > row.finished_at)):
            return "superseded"  # a newer grade's own task sends the latest score
        finished = row.finished_at
        # what counts changed after the grade (an override, an extension, the release): newer than it
        if changed_at:
            finished = max(finished, datetime.fromisoformat(changed_at), key=as_utc)
        held = _held(session, target, None if practice else session.get(Assignment, row.assignment_id))
        out = _Outgoing(target_id=target_id, submission_id=submission_id, platform=as_platform(target.platform),
                        key=keys.current_pair(session), lineitem=target.lineitem_url, user_id=target.lti_user_id,
                        score=None if held else _score(session, row, config.lti_score_policy),
                        maximum=None if held else float(row.max_score or row.exercise.max_score or 0),
                        timestamp=finished, wanted=_wanted(target, row.exercise))
    return _deliver(self, out, config)


@celery.task(name=PUBLISH_STANDING_TASK, bind=True, max_retries=MAX_TRIES, acks_late=True)
def publish_standing(self, target_id: int, changed_at: str | None = None, released_at: str | None = None) -> str:
    """The score that counts for a student with no grade (a score set by hand) to the
    target's line item, stamped with when it was set: a grade finished later is newer and
    the platform keeps that one. ``released_at``: sent at the release of held results,
    stamped no earlier than it (newer than the pending post)."""
    config = settings()
    with db.transaction() as session:
        target = session.get(LtiGradeTarget, target_id)
        assignment = session.get(Assignment, target.assignment_id) if target and target.assignment_id else None
        if assignment is None:
            return "missing"
        if not is_active(target.platform):
            return _platform_off(target, f"the score set by hand of target {target_id}")
        standing = courses.standing(session, assignment, session.get(User, target.user_id))
        if standing.override is None or standing.counted.score is None:
            return "missing"  # nothing set by hand (any more): nothing to send
        exercise = session.get(Exercise, assignment.exercise_slug)
        stamp = as_utc(standing.override.set_at)
        if released_at:
            stamp = max(stamp, datetime.fromisoformat(released_at), key=as_utc)
        held = _held(session, target, assignment)
        out = _Outgoing(target_id=target_id, submission_id=None, platform=as_platform(target.platform),
                        key=keys.current_pair(session), lineitem=target.lineitem_url, user_id=target.lti_user_id,
                        score=None if held else float(standing.counted.score),
                        maximum=None if held else float(exercise.max_score or 0),
                        timestamp=stamp, wanted=_wanted(target, exercise))
    return _deliver(self, out, config)


def _platform_off(target: LtiGradeTarget, what: str) -> str:
    """Nothing goes to an LMS whose registration is disabled or deleted. A held score stays
    marked (release_held passes it by), so that it goes once the registration is enabled."""
    log.info("LTI score of %s not sent: the registration of %s (platform %s) is %s", what, target.platform.issuer,
             target.platform_id, off(target.platform))
    return "platform_off"


def _deliver(task, out: _Outgoing, config) -> str:
    """Send ``out`` (finding its line item first where the target has none), record the
    attempt, and say how it went; a failure the platform may get over is tried again."""
    attempt = task.request.retries + 1
    step, lineitem = "line item", out.lineitem
    try:
        if lineitem is None:
            lineitem = _lineitem(out.target_id, out.platform, out.key, out.wanted, config)
            if lineitem is None:
                return "missing"  # the target was deleted meanwhile (or as a duplicate)
        step = "score"
        status = post_score(out.platform, out.key, lineitem_url=lineitem, user_id=out.user_id, score=out.score,
                            maximum=out.maximum, timestamp=out.timestamp, timeout=config.http_timeout_s)
    except ServiceError as exc:
        # 409 to a score: the platform holds a newer one, ours is late, and that is fine
        stale = step == "score" and exc.status == 409
        _record(out.target_id, out.submission_id, out.score, out.maximum, attempt, "stale" if stale else "error",
                exc.status, None if stale else exc.detail if step == "score" else f"line item: {exc.detail}")
        if stale:
            metrics.LTI_SCORE_POSTS.labels("stale").inc()
            return "stale"
        if exc.status in GIVE_UP and exc.status not in TRY_AGAIN:
            log.error("LTI %s of %s refused by %s (%s); not retrying", step, out.what, out.platform.issuer,
                      exc.status)
            metrics.LTI_SCORE_POSTS.labels("refused").inc()
            return "refused"
        if task.request.retries >= MAX_TRIES:
            log.error("LTI score of %s not delivered to %s after %d tries", out.what, out.platform.issuer,
                      attempt)
            metrics.LTI_SCORE_POSTS.labels("gave_up").inc()
            return "gave_up"
        metrics.LTI_SCORE_POSTS.labels("retrying").inc()
        log.warning("LTI %s of %s to %s failed (%s); trying again", step, out.what, out.platform.issuer,
                    exc.status or "unreachable")
        raise task.retry(countdown=backoff(task.request.retries, config.retry_base_s))
    _record(out.target_id, out.submission_id, out.score, out.maximum, attempt, "sent", status, None)
    metrics.LTI_SCORE_POSTS.labels("sent").inc()
    log.info("LTI score %s of %s sent to %s", out.shown, out.what, out.platform.issuer)
    return "sent"


@celery.task(name=RELEASE_HELD_TASK)
def release_held() -> int:
    """Run every minute (beat): each target told "pending" whose release time has come
    gets the score that counts, through the task that sends it for a grade (or a score set
    by hand), stamped with the release time. Each target is claimed (its mark cleared) in
    the database in the transaction that sends its task, so a second run, or two at once,
    send nothing more; one whose release moved later (an extension since) waits for it.
    Returns how many tasks were sent."""
    sent = 0
    for target_id, held_until in _due_targets():
        try:
            sent += _release(target_id, held_until)
        except Exception:  # its claim is rolled back: the next run tries it again
            log.exception("LTI score of target %s not released; trying again next run", target_id)
    return sent


def _due_targets() -> list[tuple[int, datetime]]:
    with db.transaction() as session:
        # A disabled (or deleted) registration's targets wait, marked, for it to be enabled.
        return [tuple(row) for row in session.execute(
            select(LtiGradeTarget.id, LtiGradeTarget.held_until)
            .join(LtiPlatform, LtiPlatform.id == LtiGradeTarget.platform_id)
            .where(LtiGradeTarget.held_until <= now(), LtiPlatform.disabled_at.is_(None),
                   LtiPlatform.deleted_at.is_(None))
            .order_by(LtiGradeTarget.held_until).limit(RELEASE_BATCH))]


def _release(target_id: int, held_until: datetime) -> int:
    """Claim one due target and send its score's task; how many tasks were sent."""
    with db.transaction() as session:
        target = session.get(LtiGradeTarget, target_id)
        assignment = session.get(Assignment, target.assignment_id) if target and target.assignment_id else None
        if assignment is None:  # nothing to release it to: unmarked, lest it stand first in every run
            if target is not None:
                _swap_mark(session, target_id, held_until, None)
            return 0
        later = courses.release_of(session, assignment, target.user_id)
        # Only the run whose update finds the mark as it read it goes on: another has it.
        if not _swap_mark(session, target_id, held_until, later):
            return 0
        if later is not None:
            return 0  # still held: its new time is marked
        at = as_utc(held_until).isoformat()
        latest = _latest_grade(session, target.assignment_id, target.user_id)
        if latest is not None:
            task = (PUBLISH_SCORE_TASK, [latest, target_id, at])
        elif _has_override(session, target.assignment_id, target.user_id):
            task = (PUBLISH_STANDING_TASK, [target_id, None, at])
        else:
            return 0  # a score set by hand taken back meanwhile: nothing counts, "pending" stays true
        send_task(*task, queue=NOTIFY_QUEUE)  # before the claim commits: a failure leaves it marked
    log.info("LTI score of target %s released (held until %s)", target_id, at)
    return 1


def _swap_mark(session, target_id: int, seen: datetime, new: datetime | None) -> bool:
    """Set the target's mark to ``new`` where it is still ``seen``; whether it was."""
    done = session.execute(update(LtiGradeTarget).where(
        LtiGradeTarget.id == target_id, LtiGradeTarget.held_until == seen).values(held_until=new)
        .execution_options(synchronize_session=False))
    return done.rowcount == 1


@celery.task(name=SYNC_ROSTER_TASK, bind=True, max_retries=MAX_TRIES, acks_late=True)
def sync_roster(self, course_id: int) -> str:
    """Read an LMS course's roster and apply it (grader.lti.roster). An LMS failing is
    tried again with backoff, one refusing the request itself (4xx) is not; either way the
    course page shows the error."""
    config = settings()
    try:
        result = roster.sync(course_id, timeout=config.http_timeout_s)
    except roster.PlatformOff as exc:
        log.info("LTI roster of course %s skipped: %s", course_id, exc)
        return "platform_off"
    except roster.NoRoster:
        return "missing"
    except (ServiceError, IntegrityError) as exc:
        status = getattr(exc, "status", None)
        if status in GIVE_UP and status not in TRY_AGAIN:
            log.error("LTI roster of course %s refused by its LMS (%s); not retrying", course_id, status)
            metrics.LTI_ROSTER_SYNCS.labels("refused").inc()
            return "refused"
        if self.request.retries >= MAX_TRIES:
            log.error("LTI roster of course %s not read after %d tries", course_id, self.request.retries + 1)
            metrics.LTI_ROSTER_SYNCS.labels("gave_up").inc()
            return "gave_up"
        metrics.LTI_ROSTER_SYNCS.labels("retrying").inc()
        log.warning("LTI roster of course %s failed (%s); trying again", course_id, status or exc)
        raise self.retry(countdown=backoff(self.request.retries, config.retry_base_s))
    metrics.LTI_ROSTER_SYNCS.labels("synced").inc()
    log.info("LTI roster of course %s synced: %s", course_id, result)
    return "synced"


def _lineitem(target_id: int, platform: Platform, key: KeyPair, wanted: dict, config) -> str | None:
    """The line item of a target recorded without one: another target's of the same link,
    else the platform's (found or created); stored on the target. None when the target is
    gone, or turned out to duplicate another of the same user (then it is deleted)."""
    name = "lti:lineitem-lock:" + hashlib.sha256(
        f"{platform.id}|{wanted['lineitems_url']}|{wanted['resource_link_id']}".encode()).hexdigest()
    # One task at a time per link: two first grades at once (two students, two workers)
    # would each find nothing and create two columns in the gradebook.
    hold = 4 * config.http_timeout_s + 10  # a token, a page of line items, a creation
    client = redis_py.Redis.from_url(config.redis_url)
    lock = client.lock(name, timeout=hold, blocking_timeout=hold)
    try:
        try:
            if not lock.acquire():
                raise ServiceError(None, "another task is still finding this link's line item")
        except redis_py.RedisError as exc:
            raise ServiceError(None, f"no lock on the link's line item: {exc}") from None
        try:
            url = _known_lineitem(target_id, wanted)
            if url is False:
                return None
            if url is None:
                url = find_or_create_lineitem(platform, key, timeout=config.http_timeout_s, **wanted)
                log.info("LTI line item of link %s on %s: %s", wanted["resource_link_id"], platform.issuer, url)
            return url if _store_lineitem(target_id, url) else None
        finally:
            try:
                lock.release()
            except redis_py.RedisError:
                pass  # expired (it only guards against duplicates) or Redis gone: not ours now either way
    finally:
        client.close()


def _known_lineitem(target_id: int, wanted: dict) -> str | None | bool:
    """What the database already knows: the target's line item (another task stored it),
    another target's of the same link, None (ask the platform), or False (target gone)."""
    with db.transaction() as session:
        target = session.get(LtiGradeTarget, target_id)
        if target is None:
            return False
        return target.lineitem_url or session.scalar(select(LtiGradeTarget.lineitem_url).where(
            LtiGradeTarget.platform_id == target.platform_id,
            LtiGradeTarget.lineitems_url == wanted["lineitems_url"],
            LtiGradeTarget.resource_link_id == wanted["resource_link_id"],
            LtiGradeTarget.lineitem_url.is_not(None)).limit(1))


def _store_lineitem(target_id: int, url: str) -> bool:
    """Remember the target's line item; False when the target is gone or duplicated
    another of the same user and exercise, already posting to that line item (then it is
    deleted, so that the score goes there once)."""
    with db.transaction() as session:
        target = session.get(LtiGradeTarget, target_id)
        if target is None:
            return False
        if target.lineitem_url == url:
            return True
        if session.scalar(select(LtiGradeTarget.id).where(
                LtiGradeTarget.user_id == target.user_id, LtiGradeTarget.exercise_slug == target.exercise_slug,
                LtiGradeTarget.platform_id == target.platform_id, LtiGradeTarget.lineitem_url == url)):
            session.delete(target)
            return False
        target.lineitem_url = url
        return True


def _record(target_id, submission_id, score, maximum, attempt, outcome, status, error) -> None:
    with db.transaction() as session:
        session.add(LtiScorePost(target_id=target_id, submission_id=submission_id, score_given=score,
                                 score_maximum=maximum, attempt=attempt, outcome=outcome, status_code=status,
                                 error=(error or None) and error[:2000]))
