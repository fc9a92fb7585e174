"""The pages of HTTP errors outside the API: styled like every other page, translated,
with the way back, and for a 429 when to try again. The API answers JSON (grader.app)."""

from __future__ import annotations

import logging
import time
from datetime import timedelta

from flask import render_template
from flask_babel import gettext as _
from flask_wtf.csrf import CSRFError
from werkzeug.exceptions import HTTPException

from grader.extensions import limiter
from grader.web.durations import duration

log = logging.getLogger(__name__)

# Forms whose rate-limit refusal is their own page again, with the code typed still in it and
# the given message saying when to send it again: endpoint -> (message) -> the page's
# (body, status). The views that own the forms add themselves.
refused_forms: dict = {}


def too_often(wait: int) -> str:
    """The message of a form refused by a rate limit, shown again with the code still in it."""
    return _("You have sent this too often for now. Your code is still here: send it again in %(when)s.",
             when=duration(timedelta(seconds=wait)))


def _texts(status: int) -> tuple[str, str]:
    """A title and what to do, by status; built when asked, in the reader's language."""
    texts = {
        400: lambda: (_("This request could not be understood"),
                      _("Something in what was sent is not right. Go back, reload the page and try again.")),
        401: lambda: (_("Sign in first"), _("This page is for signed-in users.")),
        403: lambda: (_("Not yours to see"),
                      _("Your account cannot open this page. If you think it should, ask your instructor.")),
        404: lambda: (_("Page not found"),
                      _("There is nothing at this address: the link may be wrong, or what it pointed to is gone.")),
        405: lambda: (_("Not allowed here"), _("This address does not take this kind of request.")),
        413: lambda: (_("Too large"), _("What was sent is larger than this page takes.")),
        429: lambda: (_("Too many requests"), _("Wait a moment before you try again.")),
    }
    return texts.get(status, lambda: (_("Something went wrong on our side"),
                                      _("It has been logged. Try again in a moment.")))()


def retry_after(exc: HTTPException) -> int | None:
    """Seconds until a refused request may be tried again, from the refusal's own headers."""
    for name, value in exc.get_headers():
        if name.lower() == "retry-after" and value.strip().isdigit():
            return int(value)
    limit = limiter.current_limit  # the limit a rate-limited route just hit
    return max(1, int(limit.reset_at - time.time())) if limit is not None else None  # reset_at: whole seconds


def page(exc: HTTPException):
    status = exc.code or 500
    title, advice = _texts(status)
    if isinstance(exc, CSRFError):
        advice = _("The form was sent without its CSRF token, or with one that is not this session's "
                   "(it was open too long, or sent from another site). Reload the page and send it again.")
    wait = retry_after(exc) if status == 429 else None
    headers = {"Retry-After": str(wait)} if wait is not None else {}
    if status == 405:
        headers.update((k, v) for k, v in exc.get_headers() if k.lower() == "allow")
    try:
        body = render_template("errors/http.html", status=status, title=title, advice=advice,
                               wait=duration(timedelta(seconds=wait)) if wait else None)
    except Exception:  # the page itself failed (the database is down, say): the plain one
        log.exception("the error page for %d could not be drawn", status)
        return exc
    return body, status, headers
