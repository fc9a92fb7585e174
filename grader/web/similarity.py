"""Similar submissions, for the staff of an assignment's course: its students' final
submissions in pairs, most similar first, and two of them side by side with the code they
share marked. Computed when the page is opened; it never changes a score."""

from __future__ import annotations

import re

from flask import abort, render_template

from grader import courses
from grader.courses import similarity
from grader.courses.gradebook import who
from grader.extensions import get_db
from grader.submissions.models import Submission
from grader.web import bp
from grader.web.auth import login_required
from grader.web.render import refused_words
from grader.web.courses import _assignment, _staff

SHOWN_PAIRS = 100  # the most similar; the rest share less and are counted
_SUBMISSION_ID = re.compile(r"^[0-9a-f]{32}$")


def _staff_assignment(s, assignment_id: int):
    """The assignment and its course; 404 outside the course, 403 for its students."""
    assignment, course, role = _assignment(s, assignment_id)
    if not _staff(role):
        abort(403)
    return assignment, course


@bp.get("/assignments/<int:assignment_id>/similarity")
@login_required
def assignment_similarity(assignment_id: int):
    found, error = None, None
    with get_db() as s:
        assignment, course = _staff_assignment(s, assignment_id)
        try:
            found = similarity.similar(s, assignment)
        except courses.CourseError as exc:
            error = refused_words(exc)
    return render_template("courses/similarity.html", assignment=assignment, course=course, found=found,
                           pairs=found.pairs[:SHOWN_PAIRS] if found else [], error=error, who=who,
                           shown=courses.shown), 422 if error else 200


def _submission(s, assignment, submission_id: str) -> Submission:
    row = s.get(Submission, submission_id) if _SUBMISSION_ID.fullmatch(submission_id) else None
    if row is None or row.assignment_id != assignment.id:
        abort(404)
    return row


@bp.get("/assignments/<int:assignment_id>/similarity/<a_id>/<b_id>")
@login_required
def similarity_pair(assignment_id: int, a_id: str, b_id: str):
    with get_db() as s:
        assignment, course = _staff_assignment(s, assignment_id)
        rows = _submission(s, assignment, a_id), _submission(s, assignment, b_id)
        if rows[0].id == rows[1].id:
            abort(404)
        try:
            pair = similarity.compare(s, assignment, *rows)
        except courses.CourseError as exc:
            return render_template("courses/similarity.html", assignment=assignment, course=course, found=None,
                                   pairs=[], error=refused_words(exc), who=who, shown=courses.shown), 422
        sides = [{"user": row.user, "submission": row, "side": side,
                  "segments": similarity.segments(row.source, side.regions)}
                 for row, side in zip(rows, (pair.a, pair.b))]
    return render_template("courses/similarity_pair.html", assignment=assignment, course=course, pair=pair,
                           sides=sides, who=who, shown=courses.shown)
