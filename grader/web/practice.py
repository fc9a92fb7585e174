"""Practice runs on the site: "Run visible tests" beside Submit, on an exercise's page and
an assignment's. The run's page follows it as a submission's does and shows its report;
nothing of it counts (grader.submissions.practice). Limited apart from submissions."""

from __future__ import annotations

import re

from flask import abort, current_app, g, jsonify, redirect, render_template, request, url_for

from grader import courses
from grader.extensions import get_db, limiter, one_at_a_time
from grader.submissions import practice as runs
from grader.refusals import Refused
from grader.submissions.models import PENDING, PracticeRun
from grader.web import bp, errors
from grader.web.auth import login_required
from grader.web.courses import _assignment, _assignment_page, refusal_text
from grader.web.render import localized_tests
from grader.web.views import _error_text, _exercise_page, courses_of, lang, posted_source, published

_RUN_ID = re.compile(r"^[0-9a-f]{32}$")


def practice_limit() -> str:
    return current_app.config["PRACTICE_RATE_LIMIT"]


# Counted apart from submissions (its own scope): practising never uses up submitting.
_limit_practice = limiter.shared_limit(practice_limit, scope="practice",
                                       deduct_when=lambda response: response.status_code == 303)


def limit_practice(view):
    """The limit, and one request of a user at a time around it (extensions.one_at_a_time)."""
    return one_at_a_time(_limit_practice(view))


@bp.post("/exercises/<slug>/practice")
@login_required
@limit_practice
def practice_start(slug: str):
    _pasted, source, kept = posted_source()
    try:
        taken = courses.take(get_db, who=g.user, target=lambda s: published(s, slug).slug, source=source,
                             practice_run=True)
    except Refused as exc:
        return _exercise_page(slug, source=kept, error=_error_text(exc), status=exc.status)
    return redirect(url_for("web.practice_run", run_id=taken.id), code=303)


errors.refused_forms["web.practice_start"] = lambda message: _exercise_page(
    request.view_args["slug"], source=posted_source()[2], error=message, status=429)


@bp.post("/assignments/<int:assignment_id>/practice")
@login_required
@limit_practice
def assignment_practice(assignment_id: int):
    _pasted, source, kept = posted_source()
    try:
        taken = courses.take(get_db, who=g.user, target=lambda s: _assignment(s, assignment_id)[0], source=source,
                             practice_run=True)
    except Refused as exc:
        with get_db() as s:  # the refusal's times in the course's zone
            course = _assignment(s, assignment_id)[1]
        return _assignment_page(assignment_id, source=kept, error=refusal_text(exc, course), status=exc.status)
    return redirect(url_for("web.practice_run", run_id=taken.id), code=303)


errors.refused_forms["web.assignment_practice"] = lambda message: _assignment_page(
    request.view_args["assignment_id"], source=posted_source()[2], error=message, status=429)


def _own_run(s, run_id: str) -> PracticeRun:
    row = s.get(PracticeRun, run_id) if _RUN_ID.fullmatch(run_id) else None
    if row is None or row.user_id != g.user.id:  # a practice run is its student's alone
        abort(404)
    return row


@bp.get("/practice/<run_id>")
@login_required
def practice_run(run_id: str):
    with get_db() as s:
        row = _own_run(s, run_id)
        exercise_row, status = row.exercise, runs.shown_status(row)
        course = courses_of(s, [row]).get(row.assignment_id)  # an assignment's run: its course's time
    tests = localized_tests(row.report, lang()) if row.report and status == "graded" else []
    return render_template("practice.html", submission=row, exercise=exercise_row, owner=g.user, tests=tests,
                           course=course,
                           status=status, pending=status in PENDING, held=None, practice=True,
                           status_url=url_for("web.practice_status", run_id=run_id))


@bp.get("/practice/<run_id>/status")
@login_required
def practice_status(run_id: str):
    with get_db() as s:
        row = _own_run(s, run_id)
        status = runs.shown_status(row)
    return jsonify(status=status, done=row.progress_done, total=row.progress_total, score=row.score,
                   max_score=row.max_score)
