"""The service's own notion of now: what deadlines, late penalties and cool-downs are
measured against, and what every row stores.

It is the real time, unless moved: ``GRADER_NOW`` (an ISO 8601 time, for a whole process,
such as a worker a test starts; or ``@`` and a file's path, whose content is that time, read
at every use, so that a running process's time can be moved, and an empty or missing file is
the real time) or :func:`travel` (in this process). Moving it moves the service's time and
nothing else: libraries, timeouts and the rate limits keep the real one.
"""

from __future__ import annotations

from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from typing import Iterator

from grader.settings import settings

_moved: timedelta | None = None
_still: datetime | None = None


def now() -> datetime:
    """Timezone-aware UTC."""
    if _still is not None:
        return _still
    real = datetime.now(timezone.utc)
    if _moved is not None:
        return real + _moved
    fixed = settings().now
    if fixed.startswith("@"):
        fixed = _read_clock(fixed[1:])
    return parse(fixed) if fixed else real


def _read_clock(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as clock:
            return clock.read().strip()
    except FileNotFoundError:
        return ""


def parse(text: str) -> datetime:
    """An ISO 8601 time; one without a zone is taken as UTC."""
    moment = datetime.fromisoformat(text)
    return moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment.astimezone(timezone.utc)


def as_utc(moment: datetime) -> datetime:
    """A stored time as aware UTC: SQLite hands back naive datetimes, which are UTC."""
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


@contextmanager
def travel(to: datetime, *, still: bool = False) -> Iterator[None]:
    """The service's now is ``to`` (and runs on from there; ``still``: stays there, for words
    precise to the second) while the block runs."""
    global _moved, _still
    before = _moved, _still
    _moved, _still = to - datetime.now(timezone.utc), (to.astimezone(timezone.utc) if still else None)
    try:
        yield
    finally:
        _moved, _still = before
