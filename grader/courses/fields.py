"""Checking what a course's forms and API bodies give, before anything is stored: each
check raises CourseError (a code for the API, a message for people) or hands back the
value clean."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from grader.refusals import Refused


class CourseError(Refused):
    """A course change that cannot be made (a grader.refusals code, its message, details)."""


def text(value, what: str, limit: int, *, required: bool = True) -> str:
    if value is None:
        value = ""
    if not isinstance(value, str) or len(value) > limit or any(ord(c) < 32 for c in value):
        raise CourseError("invalid_course", f"{what} must be text of at most {limit} printable characters")
    if required and not value.strip():
        raise CourseError("invalid_course", f"{what} is required")
    return value.strip()


def moment(value, what: str, *, required: bool = False) -> datetime | None:
    if value is None or value == "":
        if required:
            raise CourseError("invalid_assignment", f"{what} is required")
        return None
    if isinstance(value, datetime):
        moment = value
    else:
        try:
            moment = datetime.fromisoformat(str(value))
        except ValueError:
            raise CourseError("invalid_assignment", f"{what} must be a time such as 2026-12-10T23:59+09:00, "
                                                    f"not {str(value)[:40]!r}") from None
    if moment.tzinfo is None:
        raise CourseError("invalid_assignment", f"{what} must say its time zone (2026-12-10T23:59+09:00)")
    return moment.astimezone(ZoneInfo("UTC"))


def number(value, what: str, *, low: float, high: float, whole: bool = False, optional: bool = True):
    if value is None or value == "":
        if optional:
            return None
        raise CourseError("invalid_assignment", f"{what} is required")
    try:
        number = int(value) if whole else float(value)
    except (TypeError, ValueError):
        number = None
    if number is None or (whole and isinstance(value, float) and not value.is_integer()) or not low <= number <= high:
        kind = "a whole number" if whole else "a number"
        raise CourseError("invalid_assignment", f"{what} must be {kind} from {low:g} to {high:g}")
    return number


def choice(value, what: str, choices: tuple[str, ...], default: str) -> str:
    value = default if value in (None, "") else value
    if value not in choices:
        raise CourseError("invalid_assignment", f"{what} must be one of {', '.join(choices)}, not {str(value)[:40]!r}")
    return value
