"""Where the class is stuck on one assignment, for the staff of its course: the score
distribution, each hidden test's pass rate, the hints students hit and whether they got
past them, attempts and time to full marks, and who has not got there as their due date
nears. Charts drawn on the server, each beside a table of its numbers."""

from __future__ import annotations

from datetime import timedelta

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
from grader.web.courses import _assignment, _staff, time_left
from grader.web.views import lang


def duration(span: timedelta | None) -> str:
    if span is None:
        return "–"
    minutes = int(span.total_seconds()) // 60
    days, hours, minutes = minutes // 1440, minutes % 1440 // 60, minutes % 60
    if days:
        return _("%(d)d days %(h)d hours", d=days, h=hours)
    return _("%(h)d hours %(m)d minutes", h=hours, m=minutes)


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
    made = {"scores": charts.columns(
        "scores-chart", _("Score distribution"),
        _("Students per band of the score that counts, in percent of the maximum: %(bands)s.",
          bands="; ".join(f"{band(b)}: {b.students}" for b in bins)),
        [band(b) for b in bins], [b.students for b in bins])}
    if found.tests:
        made["tests"] = charts.bars(
            "tests-chart", _("Pass rate per hidden test"),
            _("For each hidden test, the percent of counting submissions and of all graded submissions that "
              "passed it; the table beside it gives the counts."),
            [local(t.name, t.names) for t in found.tests],
            [charts.Series(_("counting submissions"), [rate(t.passed_counting, t.counting) or 0 for t in found.tests]),
             charts.Series(_("all graded submissions"), [rate(t.passed_graded, t.graded) or 0 for t in found.tests],
                           charts.GREEN)],
            most=100, unit="%", shown=lambda v: f"{v:.0f}")
    if found.misconceptions:
        made["misconceptions"] = charts.bars(
            "misconceptions-chart", _("Hints students hit, and how many got past them"),
            _("For each hint a failed test gave, the number of students it was given to and the number of them "
              "who later passed that test."),
            [local(m.hint, m.hints) for m in found.misconceptions],
            [charts.Series(_("students"), [m.students for m in found.misconceptions], charts.RED),
             charts.Series(_("got past it"), [m.got_past for m in found.misconceptions])],
            most=max(m.students for m in found.misconceptions))
    return made


@bp.get("/assignments/<int:assignment_id>/analytics")
@login_required
def assignment_analytics(assignment_id: int):
    with get_db() as s:
        assignment, course, role = _assignment(s, assignment_id)  # 404 outside the course
        if not _staff(role):
            abort(403)
        found = analytics(s, assignment)
    return render_template("courses/analytics.html", assignment=assignment, course=course, found=found,
                           charts=_charts(found), shown=courses.shown, time_left=time_left, duration=duration,
                           percent=percent, rate=rate, band=band, local=local, who=who)
