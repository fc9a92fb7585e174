"""The Flask extensions, made once and bound to an app in create_app(), and the surfaces'
way to the app's database."""

from __future__ import annotations

from contextlib import AbstractContextManager

from flask import current_app, g, request, session
from flask_babel import Babel
from flask_limiter import Limiter
from flask_wtf.csrf import CSRFProtect
from sqlalchemy.orm import Session

from grader import db

LANGUAGES = ("en", "ko")


def get_db() -> AbstractContextManager[Session]:
    """One transaction on the app's database (DATABASE_URL): ``with get_db() as session:``."""
    return db.transaction(current_app.config["DATABASE_URL"])


def submitter() -> str:
    """Whom a submission rate limit counts against: the signed-in user on the web, the
    (API key, user) pair on the API. Read before the view runs, so from the raw request."""
    if request.blueprint == "api":
        key = request.headers.get("Authorization", "").partition(" ")[2].strip()
        body = request.get_json(silent=True) if request.is_json else None
        user = body.get("user") if isinstance(body, dict) and isinstance(body.get("user"), str) else ""
        return f"api:{key.split('_')[1] if key.count('_') >= 2 else '-'}:{user[:500]}"
    return f"web:{session.get('user_id', request.remote_addr)}"


def locale() -> str:
    """The user's choice, else what the browser asks for, else English."""
    chosen = getattr(g, "lang", None) or session.get("lang")
    if chosen in LANGUAGES:
        return chosen
    return request.accept_languages.best_match(LANGUAGES) or "en"


csrf = CSRFProtect()
babel = Babel()
limiter = Limiter(submitter, headers_enabled=True, swallow_errors=True)
