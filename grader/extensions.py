"""The Flask extensions, made once and bound to an app in create_app(), and the surfaces'
way to the app's database."""

from __future__ import annotations

from contextlib import AbstractContextManager

from flask import current_app, g, request, session
from flask_babel import Babel
from flask_limiter import Limiter
from flask_wtf.csrf import CSRFProtect
from sqlalchemy import select
from sqlalchemy.orm import Session

from grader import db
from grader.accounts.models import ApiKey

LANGUAGES = ("en", "ko")


def get_db() -> AbstractContextManager[Session]:
    """One transaction on the app's database (DATABASE_URL): ``with get_db() as session:``."""
    return db.transaction(current_app.config["DATABASE_URL"])


def submitter() -> str:
    """Whom a submission rate limit counts against: the signed-in user on the web, the
    (API key, user) pair on the API, and a personal token's user as on the web (one bucket
    for a student however many tokens they make). Read before the view runs, so from the
    raw request; only accepted requests are counted, so a forged token counts nothing."""
    if request.blueprint == "api":
        key = request.headers.get("Authorization", "").partition(" ")[2].strip()
        prefix = key.split("_")[1] if key.count("_") >= 2 else "-"
        owner = _token_owner(prefix)
        if owner is not None:
            return f"web:{owner}"
        body = request.get_json(silent=True) if request.is_json else None
        user = body.get("user") if isinstance(body, dict) and isinstance(body.get("user"), str) else ""
        return f"api:{prefix}:{user[:500]}"
    return f"web:{session.get('user_id', request.remote_addr)}"


def _token_owner(prefix: str) -> int | None:
    if len(prefix) != 12:
        return None
    with get_db() as s:
        return s.scalar(select(ApiKey.user_id).where(ApiKey.prefix == prefix))


def locale() -> str:
    """The user's choice, else what the browser asks for, else English."""
    chosen = getattr(g, "lang", None) or session.get("lang")
    if chosen in LANGUAGES:
        return chosen
    return request.accept_languages.best_match(LANGUAGES) or "en"


csrf = CSRFProtect()
babel = Babel()
limiter = Limiter(submitter, headers_enabled=True, swallow_errors=True)
