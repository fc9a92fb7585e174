"""A user's personal tokens, on their own page: made (shown once), listed and revoked by
the user alone. A token is what the notebook client (client/ in this repository) sends:
it submits and reads the user's own work, and nothing else (grader.accounts.keys)."""

from __future__ import annotations

from flask import g, redirect, render_template, request, url_for
from flask_babel import gettext as _

from sqlalchemy import select

from grader.accounts import keys
from grader.courses.models import Assignment, Course, CourseMember
from grader.extensions import get_db
from grader.web import bp, client
from grader.web.auth import login_required
from grader.web.render import refused_words


def _page(*, new_token: str | None = None, error: str | None = None, notice: str | None = None,
          status: int = 200):
    with get_db() as s:
        tokens = keys.personal_tokens(s, g.user.id)
        # The example names one of the student's own assignments, as the client finds it.
        mine = s.execute(select(Course.code, Assignment.title).join(Assignment, Assignment.course_id == Course.id)
                         .join(CourseMember, CourseMember.course_id == Course.id)
                         .where(CourseMember.user_id == g.user.id).order_by(Assignment.due_at.desc()).limit(1)).first()
    example = f"{mine[0]}/{mine[1]}" if mine else "DL101/Your first gradient"
    body = render_template("tokens.html", tokens=tokens, new_token=new_token, error=error, notice=notice,
                           example=example,
                           service_url=request.host_url.rstrip("/"), limit=keys.PERSONAL_LIMIT,
                           wheel_url=client.wheel_url())
    # A token is on this page once: neither the browser nor anything between may keep it.
    return body, status, {"Cache-Control": "no-store"}


@bp.get("/account/tokens")
@login_required
def tokens():
    return _page(notice=_("Token revoked: it no longer works.") if request.args.get("revoked") else None)


@bp.post("/account/tokens")
@login_required
def token_create():
    try:
        with get_db() as s:
            _row, token = keys.personal(s, g.user.id, request.form.get("name", ""))
    except keys.TokenRefused as exc:
        return _page(error=refused_words(exc), status=exc.status)
    return _page(new_token=token, status=201)


@bp.post("/account/tokens/<prefix>/revoke")
@login_required
def token_revoke(prefix: str):
    with get_db() as s:
        revoked = keys.revoke_personal(s, g.user.id, prefix)
    if revoked is None:
        return _page(error=_("You have no such token (it may be revoked already)."), status=404)
    return redirect(url_for("web.tokens", revoked=1), code=303)
