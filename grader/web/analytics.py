"""Where the class is stuck on one assignment, for the staff of its course: the score
distribution, each test's pass rate (visible and hidden), each distinct hint students hit
with the tests that gave it and whether they got past it, attempts and time to full marks, and who has not got there as their due date
nears. Charts drawn on the server, each beside a table of its numbers."""

from __future__ import annotations

from flask import abort, render_template
from flask_babel import gettext as _
from markupsafe import Markup

from grader import courses
from grader.courses.analytics import Analytics, Bin, analytics
from grader.courses.gradebook import who
from grader.escapes import shown as escaped
from grader.extensions import get_db
from grader.web import bp, charts
from grader.web.auth import login_required
from grader.web.courses import _assignment, _staff
from grader.web.durations import duration, left
from grader.web.views import lang


def percent(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}%"


def rate(passed: int, of: int) -> float | None:
    return 100 * passed / of if of else None


def band(b: Bin) -> str:
    return f"{b.low}–{b.high}%"


def local(english: str, translated: dict[str, str]) -> str:
    """A test's name or hint in the page's language where the report has it, with control
    and bidi characters shown escaped (a report stored before the engine escaped them)."""
    return escaped(translated.get(lang()) or english)


def _charts(found: Analytics) -> dict[str, Markup]:
    bins = found.scores.bins
    made = {"scores": charts.bars(
        "scores-chart", _("Score distribution"),
        _("Students per band of the score that counts, in percent of the maximum: %(bands)s.",
          bands="; ".join(f"{band(b)}: {b.students}" for b in bins)),
        [band(b) for b in bins], [charts.Series(_("students"), [b.students for b in bins])],
        most=max((b.students for b in bins), default=0) or 1, beside=25)}
    if found.tests:
        made["tests"] = charts.bars(
            "tests-chart", _("Pass rate per test"),
            _("For each test, visible or hidden, the percent of counting submissions and of all graded "
              "submissions that passed it; the table below it gives the counts."),
            [local(t.name, t.names) for t in found.tests],
            [charts.Series(_("counting submissions"), [rate(t.passed_counting, t.counting) or 0 for t in found.tests]),
             charts.Series(_("all graded submissions"), [rate(t.passed_graded, t.graded) or 0 for t in found.tests],
                           charts.GREEN)],
            most=100, unit="%", shown=lambda v: f"{v:.0f}", notes=[kind(t.visible) for t in found.tests])
    if found.misconceptions:
        made["misconceptions"] = charts.bars(
            "misconceptions-chart", _("Hints students hit, and how many got past them"),
            _("For each distinct hint failed tests gave, the number of students it was given to and the number "
              "of them who later passed the tests that gave it; the table below it names those tests."),
            [local(m.hint, m.hints) for m in found.misconceptions],
            [charts.Series(_("students"), [m.students for m in found.misconceptions], charts.RED),
             charts.Series(_("got past it"), [m.got_past for m in found.misconceptions])],
            most=max(m.students for m in found.misconceptions),
            notes=[_("From: %(tests)s", tests="; ".join(local(t.name, t.names) for t in m.tests))
                   for m in found.misconceptions])
    return made


def kind(visible: bool) -> str:
    return _("visible") if visible else _("hidden")


@bp.get("/assignments/<int:assignment_id>/analytics")
@login_required
def assignment_analytics(assignment_id: int):
    with get_db() as s:
        assignment, course, role = _assignment(s, assignment_id)  # 404 outside the course
        if not _staff(role):
            abort(403)
        found = analytics(s, assignment)
    return render_template("courses/analytics.html", assignment=assignment, course=course, found=found,
                           charts=_charts(found), shown=courses.shown, left=left, duration=duration,
                           percent=percent, rate=rate, band=band, local=local, kind=kind, who=who)
