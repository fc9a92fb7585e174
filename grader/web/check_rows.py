"""A bundle's check table in the reader's language. The check (grader.authoring.check) writes
its rows in English for the command line and the API; the page puts each fixed phrase, and
the numbers and names inside the known ones, into the reader's language. Anything else (a
test's name, a hint, a TOML error) is shown as it was written."""

from __future__ import annotations

import re

from flask_babel import gettext as _

from grader.web import bp


def _phrases() -> dict[str, str]:
    return {
        "solution": _("the solution"), "starter": _("the starter code"), "bundle": _("the bundle"),
        "full marks": _("full marks"), "same report twice": _("the same report twice"),
        "identical": _("identical"), "different": _("different"),
        ">= 1 visible and >= 1 hidden test": _("at least one visible and one hidden test"),
        "less than full marks": _("less than full marks"), "valid mutants/mutants.toml": _("a valid mutants/mutants.toml"),
        ">= 3 mutants": _("at least 3 mutants"),
        "a .py file and a [section] in mutants.toml": _("a .py file and a [section] in mutants.toml"),
        "no file": _("no file"), "not declared": _("not declared"), "nothing": _("nothing"), "yes": _("yes"),
        "every hint of the tests has a row in the table": _("every hint of the tests has a row in the table"),
        "a mutant of the row shows and declares its hint": _("a mutant of the row shows and declares its hint"),
        "declares only hints of the table": _("declares only hints of the table"),
        "shows exactly the hints it declares": _("shows exactly the hints it declares"),
        "shown to no mutant that does not declare it": _("shown to no mutant that does not declare it"),
        "none": _("none"), "no hint": _("no hint"),
        "no hint claims another mistake": _("no hint claims another mistake"),
        "only hints declared for it": _("only hints declared for it"),
        "show each hint declared for them": _("show each hint declared for them"),
        "valid mutants/near_misses.toml": _("a valid mutants/near_misses.toml"),
        "mutants/near_misses.toml names functions of the reference and phrases of the table":
            _("mutants/near_misses.toml names functions of the reference and phrases of the table"),
    }


def _changes() -> dict[str, str]:
    """The changes of grader.authoring.near_miss.CHANGES."""
    return {"scaled by 1.37": _("scaled by 1.37"), "negated": _("negated"), "plus 0.01": _("plus 0.01")}


_PATTERNS = (
    (re.compile(r"^mutant:(.+)$"), lambda m: _("mutant %(name)s", name=m[1])),
    (re.compile(r"^row:(.+)$"), lambda m: _("table row %(phrase)s", phrase=m[1])),
    (re.compile(r"^near miss (\S+) (scaled by 1\.37|negated|plus 0\.01)$"),
     lambda m: _("near miss %(function)s (%(change)s)", function=m[1], change=_changes()[m[2]])),
    (re.compile(r"^near misses of (\S+)$"), lambda m: _("near misses of %(function)s", function=m[1])),
    (re.compile(r"^also shown to (.+)$"), lambda m: _("also shown to %(mutants)s", mutants=m[1])),
    (re.compile(r"^fails (.+)$"), lambda m: _("fails %(tests)s", tests=_phrases().get(m[1], m[1]))),
    (re.compile(r"^(\d+) visible, (\d+) hidden$"), lambda m: _("%(v)s visible, %(h)s hidden", v=m[1], h=m[2])),
    (re.compile(r"^([\d.]+/[\d.]+) \[graded\](.*)$", re.S),
     lambda m: m[1] + " [" + _("graded") + "]" + m[2]),
)


@bp.app_template_filter("check_text")
def check_text(text: str | None) -> str | None:
    """One cell of the check table (a subject, what was expected, what was got) in the
    reader's language where it is one of the check's own phrases."""
    if not text:
        return text
    phrases = _phrases()
    if text in phrases:
        return phrases[text]
    for pattern, say in _PATTERNS:
        match = pattern.match(text)
        if match:
            return say(match)
    return text
