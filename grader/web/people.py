"""The administrators' accounts page: make a local account without a password (its owner is
mailed a link to choose one), and see which accounts have not chosen one yet."""

from __future__ import annotations

import logging

from flask import g, render_template, request
from flask_babel import gettext as _
from sqlalchemy import select

from grader.accounts import users
from grader.accounts.models import Role, User
from grader.extensions import get_db, locale
from grader.web import bp
from grader.web.auth import admin_required
from grader.web.render import refused_words

log = logging.getLogger(__name__)
SHOWN = 100


def _page(*, error: str | None = None, notice: str | None = None, form=None, status: int = 200):
    with get_db() as s:
        people = list(s.scalars(select(User).where(User.external_id.is_(None), User.api_key_id.is_(None))
                                .order_by(User.id.desc()).limit(SHOWN)))
        rows = [(u.email, u.name, u.role, u.password_hash is not None) for u in people]
    return render_template("instructor/people.html", rows=rows, roles=list(Role), error=error, notice=notice,
                           form=form or {}), status


@bp.get("/instructor/people")
@admin_required
def people():
    return _page()


@bp.post("/instructor/people")
@admin_required
def people_create():
    form = {"email": request.form.get("email", ""), "name": request.form.get("name", ""),
            "role": request.form.get("role", "student")}
    try:
        with get_db() as s:
            user = users.create_user(s, email=form["email"], password=None, role=form["role"], name=form["name"])
            users.welcome(s, user, language=locale())
            email = user.email
    except users.AccountError as exc:
        return _page(error=refused_words(exc), form=form, status=exc.status)
    log.info("administrator %s made the account %s (%s); a welcome link was mailed", g.user.id, email, form["role"])
    return _page(notice=_("%(email)s was made and mailed a link to choose a password.", email=email), status=201)
