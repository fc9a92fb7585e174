"""Words for people in each language: :class:`Text`, and :func:`_` for the grader's own.

Every text a report shows is a Text: English, and Korean where there is one. Both sides
of a grade write them: the exercise sandbox (grader.testing: tests' messages and hints)
and the worker (grader.engine: why a grade is not simply graded, what stopped a call).
The grader's own words are written in English and translated through the same message
catalogue as the web pages (``grader/translations``), read here with gettext.
"""

from __future__ import annotations

import functools
import gettext
from dataclasses import dataclass
from pathlib import Path

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


@functools.cache
def _catalogue(lang: str) -> gettext.NullTranslations:
    return gettext.translation("messages", localedir=_CATALOGUE, languages=[lang], fallback=True)


def _(english: str) -> Text:
    """The grader's own words, translated through the message catalogue."""
    translated = {lang: _catalogue(lang).gettext(english) for lang in LANGUAGES[1:]}
    return Text(english, **{lang: t for lang, t in translated.items() if t != english})
