"""Query parameters as the pages use them: clamped to what the database can take, so
that a hand-edited URL is a page (perhaps empty), never a 500."""

from __future__ import annotations

from flask import request

MAX_PAGE = 100_000  # far past any real list; keeps OFFSET well inside a 64-bit integer
MAX_ID = 2**31 - 1  # the integer primary keys' range (PostgreSQL's integer)


def page_number(name: str = "page") -> int:
    """A 1-based page number: anything not a number is page 1, anything past MAX_PAGE is MAX_PAGE."""
    raw = request.args.get(name, "").strip()
    if not raw.isascii() or not raw.isdigit():
        return 1
    return min(max(1, int(raw[:12])), MAX_PAGE)


def text_filter(name: str, limit: int = 200) -> str:
    """A text filter, stripped, cut to ``limit`` characters and without control characters
    (PostgreSQL refuses a NUL in any string)."""
    raw = request.args.get(name, "")
    return "".join(c for c in raw if ord(c) >= 32 and ord(c) != 127).strip()[:limit]


def valid_id(value: int) -> bool:
    """Whether an <int:...> from a URL can be a row's id at all."""
    return 0 < value <= MAX_ID
