"""/api/v1 practice runs: ``"practice": true`` in POST /submissions runs the source against
the exercise's visible tests alone, through the same queue and sandbox, counted for nothing
(no best score, no attempt, no gradebook, LMS or webhook), taken as a submission is
(courses.take); GET /practice-runs/<id> follows it. They are limited per user apart from
submissions (GRADER_PRACTICE_RATE_LIMIT)."""

from __future__ import annotations

import re

from flask import g

from grader import submissions
from grader.api import answers
from grader.api.answers import reply
from grader.api.views import ApiError, bp, progress, requires
from grader.extensions import get_db
from grader.submissions import notebooks
from grader.submissions import practice as runs
from grader.submissions.models import PracticeRun

_RUN_ID = re.compile(r"^[0-9a-f]{32}$")


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
    return reply(answers.PracticeRun(
        id=row.id, practice=True, exercise=row.exercise_slug, exercise_version=row.exercise_version,
        assignment=row.assignment_id, user=user, status=runs.shown_status(row), progress=progress(row),
        score=row.score, max_score=row.max_score, failure_reason=row.failure_reason,
        report=notebooks.located_report(row.report, row.notebook), notebook=notebooks.described(row.notebook)))
