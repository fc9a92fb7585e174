"""Text from a submission, made safe to show: every control and bidi character as an escape;
and text from outside made plain to store (``plain``).

What a submission prints or puts in an exception reaches a terminal running ``grader
grade``, JSON readers and the web page. An ANSI sequence can erase a report and draw a
forged one; a bidi override can make text (or code) read differently from what it is.
Such characters are shown as ``\\x1b`` or ``\\u202e``; newlines and tabs stay.
A leaf module, so that the web side can use it without the engine.
"""

from __future__ import annotations

import re

# C0 and C1 controls and DEL (but newline and tab), the bidi embeddings, overrides, isolates
# and marks, and the line and paragraph separators some viewers break lines at.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def shown(text: str | None) -> str | None:
    """``text`` with each unsafe character written as its escape."""
    if not text:
        return text
    return _UNSAFE.sub(_escape, text)


# What ends a line or spaces words, among the characters above: in a one-line text, a space.
_BREAKS = re.compile("[\t\n\x0b\x0c\r\x1c-\x1f\x85\u2028\u2029]+")


def plain(text: str | None) -> str:
    """One line of text from outside (a name, a course's title or label an LMS sent) as it
    is stored: tabs and line breaks become a space, every other control and bidi character
    goes, and the ends are trimmed."""
    if not text:
        return ""
    return _UNSAFE.sub("", _BREAKS.sub(" ", text)).strip()
