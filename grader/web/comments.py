"""Staff commenting on a submission from its page: an overall comment, a comment on one line
of the code, and taking back one's own (grader.courses.comments decides who and what)."""

from __future__ import annotations

from flask import g, redirect, request, url_for

from grader.courses import comments
from grader.courses.fields import CourseError
from grader.extensions import get_db
from grader.web import bp
from grader.web.auth import login_required
from grader.web.render import refused_words
from grader.web.views import _own_submission, submission_page


@bp.post("/submissions/<submission_id>/comments")
@login_required
def submission_comment(submission_id: str):
    body, line = request.form.get("body", ""), request.form.get("line")
    try:
        with get_db() as s:
            row = _own_submission(s, submission_id)
            made = comments.add(s, row, body, line, author=g.user)
            anchor = f"L{made.line}" if made.line is not None else "comments"
    except CourseError as exc:  # nothing stored; the page again, with what was typed
        typed = {"kind": "line" if line is not None else "overall", "body": body, "line": line or ""}
        return submission_page(submission_id, comment_error=refused_words(exc), typed=typed, status=exc.status)
    return redirect(url_for("web.submission", submission_id=submission_id, _anchor=anchor), code=303)


@bp.post("/submissions/<submission_id>/comments/<int:comment_id>/delete")
@login_required
def submission_comment_delete(submission_id: str, comment_id: int):
    try:
        with get_db() as s:
            comments.delete(s, _own_submission(s, submission_id), comment_id, g.user)
    except CourseError as exc:
        return submission_page(submission_id, comment_error=refused_words(exc), status=exc.status)
    return redirect(url_for("web.submission", submission_id=submission_id, _anchor="comment-forms"), code=303)
