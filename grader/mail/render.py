"""A mail's words: the templates of grader/templates/mail/, in the recipient's language,
rendered outside any request (a worker's periodic task renders as the site does)."""

from __future__ import annotations

import functools
from pathlib import Path

import jinja2
from babel.support import NullTranslations, Translations

TEMPLATES = Path(__file__).resolve().parent.parent / "templates" / "mail"
TRANSLATIONS = Path(__file__).resolve().parent.parent / "translations"
LANGUAGES = ("en", "ko")


def language_of(value: str | None) -> str:
    """One of LANGUAGES: the value's own where it is one ("ko-KR" is Korean), else English."""
    head = (value or "").replace("_", "-").split("-")[0].strip().lower()
    return head if head in LANGUAGES else "en"


@functools.cache
def _environment(language: str) -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), extensions=["jinja2.ext.i18n"],
                             autoescape=jinja2.select_autoescape(["html"]), undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    translations = NullTranslations() if language == "en" else Translations.load(str(TRANSLATIONS), [language])
    env.install_gettext_translations(translations, newstyle=True)
    return env


def render(kind: str, language: str, values: dict) -> tuple[str, str, str]:
    """(subject, plain text, HTML) of a mail of ``kind``."""
    env = _environment(language_of(language))
    text_template = env.get_template(f"{kind}.txt")
    context = text_template.new_context(dict(values))
    subject = " ".join("".join(text_template.blocks["subject"](context)).split())
    text = text_template.render(values)
    html = env.get_template(f"{kind}.html").render(values)
    return subject, text, html
