"""What one person is shown of one submission now: the single answer every surface
renders (the result page and its status poll, "My submissions", the API with a key or a
personal token, the notebook client through it, regrade notes).

Who may see a submission at all is grader.courses.access; this module says how much.
The author of an assignment's submission whose hidden results are held (feedback after
the due date, their own) is shown the visible tests alone: no score, no hidden test,
no score that counts. Staff of the course, administrators and the API key that made it
see everything.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from grader.accounts.models import User
from grader.courses import rules as course_rules
from grader.courses.assignments import extension_of, rules_of
from grader.courses.counting import feedback_held_until, standing
from grader.courses.models import Assignment, Course
from grader.courses.times import aware
from grader.submissions.models import Submission


@dataclass(frozen=True)
class Seen:
    """A submission as one viewer is shown it now."""

    held_until: datetime | None   # hidden results held from this viewer until then; None: not held
    score: float | None           # None while held (or not graded)
    max_score: float | None
    tests: list[dict]             # the report's tests this viewer is shown
    hidden_held: int              # how many hidden tests are held from them
    visible_points: tuple[float, float]
    assignment: Assignment | None
    course: Course | None
    late: bool | None             # None: made for no assignment
    penalty: float = 0.0          # percent this submission loses for lateness
    counted_score: float | None = None  # the author's score that counts on the assignment now
    counted_max: float | None = None

    @property
    def held(self) -> bool:
        return self.held_until is not None

    @property
    def penalised_score(self) -> float | None:
        """This submission's score after its late penalty (what it would count for)."""
        if self.score is None:
            return None
        return round(self.score * (1 - self.penalty / 100), 6)


def seen(session: Session, row: Submission, viewer: User | None) -> Seen:
    """``row`` as ``viewer`` is shown it now; ``viewer`` None is a system the course gave
    the work to (the API key that made it), which sees everything. The caller has checked
    that the viewer may see the row at all (access.may_see, or the key's own)."""
    tests = list((row.report or {}).get("tests") or [])
    # Held for an assignment's submission, and for free work on an exercise an assignment
    # of the author's holds (feedback_held_until says which).
    held_until = feedback_held_until(session, row, viewer.id) if viewer is not None else None
    assignment = session.get(Assignment, row.assignment_id) if row.assignment_id is not None else None
    course, late, penalty = None, None, 0.0
    if assignment is not None:
        course = session.get(Course, assignment.course_id)
        rules = rules_of(assignment, extension_of(session, assignment, row.user_id))
        submitted = aware(row.created_at)
        late, penalty = course_rules.is_late(rules, submitted), course_rules.late_penalty(rules, submitted)
    if held_until:
        shown = [t for t in tests if t.get("visible")]
        return Seen(held_until, None, None, shown, len(tests) - len(shown), _points(shown), assignment, course,
                    late, penalty)
    counted = standing(session, assignment, row.user).counted if assignment is not None else None
    return Seen(None, row.score, row.max_score, tests, 0, _points(tests), assignment, course, late, penalty,
                counted and counted.score, counted and counted.max_score)


# Outcomes of a whole grade that no hidden test can have caused: the code did not parse or
# failed on import, before any test ran. Any other, "graded" included, is held with the
# rest: a time or memory limit reached may have come from a hidden test's input, and a
# status shown only when every test ran would tell that one had not.
_BEFORE_ANY_TEST = ("syntax_error", "submission_error")


def held_report(report: dict | None, shown: Seen) -> dict | None:
    """The stored report as ``shown`` allows: while held, nothing of the hidden tests (their
    results, their points, the time they took), nor what may tell of them: an outcome a
    hidden test may have caused (the status is null then, as for one graded), warnings that name the
    exercise's tests, and what the code printed, which hidden tests' calls print into too."""
    if not report or not shown.held:
        return report
    kept = report.get("status") in _BEFORE_ANY_TEST
    return {**report, "score": None, "max_score": None, "duration_ms": None,
            "tests": [t for t in report.get("tests") or [] if t.get("visible")],
            "status": report.get("status") if kept else None, "message": report.get("message") if kept else None,
            "i18n": {lang: {"message": texts["message"]} for lang, texts in (report.get("i18n") or {}).items()
                     if kept and isinstance(texts, dict) and texts.get("message")},
            "warnings": [], "output": "", "output_truncated": False}


def _points(tests: list[dict]) -> tuple[float, float]:
    return (sum(t.get("points") or 0 for t in tests), sum(t.get("max_points") or 0 for t in tests))
