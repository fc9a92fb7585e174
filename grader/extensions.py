"""The Flask extensions, made once and bound to an app in create_app(), and the surfaces'
way to the app's database."""

from __future__ import annotations

import functools
import logging
from contextlib import AbstractContextManager

import redis as redis_py

from flask import current_app, g, request, session
from flask_babel import Babel
from flask_limiter import Limiter
from flask_wtf.csrf import CSRFProtect
from sqlalchemy.orm import Session
from werkzeug.exceptions import TooManyRequests

from grader import db
from grader.accounts import keys

log = logging.getLogger(__name__)

LANGUAGES = ("en", "ko")


def get_db() -> AbstractContextManager[Session]:
    """One transaction on the app's database (DATABASE_URL): ``with get_db() as session:``."""
    return db.transaction(current_app.config["DATABASE_URL"])


def verified_bearer() -> keys.Caller:
    """The request's bearer key (``Authorization: Bearer <key>``), verified once per request
    for the limits and the view alike; keys.KeyRefused when it is not valid."""
    if "bearer" not in g:
        try:
            with get_db() as s:
                g.bearer = keys.verify(s, request.headers.get("Authorization", "").partition(" ")[2].strip())
        except keys.KeyRefused as exc:
            g.bearer = exc
    if isinstance(g.bearer, keys.KeyRefused):
        raise g.bearer
    return g.bearer


def bearer() -> keys.Caller | None:
    """verified_bearer, or None when the key is not valid: what the limits count against (a
    forged key counts against no one's)."""
    try:
        return verified_bearer()
    except keys.KeyRefused:
        return None


def submitter() -> str:
    """Whom a submission rate limit counts against: the signed-in user on the web, the
    (API key, user) pair on the API, and a personal token's user as on the web (one bucket
    for a student however many tokens they make). Read before the view runs; a key that is
    not valid counts against nothing of anyone's (the view refuses it)."""
    if request.blueprint == "api":
        caller = bearer()
        if caller is None:
            return "api:-"
        if caller.user_id is not None:
            return f"web:{caller.user_id}"
        try:
            body = request.get_json(silent=True) if request.is_json else None
        except RecursionError:  # nested too deep: the view refuses it, with its own words
            body = None
        user = body.get("user") if isinstance(body, dict) and isinstance(body.get("user"), str) else ""
        return f"api:{caller.prefix}:{user[:500]}"
    return f"web:{session.get('user_id', request.remote_addr)}"


def one_at_a_time(view):
    """The view runs for one submitter at a time (a lock in the rate limits' Redis, around
    the limits themselves): a limit checks its count before the view and counts after it, so
    requests sent together would all pass the check; so would an assignment's attempts.
    Waits a few seconds for the request before; then 429. Without Redis, it runs unlocked
    (as the limits do: swallow_errors)."""

    @functools.wraps(view)
    def wrapped(**kwargs):
        try:
            lock = _redis().lock("grader:one-at-a-time:" + submitter(), timeout=60, blocking_timeout=10)
            held = lock.acquire()
        except redis_py.RedisError:
            log.warning("the one-at-a-time lock is unavailable: the request runs unlocked", exc_info=True)
            return view(**kwargs)
        if not held:
            raise TooManyRequests("another request of yours is still being taken in", retry_after=5)
        try:
            return view(**kwargs)
        finally:
            try:
                lock.release()
            except redis_py.RedisError:
                pass  # expired (a minute) or Redis gone: the lock ends by itself

    return wrapped


def _redis() -> redis_py.Redis:
    app = current_app._get_current_object()
    client = app.extensions.get("grader-redis")
    if client is None:
        client = app.extensions["grader-redis"] = redis_py.Redis.from_url(
            app.config["RATELIMIT_STORAGE_URI"], socket_timeout=5, socket_connect_timeout=2)
    return client


def locale() -> str:
    """The user's choice, else what the browser asks for, else English."""
    chosen = getattr(g, "lang", None) or session.get("lang")
    if chosen in LANGUAGES:
        return chosen
    return request.accept_languages.best_match(LANGUAGES) or "en"


csrf = CSRFProtect()
babel = Babel()
limiter = Limiter(submitter, headers_enabled=True, swallow_errors=True)
