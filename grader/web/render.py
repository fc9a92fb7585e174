"""Turning stored things into what a page shows: statements as safe HTML, reports in
the reader's language."""

from __future__ import annotations

import markdown
import nh3
from flask_babel import gettext
from markupsafe import Markup

from grader import refusals

# What a statement may contain once rendered; anything else (script, style, event
# handlers, javascript: links) is removed, whoever wrote the Markdown.
_TAGS = {"a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "div", "dl", "dt", "em", "h1", "h2",
         "h3", "h4", "h5", "h6", "hr", "i", "img", "li", "ol", "p", "pre", "span", "strong", "sub", "sup",
         "table", "tbody", "td", "th", "thead", "tr", "ul"}
_ATTRIBUTES = {"a": {"href", "title"}, "img": {"src", "alt", "title"}, "code": {"class"},
               "th": {"align"}, "td": {"align"}}


def _local_images(element: str, attribute: str, value: str) -> str | None:
    """An image comes from the statement itself (a data: URI) or this site, never from
    elsewhere: a remote image would tell its host who reads the statement, and when. (The
    Content-Security-Policy's img-src says the same to the browser.)"""
    stripped = value.strip().lower()
    if attribute == "href" and stripped.startswith("data:"):
        return None  # data: is allowed for images only
    if element == "img" and attribute == "src":
        if stripped.startswith("data:image/"):
            return value
        if "://" in stripped or stripped.startswith("//") or ":" in stripped.split("/", 1)[0] or "\\" in value:
            return None
    return value


def markdown_html(text: str) -> Markup:
    html = markdown.markdown(text, extensions=["fenced_code", "tables", "sane_lists"])
    return Markup(nh3.clean(html, tags=_TAGS, attributes=_ATTRIBUTES,
                            url_schemes={"http", "https", "mailto", "data"}, attribute_filter=_local_images,
                            link_rel="noopener noreferrer nofollow",
                            # A code block wider than the screen scrolls: the keyboard must reach it.
                            set_tag_attribute_values={"pre": {"tabindex": "0"}}))


def localized_tests(report: dict, lang: str) -> list[dict]:
    """The report's tests with name, message and hint in ``lang`` where the exercise has them."""
    tests = []
    for test in report.get("tests", []):
        local = (test.get("i18n") or {}).get(lang, {})
        tests.append({**test, "name": local.get("name") or test.get("name"),
                      "message": local.get("message") or test.get("message"),
                      "hint": local.get("hint") or test.get("hint")})
    return tests


def report_words(report: dict | None, lang: str) -> dict:
    """The report's own message (why it is not simply graded) and warnings in ``lang``
    where the report has them; its tests' words are localized_tests'."""
    report = report or {}
    own = (report.get("i18n") or {}).get(lang, {})
    warnings = report.get("warnings") or []
    return {"message": (own.get("message") or report["message"]) if report.get("message") else None,
            "warnings": (own.get("warnings") or warnings) if warnings else []}


def refused_words(refusal: refusals.Refused, **values) -> str:
    """A refusal in the reader's language: its code's words (grader.refusals) with the
    refusal's details and the page's ``values`` (times in the course's zone, say), its
    message in the reader's language too where the refusal says it in words (``why``, with
    ``why_values``); the English message where the code has no words, or its words need
    what is not given."""
    words, params = refusals.words(refusal)
    if words is None:
        return refusal.message
    try:
        if getattr(refusal, "why", None):  # the message is itself words for people, with values of its own
            params["message"] = gettext(refusal.why, **refusal.why_values)
        return gettext(words, **{**params, **values})
    except (KeyError, TypeError, ValueError):
        return refusal.message
