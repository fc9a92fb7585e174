"""Signing in with a local account; who the current user is; who may see what.

Sessions are Flask's signed cookies holding only the user's id; every form carries
a CSRF token (Flask-WTF's CSRFProtect checks each POST).
"""

from __future__ import annotations

import functools
import math
import time
from urllib.parse import urlsplit

from flask import abort, current_app, g, redirect, render_template, request, session, url_for
from flask_babel import gettext as _

from grader import db, users
from grader.extensions import LANGUAGES, limiter
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


def instructor_required(view):
    @functools.wraps(view)
    @login_required
    def wrapped(**kwargs):
        if g.user.role != "instructor":
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


def _account_limit() -> str:
    return current_app.config["LOGIN_ACCOUNT_LIMIT"]


def _address_limit() -> str:
    return current_app.config["LOGIN_ADDRESS_LIMIT"]


def _account_key() -> str:
    return "login-account:" + users.normalise_email(request.form.get("email", ""))[:320]


def _address_key() -> str:
    return "login-address:" + (request.remote_addr or "-")


def _failed(response) -> bool:
    return response.status_code == 401


@bp.route("/login", methods=("GET", "POST"))
# Failed attempts count, per account (against guessing one password) and per address
# (against trying one password on many accounts); once over, the right password waits too.
@limiter.limit(_account_limit, key_func=_account_key, methods=["POST"], deduct_when=_failed)
@limiter.limit(_address_limit, key_func=_address_key, methods=["POST"], deduct_when=_failed)
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


@bp.errorhandler(429)
def _throttled(exc):
    """A throttled sign-in is the sign-in page, saying so and for how long."""
    if request.endpoint != "web.login":
        return exc
    limit = limiter.current_limit
    wait = max(1, math.ceil(limit.reset_at - time.time())) if limit is not None else 60
    error = _("Too many failed sign-ins for this account or from this address. Try again in "
              "%(minutes)d minute(s).", minutes=math.ceil(wait / 60))
    return render_template("login.html", error=error), 429, {"Retry-After": str(wait)}


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
