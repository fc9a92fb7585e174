"""Signing in with a local account; who the current user is; who may see what
(grader.courses.access decides; the decorators here apply it to views).

Sessions are Flask's signed cookies holding the user's id, the user's session version
when it began and when it began; every form carries a CSRF token (Flask-WTF's
CSRFProtect checks each POST). Signing out or a new password bumps the version, which
ends every session of that user, a copied cookie included; any session ends
GRADER_SESSION_HOURS after it began.
"""

from __future__ import annotations

import functools
import math
import time
from datetime import timedelta
from urllib.parse import urlsplit

from flask import abort, current_app, g, redirect, render_template, request, session, url_for
from flask_babel import gettext as _

from grader.accounts import users
from grader.accounts.models import User
from grader.courses import access
from grader.extensions import LANGUAGES, get_db, limiter, locale
from grader.web import bp, errors
from grader.web.durations import duration
from grader.web.headers import admin_page



@bp.before_app_request
def load_user() -> None:
    g.user = None
    user_id = session.get("user_id")
    if user_id is None:
        return
    with get_db() as s:
        user = s.get(User, user_id)
    began = session.get("began")
    over = began is not None and time.time() - began > current_app.permanent_session_lifetime.total_seconds()
    # A cookie from before versions were kept carries none: version 0, until the first sign-out.
    if user is None or session.get("v", 0) != user.session_version or over:
        _forget()  # the account is gone, signed out since, or the session is too old
        return
    g.user = user


@bp.after_app_request
def stamp_session(response):
    """A session just begun (the form's, an LMS launch's) carries the user's current
    version and its start; so does an older cookie still valid, from now on."""
    if "user_id" in session and ("v" not in session or "began" not in session):
        with get_db() as s:
            user = s.get(User, session["user_id"])
        if user is None:
            _forget()
        else:
            session["v"], session.permanent = user.session_version, True
            session.setdefault("began", int(time.time()))
    return response


def _forget() -> None:
    """An empty session, but for the reader's language."""
    lang = session.get("lang")
    session.clear()
    if lang:
        session["lang"] = lang


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
        def framed_never(**kwargs):
            admin_page()  # whatever the answer (the page, a redirect to sign in, a 403)
            return wrapped(**kwargs)

        @login_required
        def wrapped(**kwargs):
            with get_db() as s:
                ok = allowed(s, g.user)
            if not ok:
                abort(403)
            return view(**kwargs)

        return framed_never

    return decorator


# Site-wide powers: a local administrator only.
admin_required = _requires(lambda s, user: access.is_admin(user))
# The course submission pages: an administrator, or staff (ta, instructor) of some course.
staff_required = _requires(access.is_staff)
# Registering an LMS: a local instructor or administrator, never an LMS user.
platform_registrar_required = _requires(lambda s, user: access.may_register_platforms(user))


@bp.app_context_processor
def access_helpers() -> dict:
    """What the navigation offers the signed-in user."""
    def is_staff() -> bool:
        if g.user is None:
            return False
        with get_db() as s:
            return access.is_staff(s, g.user)

    return {"is_admin": lambda: access.is_admin(g.user), "is_staff": is_staff,
            "may_register_platforms": lambda: access.may_register_platforms(g.user)}


def _safe_next(target: str | None) -> str:
    """Only a path on this site: a login link must not send anyone elsewhere."""
    if target:
        parts = urlsplit(target)
        if not parts.scheme and not parts.netloc and target.startswith("/") and not target.startswith("//") \
                and "\\" not in target:
            return target
    return url_for("web.index")  # a course member's course, else the catalogue


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


def sign_in(user: User) -> None:
    """A fresh session for the user: nothing carried over but the language."""
    lang = session.get("lang")
    session.clear()
    session["user_id"], session["v"], session["began"] = user.id, user.session_version, int(time.time())
    session.permanent = True  # the cookie expires with the session's lifetime
    if lang:
        session["lang"] = lang


@bp.route("/login", methods=("GET", "POST"))
# Failed attempts count, per account (against guessing one password) and per address
# (against trying one password on many accounts); once over, the right password waits too.
@limiter.limit(_account_limit, key_func=_account_key, methods=["POST"], deduct_when=_failed)
@limiter.limit(_address_limit, key_func=_address_key, methods=["POST"], deduct_when=_failed)
def login():
    error = None
    if request.method == "POST":
        email, password = request.form.get("email", ""), request.form.get("password", "")
        with get_db() as s:
            user = users.authenticate(s, email, password)
            if user is not None:
                user.language = locale()  # the language its mail is written in
        if user is None:
            error = _("That email and password do not match an account.")
        else:
            sign_in(user)
            return redirect(_safe_next(request.args.get("next")))
    return render_template("login.html", error=error), 401 if error else 200


@bp.errorhandler(429)
def _throttled(exc):
    """A throttled sign-in is the sign-in page, saying so and for how long; a throttled
    submission or practice run is its form's page again, the code still in it."""
    limit = limiter.current_limit
    wait = max(1, math.ceil(limit.reset_at - time.time())) if limit is not None else 60
    if request.endpoint in errors.refused_forms:
        body, _status = errors.refused_forms[request.endpoint](errors.too_often(wait))
        return body, 429, {"Retry-After": str(wait)}
    if request.endpoint == "web.forgot_password":
        error = _("Asked too often for this address or from this network. Try again in %(wait)s.",
                  wait=duration(timedelta(seconds=wait)))
        return render_template("account/forgot.html", error=error), 429, {"Retry-After": str(wait)}
    if request.endpoint != "web.login":
        return errors.page(exc)
    error = _("Too many failed sign-ins for this account or from this address. Try again in %(wait)s.",
              wait=duration(timedelta(seconds=wait)))
    return render_template("login.html", error=error), 429, {"Retry-After": str(wait)}


@bp.post("/logout")
def logout():
    if g.user is not None:
        # Not only this cookie: every copy of it, and the user's other sessions.
        with get_db() as s:
            users.end_sessions(s.get(User, g.user.id))
    _forget()
    return redirect(url_for("web.login"))


@bp.post("/language")
def language():
    lang = request.form.get("lang")
    if lang not in LANGUAGES:
        abort(400, f"unknown language {lang!r}")
    session["lang"] = lang
    return redirect(_safe_next(request.form.get("next")))
