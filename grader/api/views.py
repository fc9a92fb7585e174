"""/api/v1: its blueprint, keys and errors; submissions to create and follow.

Submissions go through grader.submissions like every other way in: the row is
committed first, the grading task enqueued after. This module never imports the
engine; the web process only ever sends tasks by name.
"""

from __future__ import annotations

import functools
import logging
import math
import re

from flask import Blueprint, current_app, g, jsonify, request, url_for
from sqlalchemy import select

from grader import submissions, webhooks
from grader.accounts import keys
from grader.catalog import is_slug
from grader import courses
from grader.accounts.models import User
from grader.courses import comments
from grader.courses.models import Assignment, Course
from grader.courses.times import aware
from grader.db import now
from grader.api import answers
from grader.api.answers import reply
from grader.api.bodies import NewSubmission, NewWebhook, parse
from grader.api.openapi import document
from grader.refusals import Refused
from grader.extensions import bearer, get_db, limiter, one_at_a_time, verified_bearer
from grader.submissions import notebooks
from grader.submissions.models import Submission, SubmissionStatus

log = logging.getLogger(__name__)

bp = Blueprint("api", __name__, url_prefix="/api/v1")

_SUBMISSION_ID = re.compile(r"^[0-9a-f]{32}$")


class ApiError(Refused):
    """A request the API refuses; rendered as {"error": {"code", "message"}} with the
    code's status (grader.refusals, which the OpenAPI document publishes). ``where`` adds the
    place of a ``syntax_error`` to that object: line, column (a notebook's cell, cell_line)."""

    def __init__(self, code: str, message: str, headers: dict | None = None, where: dict | None = None):
        super().__init__(code, message, headers=headers or {}, where=where or {})

    @classmethod
    def of(cls, refusal: Refused, headers: dict | None = None) -> "ApiError":
        """The API's answer to a refusal of the domain: its code, message and where."""
        return cls(refusal.code, refusal.message, headers, getattr(refusal, "where", None))


def error_response(status: int, code: str, message: str, headers: dict | None = None, where: dict | None = None):
    return reply(answers.Error(error=answers.ErrorDetail(**(where or {}), code=code, message=message)), status,
                 headers)


@bp.errorhandler(Refused)
def _refused(exc: Refused):
    """Any refusal an API view lets through (the domain's own, or the API's): its code's
    status, its code and message, and where a syntax error is."""
    return error_response(exc.status, exc.code, exc.message, getattr(exc, "headers", None),
                          getattr(exc, "where", None))


def requires(scope: str, *, personal: str | None = None):
    """The view needs a bearer API key that holds ``scope``; ``personal``: the scope a
    user's personal token needs instead, which holds none beyond keys.PERSONAL_SCOPES (what
    its owner may do there the view asks the domain, as the site does)."""

    def decorator(view):
        @functools.wraps(view)
        def wrapped(**kwargs):
            g.caller = _authenticate()
            needed = personal if personal is not None and g.caller.user_id is not None else scope
            if needed not in g.caller.scopes:
                raise ApiError("insufficient_scope", f"this API key does not have the scope {needed!r}")
            return view(**kwargs)

        wrapped.scope, wrapped.personal_scope = scope, personal
        return wrapped

    return decorator


def _authenticate() -> keys.Caller:
    challenge = {"WWW-Authenticate": 'Bearer realm="grader"'}
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise ApiError("missing_api_key", "send an API key as 'Authorization: Bearer <key>'", challenge)
    try:
        return verified_bearer()  # verified once: the limits before the view saw it too
    except keys.KeyRefused as exc:
        raise ApiError(exc.code, exc.message, challenge) from None


# ------------------------------------------------------------------ submissions

def _submission_limit() -> str:
    return current_app.config["SUBMISSION_RATE_LIMIT"]


def _key_limit() -> str:
    return current_app.config["API_KEY_RATE_LIMIT"]


def _key_prefix() -> str:
    """The whole key's bucket, once the key is verified (extensions.bearer): a key that is not
    valid shares the bucket of no real key, nor its counts in the limit's headers."""
    caller = bearer()
    return "api-key:" + (caller.prefix if caller is not None else "-")


def _practice_limit() -> str:
    return current_app.config["PRACTICE_RATE_LIMIT"]


def _is_practice() -> bool:
    """A practice run asked for (read before the view, for the limits that count it)."""
    body = request.get_json(silent=True) if request.is_json else None
    return isinstance(body, dict) and body.get("practice") is True


def _accepted(response) -> bool:
    return response.status_code == 202


@bp.post("/submissions")
# Per (key, user), and per key whatever the user, so that changing `user` does not reset
# the count; only accepted submissions count, so a client fixing a bad request is not
# locked out by its mistakes; one request of a submitter at a time, so that none passes
# the limits or an assignment's attempts by being sent beside another.
@one_at_a_time
@limiter.shared_limit(_submission_limit, scope="submissions", deduct_when=_accepted, exempt_when=_is_practice)
@limiter.shared_limit(_practice_limit, scope="practice", deduct_when=_accepted,
                      exempt_when=lambda: not _is_practice())
@limiter.limit(_key_limit, key_func=_key_prefix, deduct_when=_accepted)
@requires("submissions:write")
def create_submission():
    # Names an exercise or an assignment, sends a source or a notebook (bodies.NewSubmission);
    # "practice": true makes it a practice run (grader.api.practice), counted for nothing.
    body = parse(NewSubmission, personal=g.caller.user_id is not None)
    target = body.assignment if body.exercise is None else body.exercise
    source = body.source if body.notebook is None else submissions.Notebook(body.notebook)
    user, practice_run = body.user, body.practice
    if isinstance(target, str) and not is_slug(target):
        raise ApiError("unknown_exercise", f"there is no exercise {target[:100]!r}")
    key_id = g.caller.key_id

    def webhook_link(session, row) -> None:  # the key's webhooks hear of the grade
        session.add(webhooks.ApiSubmission(submission_id=row.id, api_key_id=key_id))

    try:
        taken = courses.take(get_db, who=lambda session: caller_user(session, user), source=source,
                             target=lambda session: _own_assignment(session, target) if isinstance(target, int)
                             else target, practice_run=practice_run, way="api",
                             also=None if practice_run else webhook_link,
                             # A service's key tries its own drafts; a personal token is its owner alone.
                             key_id=key_id if g.caller.user_id is None else None)
    except Refused as exc:
        raise _when_to_retry(exc) from None
    if practice_run:
        url = url_for("api.get_practice_run", run_id=taken.id, _external=True)
        accepted = answers.SubmissionAccepted(id=taken.id, url=url, status=SubmissionStatus.QUEUED, practice=True)
    else:
        url = url_for("api.get_submission", submission_id=taken.id, _external=True)
        accepted = answers.SubmissionAccepted(id=taken.id, url=url, status=SubmissionStatus.QUEUED)
    return reply(accepted, 202, {"Location": url})


def _when_to_retry(refusal: Refused) -> ApiError:
    """The API's answer to a refused submission, with Retry-After where waiting helps (a
    cool-down's end, the new-user limit's window)."""
    if isinstance(refusal, ApiError):
        return refusal
    retry, message = getattr(refusal, "retry_after", None), refusal.message
    reopens = getattr(refusal, "reopens_at", None)
    if reopens is not None:
        retry = max(1, math.ceil((reopens - now()).total_seconds()))
        message += f"; it reopens at {reopens.isoformat(timespec='seconds')}"
    return ApiError(refusal.code, message, {"Retry-After": str(retry)} if retry else None,
                    getattr(refusal, "where", None))


def caller_user(session, user: str | None) -> User:
    """Whom a submission is by: a personal token's owner, or the key's own ``user`` (made on
    first sight; key B's "alice" is not key A's, nor an LMS's)."""
    if g.caller.user_id is not None:
        return session.get(User, g.caller.user_id)
    return submissions.api_user(session, g.caller.key_id, user,
                                new_per_hour=current_app.config["API_NEW_USERS_PER_HOUR"])


def _own_assignment(session, assignment_id: int) -> Assignment:
    """An assignment of one of this key's courses, or for a personal token one of a course
    its owner is a member of; any other is not found."""
    assignment = session.get(Assignment, assignment_id) if 0 < assignment_id < 2**31 else None
    course = session.get(Course, assignment.course_id) if assignment is not None else None
    if g.caller.user_id is not None:
        ours = course is not None and courses.role_in(session, course, session.get(User, g.caller.user_id)) \
            is not None
    else:
        ours = course is not None and course.api_key_id == g.caller.key_id
    if not ours:
        raise ApiError("assignment_not_found", f"this key has no assignment {assignment_id}")
    return assignment


@bp.get("/submissions/<submission_id>")
@requires("submissions:read")
def get_submission(submission_id: str):
    row = None
    if _SUBMISSION_ID.fullmatch(submission_id):
        with get_db() as session:
            if g.caller.user_id is not None:
                # A personal token reads its owner's submissions, however they were made, and
                # what the site would show them: hidden tests held until the assignment says.
                row = session.scalar(select(Submission).where(Submission.id == submission_id,
                                                              Submission.user_id == g.caller.user_id))
                viewer = row.user if row is not None else None
            else:
                # Only the key that made a submission reads it; another's is "not found".
                row = session.scalar(select(Submission).join(
                    webhooks.ApiSubmission, webhooks.ApiSubmission.submission_id == Submission.id).where(
                    Submission.id == submission_id, webhooks.ApiSubmission.api_key_id == g.caller.key_id))
                viewer = None  # the key that made it: the system the course gave the work to
            if row is not None:
                user = submissions.shown_external_id(row.user)
                shown = courses.seen(session, row, viewer)
                delayed = submissions.delayed(row)
                # Held with the rest of the feedback, where the assignment holds it.
                remarks = [comment_answer(c) for c in comments.shown_to(session, row, viewer)]
    if row is None:
        raise ApiError("submission_not_found", f"there is no submission {submission_id[:100]!r}")
    # A notebook's report names the cell beside each line number of the graded source.
    report = courses.held_report(notebooks.located_report(row.report, row.notebook), shown)
    body = dict(id=row.id, exercise=row.exercise_slug, exercise_version=row.exercise_version,
                assignment=row.assignment_id, user=user, status=row.status, progress=progress(row),
                score=shown.score, max_score=shown.max_score, failure_reason=row.failure_reason,
                report=report, notebook=notebooks.described(row.notebook), delayed=delayed, comments=remarks)
    if shown.assignment is not None:
        # Made for an assignment: whether it came late, what that costs, and what counts now.
        body.update(late=shown.late, late_penalty_percent=shown.penalty, counted_score=shown.counted_score,
                    counted_max_score=shown.counted_max)
    if shown.held:
        body.update(feedback_held_until=shown.held_until.isoformat(timespec="seconds"))
    return reply(answers.Submission(**body))


def progress(row) -> answers.Progress:
    """How many of a submission's (or practice run's) tests have run, of how many."""
    return answers.Progress(done=row.progress_done, total=row.progress_total)


def comment_answer(comment) -> answers.Comment:
    """A staff comment on a submission (grader.courses.comments), as the API gives it."""
    return answers.Comment(id=comment.id, body=comment.body, line=comment.line, author=comment.author_name,
                           created_at=aware(comment.created_at).isoformat(timespec="seconds"))


# ------------------------------------------------------------------ webhooks

@bp.post("/webhooks")
@requires("submissions:write")
def create_webhook():
    if g.caller.user_id is not None:  # a student hears of their grades on the site and in the client
        raise ApiError("insufficient_scope", "a personal token cannot register webhooks")
    body = parse(NewWebhook)
    try:
        with get_db() as session:
            row, secret = webhooks.register(session, g.caller.key_id, body.url)
            hook_id, url = row.id, row.url
    except webhooks.WebhookError as exc:
        raise ApiError("invalid_url", str(exc)) from None
    return reply(answers.Webhook(id=hook_id, url=url, secret=secret, events=[webhooks.EVENT]), 201)


@bp.delete("/webhooks/<int:webhook_id>")
@requires("submissions:write")
def delete_webhook(webhook_id: int):
    with get_db() as session:
        row = session.get(webhooks.Webhook, webhook_id) if webhook_id < 2**31 else None
        if row is None or row.api_key_id != g.caller.key_id or not row.active:
            raise ApiError("webhook_not_found", f"this key has no webhook {webhook_id}")
        row.active = False
    return "", 204


# ------------------------------------------------------------------ the document

@bp.get("/openapi.json")
def openapi():
    return jsonify(document(server=request.host_url.rstrip("/") + bp.url_prefix))
