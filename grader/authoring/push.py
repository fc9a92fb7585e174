"""Publishing a bundle to a running service from elsewhere (an instructor's laptop, their
repository's CI): send the zip to POST /api/v1/exercises, then follow its check.

Only the standard library: this runs wherever `grader` is installed. The key goes to
the address the instructor gave and nowhere else: redirects are refused (urllib would
carry the Authorization header to wherever one points), and the check is followed at a
URL built from that address, not one the answer names.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field

from grader.authoring.check_table import CheckRow

API = "/api/v1"


class PushError(Exception):
    """The bundle could not be sent or followed. ``refused``: the service looked at it and
    said no (a bad bundle, someone else's exercise); otherwise the service, the address or
    the key is the problem."""

    def __init__(self, message: str, *, refused: bool = False):
        super().__init__(message)
        self.refused = refused


@dataclass
class Check:
    id: int
    slug: str
    version: int
    status: str                 # checking, published or rejected
    error: str | None
    rows: list[CheckRow]
    warnings: list[str] = field(default_factory=list)  # what the check warns of; fails nothing


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        raise PushError(f"the service answered with a redirect to {newurl}; give its final address "
                        f"(https:// included) as --url")


_open = urllib.request.build_opener(_NoRedirects).open


def base_url(url: str) -> str:
    parts = urllib.parse.urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise PushError(f"{url!r} is not an http(s) address of the service, e.g. https://grader.example.edu")
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), "", ""))


def send(url: str, key: str, archive: bytes, *, timeout: float = 60) -> Check:
    """POST the zip; the check as the service took it (status "checking")."""
    answer = _call(urllib.request.Request(base_url(url) + API + "/exercises", data=archive, method="POST",
                                          headers=_headers(key, {"Content-Type": "application/zip"})), timeout)
    return Check(answer["id"], answer["slug"], answer["version"], answer["status"], None, [])


def follow(url: str, key: str, check: Check, *, timeout: float = 900, every: float = 1.0,
           on_wait=None) -> Check:
    """Poll the check until a worker has decided it, or PushError after ``timeout`` seconds.
    ``on_wait(check)`` is called between polls."""
    address = f"{base_url(url)}{API}/exercise-checks/{int(check.id)}"
    deadline = time.monotonic() + timeout
    while True:
        answer = _call(urllib.request.Request(address, headers=_headers(key)), 60)
        rows = [CheckRow(answer["slug"], r["subject"], r["expected"], r["actual"], bool(r["ok"]))
                for r in answer["checks"]]
        check = Check(answer["id"], answer["slug"], answer["version"], answer["status"], answer["error"], rows,
                      [str(w) for w in answer.get("warnings") or []])
        if check.status != "checking":
            return check
        if time.monotonic() > deadline:
            raise PushError(f"check {check.id} was still running after {timeout:g} s; follow it at {address}")
        if on_wait:
            on_wait(check)
        time.sleep(every)


def release(url: str, key: str, slug: str, *, timeout: float = 60) -> bool:
    """Release the published exercise ``slug`` to the catalogue (it was a draft: shown to
    its author and its courses' staff alone). Returns whether it is released now."""
    address = f"{base_url(url)}{API}/exercises/{urllib.parse.quote(slug, safe='')}/release"
    answer = _call(urllib.request.Request(address, data=b"", method="POST", headers=_headers(key)), timeout)
    return bool(answer.get("released"))


def _headers(key: str, extra: dict | None = None) -> dict:
    if not key:
        raise PushError("no API key: set GRADER_API_KEY to a key with the scope exercises:write")
    return {"Authorization": f"Bearer {key}", "Accept": "application/json", **(extra or {})}


def _call(request: urllib.request.Request, timeout: float) -> dict:
    try:
        with _open(request, timeout=timeout) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as exc:
        try:
            error = json.loads(exc.read())["error"]
            code, message = error["code"], error["message"]
        except (ValueError, KeyError, TypeError):
            raise PushError(f"the service answered {exc.code} {exc.reason}") from None
        # The bundle itself was refused: the instructor's to fix, like a failed check.
        refused = code in ("invalid_bundle", "exercise_not_yours", "request_too_large")
        raise PushError(f"{message} ({code})", refused=refused) from None
    except (urllib.error.URLError, OSError) as exc:
        raise PushError(f"cannot reach {request.full_url}: {getattr(exc, 'reason', exc)}") from None
    except ValueError:
        raise PushError(f"{request.full_url} did not answer with JSON: is it the grader's address?") from None
