"""Durations in words, in the page's language, the one way every page says how long:
time left before a due date or a timed assignment's end, how late a submission would be,
how long until a refused attempt may be sent, the class's time to full marks.

A span reads in its largest whole unit, then the next one down where there is some of it:
"45 seconds", "12 minutes", "3 hours 5 minutes", "2 days 4 hours" (in Korean "2일 4시간"),
never "0 hours 0 minutes". The units' words are CLDR's (Babel), in the page's locale."""

from __future__ import annotations

from datetime import timedelta

from babel.units import format_unit
from flask_babel import get_locale, gettext as _

UNITS = (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1))


def duration(span: timedelta | None) -> str:
    """``span`` in words ("–" for None; a negative span is "0 seconds"), to the nearest
    second (the milliseconds a request takes never show as "6 minutes 59 seconds")."""
    if span is None:
        return "–"
    seconds = max(0, round(span.total_seconds()))
    k = next(k for k, (_unit, size) in enumerate(UNITS) if seconds >= size or size == 1)
    unit, size = UNITS[k]
    parts = [(seconds // size, unit)]
    if size > 1:
        smaller, its_size = UNITS[k + 1]
        if seconds % size // its_size:
            parts.append((seconds % size // its_size, smaller))
    locale = get_locale() or "en"
    return " ".join(format_unit(n, f"duration-{u}", length="long", locale=locale) for n, u in parts)


def minutes(n: int) -> str:
    """``n`` minutes in words: a timed assignment's limit, kept in whole minutes."""
    return duration(timedelta(minutes=n))


def left(span: timedelta) -> str:
    """Time left before a moment: "3 hours 5 minutes left", or "past" once it has passed."""
    return _("%(span)s left", span=duration(span)) if span.total_seconds() >= 0.5 else _("past")
