"""Signing in with a local account; who the current user is; who may see what.

Sessions are Flask's signed cookies holding only the user's id; every form carries
a CSRF token (Flask-WTF's CSRFProtect checks each POST).
"""

from __future__ import annotations

import functools
from urllib.parse import urlsplit

from flask import abort, current_app, g, redirect, render_template, request, session, url_for
from flask_babel import gettext as _

from grader import db
from grader.accounts import users
from grader.accounts.models import Role, User
from grader.extensions import LANGUAGES
from grader.web import bp


def database_url() -> str:
    return current_app.config["DATABASE_URL"]


@bp.before_app_request
def load_user() -> None:
    g.user = None
    user_id = session.get("user_id")
    if user_id is not None:
        with db.transaction(database_url()) as s:
            g.user = s.get(User, user_id)
        if g.user is None:  # the account is gone: forget the session
            session.clear()


def login_required(view):
    @functools.wraps(view)
    def wrapped(**kwargs):
        if g.user is None:
            return redirect(url_for("web.login", next=request.full_path.rstrip("?")))
        return view(**kwargs)

    return wrapped


def instructor_required(view):
    @functools.wraps(view)
    @login_required
    def wrapped(**kwargs):
        if g.user.role != Role.INSTRUCTOR:
            abort(403)
        return view(**kwargs)

    return wrapped


def _safe_next(target: str | None) -> str:
    """Only a path on this site: a login link must not send anyone elsewhere."""
    if target:
        parts = urlsplit(target)
        if not parts.scheme and not parts.netloc and target.startswith("/") and not target.startswith("//") \
                and "\\" not in target:
            return target
    return url_for("web.exercises")


@bp.route("/login", methods=("GET", "POST"))
def login():
    error = None
    if request.method == "POST":
        email, password = request.form.get("email", ""), request.form.get("password", "")
        with db.transaction(database_url()) as s:
            user = users.authenticate(s, email, password)
        if user is None:
            error = _("That email and password do not match an account.")
        else:
            lang = session.get("lang")
            session.clear()  # a fresh session on sign-in: nothing carried over but the language
            session["user_id"] = user.id
            if lang:
                session["lang"] = lang
            return redirect(_safe_next(request.args.get("next")))
    return render_template("login.html", error=error), 401 if error else 200


@bp.post("/logout")
def logout():
    lang = session.get("lang")
    session.clear()
    if lang:
        session["lang"] = lang
    return redirect(url_for("web.login"))


@bp.post("/language")
def language():
    lang = request.form.get("lang")
    if lang not in LANGUAGES:
        abort(400, f"unknown language {lang!r}")
    session["lang"] = lang
    return redirect(_safe_next(request.form.get("next")))
