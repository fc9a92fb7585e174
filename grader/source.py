"""What makes a submission's source acceptable at all, checked the same way by every
way in and by the engine itself: text within the size limit, its line endings and a
leading byte order mark normalised (browsers send CRLF), and Python that parses.

Parsing runs nothing: the text goes through CPython's parser and the symbol table it
builds (``symtable``), never the compiler's code generation, so no code object is made.
The symbol table rather than ``ast.parse`` because it finds the same syntax errors, at
the same places, plus the scope errors the compiler would raise (``nonlocal`` at module
level, a repeated argument), in half the time: it never builds the Python ``ast`` objects.
"""

from __future__ import annotations

import functools
import symtable

from grader.refusals import Refused
from grader.settings import MAX_SOURCE_BYTES

FILENAME = "submission.py"  # the graded source's name in tracebacks and reports
_BOM = "\ufeff"


class SourceError(Refused):
    """A source no grader can take; ``code`` is machine-readable, the message says why.

    A ``syntax_error`` says where: ``line`` and ``column`` (1-based, in the source as
    normalised; None where the parser could not say, as for nesting too deep to parse)
    and ``reason``, the parser's own words. A notebook's also has ``cell`` and
    ``cell_line`` (grader.submissions.notebooks)."""

    def __init__(self, code: str, message: str, *, line: int | None = None, column: int | None = None,
                 reason: str | None = None):
        super().__init__(code, message, line=line, column=column, reason=reason, cell=None, cell_line=None)

    @property
    def where(self) -> dict:
        """The place of a syntax error, as the API shows it (only what is known)."""
        place = {"line": self.line, "column": self.column, "cell": self.cell, "cell_line": self.cell_line}
        return {key: value for key, value in place.items() if value is not None}


def check(source: str | bytes) -> str:
    """The source as text (LF line endings, no byte order mark), or SourceError saying
    what is wrong with it."""
    text = normalised(source)
    _parse(text)
    return text


def normalised(source: str | bytes) -> str:
    """The source as text with every rule but parsing applied, or SourceError."""
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
    # An editor's BOM (as bytes, decoded above, or as a character) is no part of the code.
    source = source.removeprefix(_BOM).replace("\r\n", "\n").replace("\r", "\n")
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


# A source is checked once per way in and again where it is stored (and a notebook's where
# it is converted): the few latest that parsed are remembered, so that costs one parse.
@functools.lru_cache(maxsize=8)
def _parse(text: str) -> None:
    try:
        symtable.symtable(text, FILENAME, "exec")
    except SyntaxError as exc:  # IndentationError and TabError too
        raise syntax_error(exc) from None
    except (ValueError, RecursionError, MemoryError) as exc:
        # Nesting deeper than the parser's or the interpreter's stack: a refusal, not a crash.
        raise SourceError("syntax_error", f"{FILENAME} cannot be parsed: it is nested too deeply "
                                          f"({type(exc).__name__})") from None


def syntax_error(exc: SyntaxError) -> SourceError:
    """The parser's SyntaxError as a refusal that says where and why. The message names
    ``submission.py, line N`` as tracebacks do, so a notebook's gets its cell the same way."""
    line = exc.lineno if isinstance(exc.lineno, int) and exc.lineno > 0 else None
    column = exc.offset if line and isinstance(exc.offset, int) and exc.offset > 0 else None
    reason = str(exc.msg or "invalid syntax")[:300]
    place = f"{FILENAME}, line {line}" + (f", column {column}" if column else "") if line else FILENAME
    return SourceError("syntax_error", f"syntax error in {place}: {reason}", line=line, column=column,
                       reason=reason)
