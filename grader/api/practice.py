"""/api/v1 practice runs: ``"practice": true`` in POST /submissions runs the source against
the exercise's visible tests alone, through the same queue and sandbox, counted for nothing
(no best score, no attempt, no gradebook, LMS or webhook); GET /practice-runs/<id> follows
it. They are limited per user apart from submissions (GRADER_PRACTICE_RATE_LIMIT)."""

from __future__ import annotations

import re

from flask import g, jsonify, url_for
from sqlalchemy.exc import IntegrityError

from grader import submissions
from grader.api.views import ApiError, _own_assignment, bp, caller_user, requires
from grader import courses
from grader.extensions import get_db
from grader.submissions import notebooks
from grader.submissions import practice as runs
from grader.submissions.models import PracticeRun, SubmissionStatus

_RUN_ID = re.compile(r"^[0-9a-f]{32}$")


def start(target: str | int, source, user: str):
    """The 202 of a practice run started for ``user`` of this key (views.create_submission)."""
    def store() -> tuple[str, str]:
        with get_db() as session:
            owner = caller_user(session, user)
            if isinstance(target, int):
                run = courses.practice(session, user=owner, assignment=_own_assignment(session, target),
                                           source=source)
            else:
                run = runs.start(session, user=owner, exercise_slug=target, source=source)
            return run.id, run.exercise.device

    try:
        submissions.check_source(source)  # before the database is touched, as a submission's
        try:
            run_id, device = store()
        except IntegrityError:  # two first requests of one new user at once: now it exists
            run_id, device = store()
    except submissions.SubmissionError as exc:
        raise ApiError(exc.code, exc.message, where=getattr(exc, "where", None)) from None
    runs.send(run_id, device)  # only now: the row is committed
    url = url_for("api.get_practice_run", run_id=run_id, _external=True)
    response = jsonify(id=run_id, url=url, status=SubmissionStatus.QUEUED, practice=True)
    response.status_code, response.headers["Location"] = 202, url
    return response


@bp.get("/practice-runs/<run_id>")
@requires("submissions:read")
def get_practice_run(run_id: str):
    row = None
    if _RUN_ID.fullmatch(run_id):
        with get_db() as session:
            row = session.get(PracticeRun, run_id)
            # Only the key whose user it is (or the personal token of its user) reads it;
            # any other run is "not found".
            ours = (row.user_id == g.caller.user_id if g.caller.user_id is not None
                    else row.user.api_key_id == g.caller.key_id) if row is not None else False
            if not ours:
                row = None
            user = submissions.shown_external_id(row.user) if row is not None else None
    if row is None:
        raise ApiError("practice_run_not_found", f"there is no practice run {run_id[:100]!r}")
    return jsonify(id=row.id, practice=True, exercise=row.exercise_slug, exercise_version=row.exercise_version,
                   assignment=row.assignment_id, user=user, status=runs.shown_status(row),
                   progress={"done": row.progress_done, "total": row.progress_total},
                   score=row.score, max_score=row.max_score, failure_reason=row.failure_reason,
                   report=notebooks.located_report(row.report, row.notebook),
                   notebook=notebooks.described(row.notebook))
