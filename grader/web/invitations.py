"""Invitation links on the site: an instructor makes and revokes them on the course page;
whoever opens one joins the course, signed in already or with an account made there and
then, once they followed the link mailed to the address they gave (grader.courses.invitations
decides; this module words it)."""

from __future__ import annotations

import logging

from flask import current_app, g, redirect, render_template, request, url_for
from flask_babel import gettext as _

from grader.accounts import links, users
from grader.courses import invitations
from grader.accounts.models import User
from grader.courses.fields import CourseError
from grader.courses.roster import role_in
from grader.extensions import get_db, limiter, locale
from grader.web import bp
from grader.web.auth import login_required, sign_in
from grader.web.render import refused_words
from grader.web.courses import _course_page, instructor_course

log = logging.getLogger(__name__)


# ------------------------------------------------------------------ the instructor's side

@bp.post("/courses/<int:course_id>/invitations")
@login_required
def invitation_create(course_id: int):
    form = request.form
    try:
        with get_db() as s:
            course = instructor_course(s, course_id)
            row, token = invitations.create(s, course, role=form.get("role"), days=form.get("days"),
                                            max_uses=form.get("max_uses"), by=g.user.email or g.user.name)
            prefix, role = row.prefix, row.role
    except CourseError as exc:
        return _course_page(course_id, error=refused_words(exc), status=exc.status)
    log.info("invitation link %s… to course %s (%s) made by user %s", prefix, course_id, role, g.user.id)
    link = url_for("web.join", token=token, _external=True)
    page, status = _course_page(course_id, new_link=link, status=201)
    return page, status, {"Cache-Control": "no-store"}  # the one time the link is shown


@bp.post("/courses/<int:course_id>/invitations/<int:invitation_id>/revoke")
@login_required
def invitation_revoke(course_id: int, invitation_id: int):
    try:
        with get_db() as s:
            invitations.revoke(s, instructor_course(s, course_id), invitation_id)
    except CourseError as exc:
        return _course_page(course_id, error=refused_words(exc), status=exc.status)
    log.info("invitation %s of course %s revoked by user %s", invitation_id, course_id, g.user.id)
    return redirect(url_for("web.course_page", course_id=course_id, _anchor="invitations-heading"), code=303)


# ------------------------------------------------------------------ the invitee's side

def _page(token: str, *, error: str | None = None, form=None, status: int = 200):
    """The invitation, or why it lets no one in (404 unknown, 410 no longer valid)."""
    with get_db() as s:
        try:
            row, course = invitations.find(s, token)
        except CourseError as exc:
            return render_template("courses/join.html", refused=refused_words(exc), token=token), \
                exc.status
        member_role = role_in(s, course, g.user) if g.user is not None else None
        return render_template("courses/join.html", refused=None, course=course, role=row.role, token=token,
                               member_role=member_role, error=error, form=form or {},
                               min_password=users.MIN_PASSWORD), status


@bp.get("/join/<token>")
def join(token: str):
    return _page(token)


@bp.post("/join/<token>")
@login_required
def join_accept(token: str):
    try:
        with get_db() as s:
            course, role, joined = invitations.accept(s, token, s.get(User, g.user.id))
            course_id = course.id
    except CourseError as exc:
        return _page(token, error=refused_words(exc), status=exc.status)
    if joined:
        log.info("user %s joined course %s as %s through an invitation link", g.user.id, course_id, role)
    return redirect(url_for("web.course_page", course_id=course_id), code=303)


def _signup_limit() -> str:
    return current_app.config["SIGNUP_ADDRESS_LIMIT"]


@bp.post("/join/<token>/account")
# Every try counts: a link must not let one client mail the world, nor test addresses by the thousand.
@limiter.limit(_signup_limit, key_func=lambda: "signup-address:" + (request.remote_addr or "-"))
def join_signup(token: str):
    """An address given on the link's page. The answer is the same whether the address has
    an account or not (grader.courses.invitations.ask): check your mail."""
    form = request.form
    kept = {"name": form.get("name", ""), "email": form.get("email", "")}  # checked whole, never cut short
    try:
        with get_db() as s:
            invitations.ask(s, token, email=kept["email"], name=kept["name"], language=locale())
            course = invitations.find(s, token)[1].title
    except CourseError as exc:
        return _page(token, error=refused_words(exc), status=exc.status)
    except users.AccountError as exc:  # the form's own mistakes: the same for any address
        return _page(token, error=refused_words(exc), form=kept, status=422)
    return render_template("account/check_mail.html", reason="join", course=course, hours=links.JOIN_HOURS)
