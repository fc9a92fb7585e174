"""What a failed hidden test says, and who decides how much of it a student sees.

Every text shown to a student is a :class:`Text`: English, and Korean where there is
one. An exercise writes its own (``Hint("...", "...")``, ``Mistake(value, "...", "...")``
or a ``Text``; a plain string is English only). The grader's own words are written in
English and translated through the same message catalogue as the web pages
(``grader/translations``), with :func:`_` (both live in grader.protocol.text: the worker
writes its words about a call, a time limit or a refusal, with them too).

:func:`revealed` is the one place that decides what a failed test shows: a visible
test's full message; of a hidden one, only what cannot echo a hidden input.
Hidden tests import these from grader.testing; grader.testing.evidence builds hints with them too.
"""

from __future__ import annotations

import builtins
import re
from dataclasses import replace

from grader.inside.wire import StudentException
from grader.protocol.text import Text, _, _catalogue  # noqa: F401 - hidden tests and evidence import them here


Hint = Text  # a hint is a Text: Hint("English", "한국어")


class Feedback(AssertionError):
    """A failed check with a message (shown for visible tests) and an optional hint."""

    def __init__(self, message: Text | str, hint: Text | str | None = None, message_ko: str | None = None):
        self.text = Text.of(message, message_ko)
        super().__init__(self.text.en)
        self.hint = Text.of(hint)

    @property
    def message(self) -> str:
        return self.text.en

    def shown(self, visible: bool) -> Text | None:
        """What the student sees of the message: all of it, in a visible test."""
        return self.text if visible else None


_KNOWN_EXCEPTIONS = frozenset(
    name for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
) | {"OutOfMemoryError", "GradcheckError"}


class StudentError(Feedback):
    """The student's code did not return: it raised, ran out of time or memory, or exited."""

    KINDS = {
        "exception": _("Your code raised an exception"),
        "timeout": _("Your code ran out of time"),
        "memory": _("Your code ran out of memory"),
        "exit": _("Your code ended its process instead of returning"),
        "crash": _("The process running your code crashed"),
        "too_large": _("Your code returned too much data"),
        "unencodable": _("Your code returned a value that cannot be graded"),
        "malformed": _("Your code sent back data the grader cannot read"),
        "sandbox": _("The grader could not run your code"),
        "refused": _("Your submission could not be run"),
    }
    _WHERE = _("{problem} in {function}()")
    _DETAIL = _("{problem} in {function}(): {detail}")

    def __init__(self, kind: str, function: str | None, detail: Text | str = "",
                 exception: StudentException | None = None):
        # detail is a Text: the worker says in each language what stopped the call; str() is its English.
        self.kind, self.function, self.exception = kind, function, exception
        self.detail = Text.of(detail or "")
        full = self._where(self.KINDS.get(kind, self.KINDS["crash"]), self.detail)
        if exception is not None:
            full = full + "\n" + _told(exception, self.detail)
        super().__init__(full)

    def shown(self, visible: bool) -> Text:
        return self.text if visible else self.short()

    def short(self) -> Text:
        """What a hidden test may show: no exception message (it could echo hidden inputs)."""
        problem = self.KINDS.get(self.kind, self.KINDS["crash"])
        detail: Text | str = ""
        if self.exception is not None:
            # The class name is the student's to choose, so only well-known ones are shown.
            # No line number: a submission can raise at a line chosen from the hidden input.
            detail = self.exception.type if self.exception.type in _KNOWN_EXCEPTIONS else _("an exception")
        elif self.kind in ("timeout", "memory", "too_large", "refused"):
            detail = self.detail
        return self._where(problem, detail)

    def _where(self, problem: Text, detail: Text | str) -> Text:
        """The problem, said of the student's function (None: of no function by name, for an
        error met in the grader's own helper code before any of the student's)."""
        detail = Text.of(detail)
        if self.function is None:
            return problem + (Text.of(": ") + detail if detail.en else "")
        return (self._DETAIL if detail.en else self._WHERE).format(problem=problem, function=self.function,
                                                                   detail=detail)


_TRACEBACK = _("Traceback (your code only):")
# The student sandbox's words for a function the tests call that the submission lacks,
# raised as an AttributeError of the student's code (grader.inside.warm).
_NO_FUNCTION = re.compile(r"your submission defines no function named ('[A-Za-z_][A-Za-z0-9_]*')")
_NO_FUNCTION_WORDS = _("your submission defines no function named {name}")


def _told(exception: StudentException, detail: Text) -> Text:
    """The exception as Python shows it, in each language: the student's frames, code and
    message as they are, the grader's words around them translated (and its message, where
    the grader wrote it: a function not defined, a value it cannot send back, which is the
    call's ``detail`` too)."""
    missing = _NO_FUNCTION.fullmatch(exception.message) if exception.type == "AttributeError" else None
    message = (_NO_FUNCTION_WORDS.format(name=missing.group(1)) if missing
               else detail if detail.en == exception.message else Text(exception.message))
    english = exception.format()
    if not (_TRACEBACK.ko or message.ko):
        return Text(english)
    return Text(english, replace(exception, message=message.get("ko")).format(head=_TRACEBACK.get("ko")))


EXERCISE_BUG = _("The exercise's test itself failed; this is not your mistake and was logged.")


def revealed(exc: BaseException | None, visible: bool) -> tuple[Text | None, Text | None, bool]:
    """What a failed test shows: (message, hint, whether the exercise's own code failed).

    A check that explains itself (Feedback, StudentError) decides its own message; a plain
    ``assert`` shows its text in a visible test only; any other exception is a bug in the
    exercise's test, not the student's doing, and says so."""
    if isinstance(exc, Feedback):
        return exc.shown(visible), exc.hint, False
    if isinstance(exc, AssertionError):
        return (Text(str(exc) or "assertion failed") if visible else None), None, False
    if exc is not None:
        return EXERCISE_BUG, None, True
    return None, None, False
