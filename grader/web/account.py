"""Getting into an account by mail: "forgot your password?", and the page every mailed
link leads to (a welcome or reset link chooses a password; a join link makes the account
or signs in, then joins the course). Opening a link's page spends nothing; only its form
does (a mail scanner that follows links must not use them up)."""

from __future__ import annotations

import logging

from flask import current_app, redirect, render_template, request, url_for
from flask_babel import gettext as _
from sqlalchemy.exc import IntegrityError

from grader.accounts import links, users
from grader.courses import invitations
from grader.extensions import get_db, limiter, locale
from grader.refusals import Refused
from grader.web import bp
from grader.web.auth import sign_in
from grader.web.render import refused_words

log = logging.getLogger(__name__)


def _account_limit() -> str:
    return current_app.config["RESET_ACCOUNT_LIMIT"]


def _address_limit() -> str:
    return current_app.config["RESET_ADDRESS_LIMIT"]


@bp.route("/password/forgot", methods=("GET", "POST"))
# Asked too often, for one address or from one client: the answer is the same page, and no
# mail goes (the limit is counted whether or not the address has an account).
@limiter.limit(_address_limit, key_func=lambda: "reset-address:" + (request.remote_addr or "-"), methods=["POST"])
@limiter.limit(_account_limit, methods=["POST"],
               key_func=lambda: "reset-account:" + users.normalise_email(request.form.get("email", ""))[:320])
def forgot_password():
    if request.method == "POST":
        with get_db() as s:
            users.forgot(s, request.form.get("email", ""), language=locale())
        return render_template("account/check_mail.html", reason="reset")
    return render_template("account/forgot.html")


def _link_page(token: str, *, error: str | None = None, status: int = 200):
    with get_db() as s:
        try:
            row = links.find(s, token)
            course = invitations.course_of_link(s, row)
        except Refused as exc:
            return render_template("account/link.html", refused=refused_words(exc)), exc.status
        return render_template("account/link.html", refused=None, purpose=row.purpose, email=row.email,
                               course=course, token=token, error=error, min_password=users.MIN_PASSWORD), status


SECRET_URL = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}  # the URL is the key


@bp.get(links.PATH + "<token>")
def account_link(token: str):
    body, status = _link_page(token)
    return body, status, SECRET_URL


@bp.post(links.PATH + "<token>")
def account_link_use(token: str):
    password = request.form.get("password")
    if password is not None and password != request.form.get("password_again", ""):
        return (*_link_page(token, error=_("The two passwords differ."), status=422), SECRET_URL)
    course_id = None
    try:
        with get_db() as s:
            purpose = links.find(s, token).purpose
            if purpose in ("welcome", "reset"):
                user = users.choose_password(s, token, password or "")
            else:
                user, course, role = invitations.join_by_mail(s, token, password)
                course_id = course.id
            user.language = locale()
            user_id = user.id
    except IntegrityError:  # the address got its account a moment ago, through another link
        return (*_link_page(token, error=refused_words(users.AccountError("", "email_taken")), status=409),
                SECRET_URL)
    except Refused as exc:
        return (*_link_page(token, error=refused_words(exc), status=exc.status), SECRET_URL)
    with get_db() as s:
        sign_in(s.get(users.User, user_id))
    log.info("user %s got in through a mailed %s link", user_id, purpose)
    if course_id is not None:
        return redirect(url_for("web.course_page", course_id=course_id), code=303)
    return redirect(url_for("web.index"), code=303)
