"""POST /api/v1/submissions/<id>/comments: a staff comment on a submission, overall or on
one line of its source (grader.courses.comments decides who and what).

A personal token comments as its owner where the owner is a TA or instructor of the
submission's course; a service's API key with grades:write, on the work of its own courses
(found as its assignments are). The comment is shown to the student as the rest of the
feedback: GET /api/v1/submissions/<id> lists it once released."""

from __future__ import annotations

from flask import g

from grader.accounts.models import User
from grader.api.answers import reply
from grader.api.courses import _by
from grader.api.bodies import NewComment, parse
from grader.api.views import _SUBMISSION_ID, ApiError, _own_assignment, bp, comment_answer, requires
from grader.courses import access, comments
from grader.extensions import get_db
from grader.submissions.models import Submission

@bp.post("/submissions/<submission_id>/comments")
@requires("grades:write", personal="submissions:write")
def create_comment(submission_id: str):
    body = parse(NewComment)
    with get_db() as session:
        row = _commentable(session, submission_id)
        author = session.get(User, g.caller.user_id) if g.caller.user_id is not None else None
        made = comments.add(session, row, body.body, body.line, author=author, author_name=_by())
        answer = comment_answer(made)
    return reply(answer, 201)


def _commentable(session, submission_id: str) -> Submission:
    """The submission, where the caller may see it: a personal token's owner as the site
    lets them (whether they may comment the domain says next); a service's key, the work
    of its own courses. Any other is not found."""
    row = session.get(Submission, submission_id) if _SUBMISSION_ID.fullmatch(submission_id) else None
    if row is not None and g.caller.user_id is not None:
        ours = access.may_see(session, session.get(User, g.caller.user_id), row)
    elif row is not None and row.assignment_id is not None:
        try:
            ours = _own_assignment(session, row.assignment_id) is not None
        except ApiError:
            ours = False
    else:
        ours = False
    if not ours:
        raise ApiError("submission_not_found", f"there is no submission {submission_id[:100]!r}")
    return row
