"""The headers every response carries, whichever blueprint made it.

- A Content-Security-Policy: scripts only from the site itself (an inline script needs the
  request's nonce, ``csp_nonce()`` in templates), images only from the site or data: URIs
  (a statement cannot make readers' browsers call a tracker), no plugins, no <base>.
- frame-ancestors: 'none' on instructor and administrator pages and the sign-in form
  (nothing may frame them to trick a click); the pages an LMS shows in its iframe (a
  student's pages, the deep-linking picker) may be framed by the registered platforms'
  origins only, and by GRADER_FRAME_ANCESTORS.
- X-Content-Type-Options: nosniff, Referrer-Policy: same-origin (no-referrer where the URL
  is a secret: a mailed link's page), and HSTS when the cookies
  are Secure (the site is served over HTTPS).
"""

from __future__ import annotations

import secrets
import threading
import time
from urllib.parse import urlsplit

from flask import current_app, g, request
from markupsafe import Markup
from sqlalchemy import select

from grader import db
from grader.lti.models import LtiPlatform
from grader.web import bp

# Instructor pages an LMS shows in its iframe: the deep-linking picker and what it posts back.
LMS_FRAMED = {"lti.deep_link"}
ORIGINS_TTL_S = 60  # a new platform's origin may frame pages within a minute of registering

_origins: dict[str, tuple[float, tuple[str, ...]]] = {}
_lock = threading.Lock()


def csp_nonce() -> str:
    """This response's nonce, for a template's inline <script nonce="...">."""
    if "csp_nonce" not in g:
        g.csp_nonce = secrets.token_urlsafe(16)
    return g.csp_nonce


def admin_page() -> None:
    """Called by the instructor and administrator views' decorator: never framed."""
    g.frame_none = True


def platform_origins(database_url: str) -> tuple[str, ...]:
    """The origins of the registered platforms (issuer and login URL), cached a minute."""
    with _lock:
        cached = _origins.get(database_url)
    if cached and time.monotonic() - cached[0] < ORIGINS_TTL_S:
        return cached[1]
    found = set()
    try:
        with db.transaction(database_url) as session:
            for issuer, login_url in session.execute(select(LtiPlatform.issuer, LtiPlatform.auth_login_url)
                                                        .where(LtiPlatform.deleted_at.is_(None))):
                for url in (issuer, login_url):
                    origin = _origin(url)
                    if origin:
                        found.add(origin)
    except Exception:  # a missing table or a database hiccup frames nothing, breaks nothing
        current_app.logger.warning("the platforms' origins could not be read", exc_info=True)
    origins = tuple(sorted(found))
    with _lock:
        _origins[database_url] = (time.monotonic(), origins)
    return origins


def _origin(url: str) -> str | None:
    parts = urlsplit(url or "")
    # Only plain https (or http, for development) origins: nothing that could end the directive.
    if parts.scheme in ("http", "https") and parts.hostname and all(
            c.isalnum() or c in ".-:[]" for c in parts.netloc):
        return f"{parts.scheme}://{parts.netloc}"
    return None


def _never_framed() -> bool:
    return bool(g.get("frame_none")) and request.endpoint not in LMS_FRAMED or request.endpoint == "web.login"


def _frame_ancestors() -> str:
    if _never_framed():
        return "'none'"
    extra = current_app.config.get("FRAME_ANCESTORS", "").split()
    origins = platform_origins(current_app.config["DATABASE_URL"]) + tuple(o for o in extra if _origin(o))
    return " ".join(("'self'",) + origins)


@bp.app_context_processor
def _nonce_helper() -> dict:
    return {"csp_nonce": lambda: Markup.escape(csp_nonce())}


@bp.after_app_request
def security_headers(response):
    scripts = f"'self' 'nonce-{g.csp_nonce}'" if "csp_nonce" in g else "'self'"
    response.headers["Content-Security-Policy"] = (
        f"default-src 'self'; script-src {scripts}; style-src 'self'; img-src 'self' data:; "
        f"object-src 'none'; base-uri 'none'; frame-ancestors {_frame_ancestors()}")
    if _never_framed():
        response.headers["X-Frame-Options"] = "DENY"  # browsers that predate frame-ancestors
    response.headers["X-Content-Type-Options"] = "nosniff"
    # A page whose URL is a secret (a mailed link, an unsubscribe link) sets no-referrer itself.
    response.headers.setdefault("Referrer-Policy", "same-origin")
    if current_app.config.get("SESSION_COOKIE_SECURE"):
        response.headers["Strict-Transport-Security"] = "max-age=31536000"
    return response
