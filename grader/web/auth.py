"""Signing in with a local account; who the current user is; who may see what
(grader.courses.access decides; the decorators here apply it to views).

Sessions are Flask's signed cookies holding only the user's id; every form carries
a CSRF token (Flask-WTF's CSRFProtect checks each POST).
"""

from __future__ import annotations

import functools
from urllib.parse import urlsplit

from flask import abort, current_app, g, redirect, render_template, request, session, url_for
from flask_babel import gettext as _

from grader import db, users
from grader.courses import access
from grader.extensions import LANGUAGES
from grader.models import User
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


def _requires(allowed):
    """A view for signed-in users for whom ``allowed(session, user)`` holds; 403 for others."""
    def decorator(view):
        @functools.wraps(view)
        @login_required
        def wrapped(**kwargs):
            with db.transaction(database_url()) as s:
                ok = allowed(s, g.user)
            if not ok:
                abort(403)
            return view(**kwargs)

        return wrapped

    return decorator


# Site-wide powers: a local administrator only.
admin_required = _requires(lambda s, user: access.is_admin(user))
# The course submission pages: an administrator, or staff (ta, instructor) of some course.
staff_required = _requires(lambda s, user: access.is_admin(user) or bool(access.staff_courses(s, user)))
# Registering an LMS: a local instructor or administrator, never an LMS user.
platform_registrar_required = _requires(lambda s, user: access.may_register_platforms(user))


@bp.app_context_processor
def access_helpers() -> dict:
    """What the navigation offers the signed-in user."""
    def is_staff() -> bool:
        if g.user is None:
            return False
        with db.transaction(database_url()) as s:
            return access.is_admin(g.user) or bool(access.staff_courses(s, g.user))

    return {"is_admin": lambda: access.is_admin(g.user), "is_staff": is_staff,
            "may_register_platforms": lambda: access.may_register_platforms(g.user)}


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
