"""What makes a submission's source acceptable at all, checked the same way by every
way in and by the engine itself: text within the size limit, its line endings and a
leading byte order mark normalised (browsers send CRLF), and Python that parses.

Parsing runs nothing: the text is compiled (``compile``, which makes a code object and
never executes it), so every error Python would raise before running a line is found
here: the parser's, the scope errors of the symbol table (``nonlocal`` at module level, a
repeated argument) and the compiler's own (``return`` or ``break`` outside their place,
``await`` outside ``async``, a late ``from __future__``). Only that way does a source
that the graded file cannot import never spend an attempt.

What is stored is what runs: the graded file is UTF-8, so a coding declaration (PEP 263)
naming anything else is refused. Python would otherwise decode the file by it, and a
``# coding: utf-7`` source runs lines that every reader sees as a comment.
"""

from __future__ import annotations

import codecs
import functools
import re

from grader.refusals import Refused
from grader.settings import MAX_SOURCE_BYTES

FILENAME = "submission.py"  # the graded source's name in tracebacks and reports
_BOM = "\ufeff"
# PEP 263: a comment on line 1 (or on line 2 after a comment or blank line 1) naming a codec.
_CODING = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")
_BLANK_OR_COMMENT = re.compile(r"^[ \t\f]*(?:#.*)?$")


class SourceError(Refused):
    """A source no grader can take; ``code`` is machine-readable, the message says why.

    A ``syntax_error`` says where: ``line`` and ``column`` (1-based, in the source as
    normalised; None where the parser could not say, as for nesting too deep to parse)
    and ``reason``, the parser's own words. A notebook's also has ``cell`` and
    ``cell_line`` (grader.submissions.notebooks)."""

    def __init__(self, code: str, message: str, *, line: int | None = None, column: int | None = None,
                 reason: str | None = None, **details):
        super().__init__(code, message, line=line, column=column, reason=reason, cell=None, cell_line=None,
                         **details)

    @property
    def where(self) -> dict:
        """The place of a syntax error, as the API shows it (only what is known)."""
        place = {"line": self.line, "column": self.column, "cell": self.cell, "cell_line": self.cell_line}
        return {key: value for key, value in place.items() if value is not None}


def is_notebook_name(filename: str | None) -> bool:
    """Whether a file of this name is taken as a Jupyter notebook (grader.submissions.notebooks)."""
    return bool(filename) and filename.lower().endswith(".ipynb")


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
    _require_utf8_declared(source)
    return source


def _require_utf8_declared(source: str) -> None:
    """Refuse a coding declaration (where Python reads one) that is not UTF-8."""
    lines = source.split("\n", 2)
    for number, line in enumerate(lines[:2], 1):
        declared = _CODING.match(line)
        if declared:
            try:
                utf8 = codecs.lookup(declared.group(1)).name == "utf-8"
            except LookupError:
                utf8 = False
            if not utf8:
                raise SourceError("source_encoding", f"line {number} declares the encoding "
                                                     f"{declared.group(1)[:40]!r}; the source is read as UTF-8 only",
                                  line=number, encoding=declared.group(1)[:40])
            return
        if not _BLANK_OR_COMMENT.match(line):
            return  # Python looks no further than a first line of code


# A source is checked once per way in and again where it is stored (and a notebook's where
# it is converted): the few latest that parsed are remembered, so that costs one parse.
@functools.lru_cache(maxsize=8)
def _parse(text: str) -> None:
    try:
        compile(text, FILENAME, "exec", dont_inherit=True)  # never run: the code object is dropped
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
