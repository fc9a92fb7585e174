"""What a failed hidden test says, and who decides how much of it a student sees.

Every text shown to a student is a :class:`Text`: English, and Korean where there is
one. An exercise writes its own (``Hint("...", "...")``, ``Mistake(value, "...", "...")``
or a ``Text``; a plain string is English only). The grader's own words are written in
English and translated through the same message catalogue as the web pages
(``grader/translations``), with :func:`_`.

:func:`revealed` is the one place that decides what a failed test shows: a visible
test's full message; of a hidden one, only what cannot echo a hidden input.
Hidden tests import these from grader.testing; grader.testing.evidence builds hints with them too.
"""

from __future__ import annotations

import builtins
import functools
import gettext
from dataclasses import dataclass
from pathlib import Path

from grader.inside.wire import StudentException
from grader.protocol.report import LANGUAGES
_CATALOGUE = Path(__file__).resolve().parent.parent / "translations"


@dataclass(frozen=True)
class Text:
    """Words for students in each language: ``en`` always, the others where written."""

    en: str
    ko: str | None = None

    @classmethod
    def of(cls, value, ko: str | None = None) -> "Text | None":
        """A Text from what an author may write: a Text, a string (with ``ko`` beside it),
        an (English, Korean) pair, or None."""
        if value is None or isinstance(value, Text):
            return value
        if isinstance(value, (tuple, list)) and len(value) == 2:
            return cls(str(value[0]), value[1])
        return cls(str(value), ko)

    def get(self, lang: str) -> str:
        """The text in ``lang``, else in English."""
        written = getattr(self, lang) if lang in LANGUAGES else None
        return written or self.en

    def translations(self) -> dict[str, str]:
        """The languages other than English that this text has."""
        return {lang: self.get(lang) for lang in LANGUAGES[1:] if getattr(self, lang)}

    def format(self, **values) -> "Text":
        """Each language's text with ``values`` filled in (a Text value in the same language)."""
        def fill(lang: str, template: str) -> str:
            return template.format(**{k: v.get(lang) if isinstance(v, Text) else v for k, v in values.items()})
        return Text(fill("en", self.en), fill("ko", self.ko) if self.ko else None)

    def __add__(self, other: "Text | str") -> "Text":
        other = Text.of(other)
        ko = self.ko or other.ko
        return Text(self.en + other.en, (self.get("ko") + other.get("ko")) if ko else None)

    def __str__(self) -> str:
        return self.en


Hint = Text  # a hint is a Text: Hint("English", "한국어")


@functools.cache
def _catalogue(lang: str) -> gettext.NullTranslations:
    return gettext.translation("messages", localedir=_CATALOGUE, languages=[lang], fallback=True)


def _(english: str) -> Text:
    """The grader's own words, translated through the message catalogue."""
    translated = {lang: _catalogue(lang).gettext(english) for lang in LANGUAGES[1:]}
    return Text(english, **{lang: t for lang, t in translated.items() if t != english})


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

    def __init__(self, kind: str, function: str | None, detail: str = "",
                 exception: StudentException | None = None):
        self.kind, self.function, self.exception, self.detail = kind, function, exception, detail
        full = self._where(self.KINDS.get(kind, self.KINDS["crash"]), detail)
        if exception is not None:
            full = full + ("\n" + exception.format())
        super().__init__(full)

    def shown(self, visible: bool) -> Text:
        return self.text if visible else self.short()

    def short(self) -> Text:
        """What a hidden test may show: no exception message (it could echo hidden inputs)."""
        problem = self.KINDS.get(self.kind, self.KINDS["crash"])
        detail = ""
        if self.exception is not None:
            # The class name is the student's to choose, so only well-known ones are shown.
            # No line number: a submission can raise at a line chosen from the hidden input.
            detail = self.exception.type if self.exception.type in _KNOWN_EXCEPTIONS else _("an exception")
        elif self.kind in ("timeout", "memory", "too_large", "refused"):
            detail = self.detail
        return self._where(problem, detail)

    def _where(self, problem: Text, detail) -> Text:
        """The problem, said of the student's function (None: of no function by name, for an
        error met in the grader's own helper code before any of the student's)."""
        if self.function is None:
            return problem + (Text.of(": ") + detail if detail else "")
        return (self._DETAIL if detail else self._WHERE).format(problem=problem, function=self.function,
                                                                detail=detail)


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
