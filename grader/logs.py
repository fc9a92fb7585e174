"""Logs as one JSON object per line (GRADER_LOG_FORMAT=json), for a log pipeline to index;
any other value leaves Python's, gunicorn's and Celery's own formats as they are.

A line carries a fixed list of fields: time (UTC), level, logger, message, an exception's
traceback, and, on every line logged while a submission is graded (the task's and the
engine's), the submission, its exercise, the worker's name and the seconds since the grade
began (``duration_s``). A record's other attributes never show, so nothing passed along
with a record (a submission's source) reaches the log unless a message names it, and none
does. Passwords in URLs, bearer tokens, API keys, the service's secrets and an SQL error's
parameters are masked.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import time
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime, timezone
from typing import Iterator

from grader.settings import settings

# What a record may add to its line (``log.info(..., extra={"duration_s": 0.4})``).
FIELDS = ("submission", "exercise", "worker", "duration_s", "queue", "status", "task")
_MASKS = (
    (re.compile(r"(?P<keep>[a-zA-Z][\w+.-]*://[^/\s:@]*:)[^@/\s]+@"), r"\g<keep>***@"),  # scheme://user:pw@
    (re.compile(r"(?P<keep>\b[Bb]earer\s+)[^\s\"',;]+"), r"\g<keep>***"),
    (re.compile(r"\bgk_[0-9a-f]{12}_[A-Za-z0-9_-]+"), "gk_***"),  # an API key (grader.accounts.keys)
    # an invitation link (grader.courses.invitations): its first 8 characters tell it apart
    (re.compile(r"(?P<keep>/join/[A-Za-z0-9_-]{8})[A-Za-z0-9_-]+"), r"\g<keep>***"),
    # a mailed link into an account (grader.accounts.links)
    (re.compile(r"(?P<keep>/account/link/[A-Za-z0-9_-]{8})[A-Za-z0-9_-]+"), r"\g<keep>***"),
)

_grading: ContextVar[dict | None] = ContextVar("grading", default=None)


@contextmanager
def grading(submission_id: str, exercise: str, worker: str | None) -> Iterator[None]:
    """Every line logged inside the block carries the submission, its exercise, the worker
    and the seconds since the block began."""
    token = _grading.set({"submission": submission_id, "exercise": exercise, "worker": worker or "",
                          "started": time.monotonic()})
    try:
        yield
    finally:
        _grading.reset(token)


def mask(text: str) -> str:
    for pattern, replacement in _MASKS:
        text = pattern.sub(replacement, text)
    for secret in settings().secrets():
        text = text.replace(secret, "***")
    return text


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = {"time": datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds"),
                "level": record.levelname, "logger": record.name, "message": mask(record.getMessage())}
        context = _grading.get()
        if context is not None:
            line.update({key: context[key] for key in ("submission", "exercise", "worker")},
                        duration_s=round(time.monotonic() - context["started"], 3))
        line.update({name: getattr(record, name) for name in FIELDS if hasattr(record, name)})
        if record.exc_info:
            error = record.exc_info[1]
            if hasattr(error, "hide_parameters"):  # SQLAlchemy's: its parameters can be a source
                error.hide_parameters = True
            line["exception"] = mask(self.formatException(record.exc_info))
        return json.dumps(line, ensure_ascii=False, default=str)


def _to_json(logger: logging.Logger) -> None:
    for handler in logger.handlers:
        handler.setFormatter(JsonFormatter())


class Masked(logging.Filter):
    """Masks a record's message whatever the format: the access logs name URLs, and an
    invitation link's URL is the invitation."""

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        masked = mask(text)
        if masked != text:
            record.msg, record.args = masked, None
        return True


def configure(log_format: str) -> None:
    """For a web process: the access logs (gunicorn's, Werkzeug's) are masked; in JSON mode
    the root logger writes JSON lines to stderr at INFO, and gunicorn's own loggers (errors,
    access) write JSON too."""
    # Flask's own "Exception on <path>" line names the URL too (the app's logger: grader.app).
    for name in ("gunicorn.access", "werkzeug", "grader.app"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, Masked) for f in logger.filters):
            logger.addFilter(Masked())
    if log_format != "json":
        return
    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(logging.StreamHandler(sys.stderr))
        if root.level > logging.INFO:
            root.setLevel(logging.INFO)
    for logger in (root, logging.getLogger("gunicorn.error"), logging.getLogger("gunicorn.access")):
        _to_json(logger)


def for_celery(logger: logging.Logger | None = None, **_) -> None:
    """A receiver of Celery's after_setup_logger and after_setup_task_logger signals: in
    JSON mode, the worker's handlers write JSON."""
    if logger is not None and settings().log_format == "json":
        _to_json(logger)
