"""The worker's words about a grade, in each language: why a report is not simply graded
(its message), its warnings, and what stopped a call, which a test's message quotes.

The English is what the engine and grader.source have always written, kept as it is: API
clients and logs read it. The other languages come through the message catalogue
(grader.protocol.text). The student's own words (their code, the parser's reason for
their syntax error) are quoted as they are, in every language.
"""

from __future__ import annotations

import re

from grader.protocol import CallOutcome
from grader.protocol.text import Text, _
from grader.settings import MAX_SOURCE_BYTES
from grader.source import SourceError

# ------------------------------------------------------------------ the report's message

TIME_LIMIT = _("a call ran out of time")
MEMORY_LIMIT = _("a call ran out of memory")
NO_GPU = _("this exercise needs a GPU and this worker has none")
_SANDBOX_FAILED = _("The sandbox that runs your code failed; this is not a problem in your code.")
_GRADER_FAILED = _("The grader itself failed; this is not a problem in your code.")


def failed(status: str, detail: str) -> Text:
    """The grader's own failure (sandbox_error or internal_error): its detail in English,
    for the operator; in other languages, what it means for the student, without the detail."""
    said = _SANDBOX_FAILED if status == "sandbox_error" else _GRADER_FAILED
    return Text(detail, said.ko)


_SOURCE = {
    "source_empty": _("the source is empty"),
    "source_invalid": _("the source contains a NUL character"),
    "source_not_utf8": _("the source is not UTF-8 text"),
    "source_too_large": _("the source is larger than {limit} bytes"),
    "source_encoding": _("line {line} declares the encoding {encoding}; the source is read as UTF-8 only"),
}
_SYNTAX_AT_COLUMN = _("syntax error in submission.py, line {line}, column {column}: {reason}")
_SYNTAX_AT_LINE = _("syntax error in submission.py, line {line}: {reason}")
_SYNTAX = _("syntax error in submission.py: {reason}")
_NESTED = _("submission.py cannot be parsed: it is nested too deeply")
_NOT_RUN = _("the submission cannot be run")


def refused_source(exc: SourceError) -> Text:
    """A source the engine will not run (grader.source's refusal), in each language: its
    English message as it is; the parser's reason stays Python's own words."""
    details = vars(exc)
    if exc.code == "syntax_error" and exc.reason is None:
        said = _NESTED
    elif exc.code == "syntax_error":
        said = (_SYNTAX_AT_COLUMN if exc.column else _SYNTAX_AT_LINE if exc.line else _SYNTAX).format(
            line=exc.line, column=exc.column, reason=exc.reason)
    elif exc.code == "source_encoding":
        said = _SOURCE["source_encoding"].format(line=details.get("line"), encoding=repr(details.get("encoding")))
    else:
        said = _SOURCE.get(exc.code, _NOT_RUN).format(limit=MAX_SOURCE_BYTES)
    return Text(exc.message, said.ko)


# ------------------------------------------------------------------ warnings

UNSAFE = _("UNSAFE development mode: this submission ran without a sandbox (GRADER_UNSAFE_NO_SANDBOX is set); "
           "never use this report for grading")
_TESTS_ERRORED = _("some of the exercise's own tests errored: {errors}")


def tests_errored(errors: list[str]) -> Text:
    return _TESTS_ERRORED.format(errors="; ".join(errors))


# ------------------------------------------------------------------ what stopped a call

WHOLE_SUBMISSION_TIME = _("time limit for the whole submission exceeded ({seconds} s)")


def _read_back(words: Text, **values: str) -> tuple[re.Pattern, Text]:
    """``words`` and the pattern that reads its English back whole: the text as written,
    each ``{value}`` a group of the characters ``values`` gives it."""
    parts = re.split(r"\{(\w+)\}", words.en)  # text, name, text, name, ..., text
    pattern = "".join(f"(?P<{part}>{values[part]})" if i % 2 else re.escape(part) for i, part in enumerate(parts))
    return re.compile(pattern), words


# The details the student sandbox writes (grader.engine.sandbox), each read back for its
# values: what a test's message quotes after "ran out of time" and the like.
_CALL_DETAILS = [
    _read_back(_("time limit exceeded ({seconds} s per call)"), seconds=r"[0-9.]+"),
    _read_back(_("CPU time limit exceeded ({seconds} s per call)"), seconds=r"[0-9.]+"),
    _read_back(_("memory limit exceeded ({mib} MiB per call)"), mib=r"[0-9]+"),
    _read_back(_("your function returned more than {mib} MiB of data"), mib=r"[0-9]+"),
    _read_back(_("the process running your code was killed by {signal}"), signal=r"\w+"),
    _read_back(_("your code ended the process (exit status {status}) instead of returning"), status=r"-?[0-9]+"),
    # A value the student sandbox could not send back (grader.inside.wire's words).
    _read_back(_("a value of type {type} cannot be graded; return tensors, numbers, strings, None, or lists, "
                 "tuples and dicts of them"), type=r"\w+"),
    _read_back(_("a {type} (a torch.Tensor subclass) cannot be graded; return a plain tensor"), type=r"\w+"),
    _read_back(_("tensors of dtype {dtype} cannot be graded"), dtype=r"[\w.]+"),
    _read_back(_("sparse tensors cannot be graded; return a dense tensor")),
    _read_back(_("value is nested too deeply or has too many parts (a .grad counts as one)")),
    _read_back(_("value is nested too deeply or has too many parts")),
    _read_back(_("integer is too large")),
    _read_back(_("dictionary keys must be strings or integers")),
]
# Of these kinds, the detail's cause is said without it: a decoder's or a sandbox's reason
# helps the operator, not the student.
_KIND_DETAILS = {
    "malformed": _("your code sent back something that is not a result"),
    "sandbox": _("the sandbox failed, not your code"),
}


def call_detail(out: CallOutcome) -> CallOutcome:
    """``out`` with its detail in each language, where the detail is written in English only."""
    if out.detail and not out.detail_i18n:
        said = next((words.format(**found.groupdict()) for pattern, words in _CALL_DETAILS
                     for found in [pattern.fullmatch(out.detail)] if found), _KIND_DETAILS.get(out.kind))
        if said is not None:
            out.detail_i18n = Text(out.detail, said.ko).translations()
    return out
