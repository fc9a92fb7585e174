"""A course's times: its zone, and a moment as the course reads it."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from grader.clock import as_utc
from grader.courses.models import Course

aware = as_utc  # every time the service stores is UTC; SQLite hands it back naive


def zone(name: str | None) -> ZoneInfo:
    """A course's time zone (UTC where it has none)."""
    try:
        return ZoneInfo(name or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


def shown(moment: datetime | None, course: Course | None) -> str:
    """A time as the course reads it, always with its zone: 2026-12-10 23:59 KST (Asia/Seoul);
    outside any course, in UTC."""
    if moment is None:
        return ""
    tz = zone(course.time_zone if course is not None else None)
    local = aware(moment).astimezone(tz)
    return f"{local:%Y-%m-%d %H:%M} {local.tzname()} ({tz.key})"



def iso(moment: datetime | None, course: Course | None) -> str:
    """A time for a machine to read (ISO 8601) in the course's zone, its UTC offset with it:
    2026-12-10T23:59:00+09:00; outside any course, in UTC."""
    if moment is None:
        return ""
    return aware(moment).astimezone(zone(course.time_zone if course is not None else None)).isoformat(
        timespec="seconds")
