"""What makes a submission's source acceptable at all, checked the same way by every
way in and by the engine itself. Reads the text only: nothing here parses or runs it."""

from __future__ import annotations

from grader.settings import MAX_SOURCE_BYTES


class SourceError(ValueError):
    """A source no grader can take; ``code`` is machine-readable, the message says why."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code, self.message = code, message


def check(source: str | bytes) -> str:
    """The source as text, or SourceError saying what is wrong with it."""
    if isinstance(source, bytes):
        if len(source) > MAX_SOURCE_BYTES:
            raise SourceError("source_too_large", f"the source is {len(source)} bytes; "
                                                  f"the limit is {MAX_SOURCE_BYTES}")
        try:
            source = source.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SourceError("source_not_utf8", f"the source is not UTF-8 text (byte {exc.start})") from None
    if not isinstance(source, str):
        raise SourceError("source_invalid", "the source must be a string")
    if not source.strip():
        raise SourceError("source_empty", "the source is empty")
    try:
        size = len(source.encode("utf-8"))
    except UnicodeEncodeError as exc:  # a lone surrogate, as JSON's "\ud800" gives
        raise SourceError("source_not_utf8", f"the source is not UTF-8 text (character {exc.start})") from None
    if size > MAX_SOURCE_BYTES:
        raise SourceError("source_too_large", f"the source is {size} bytes; the limit is {MAX_SOURCE_BYTES}")
    if "\x00" in source:
        raise SourceError("source_invalid", "the source contains a NUL character")
    return source
