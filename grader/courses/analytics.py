"""Where the class is stuck on one assignment, for its staff: how the scores that count
spread, which tests students pass (the visible ones and the hidden), which hints they hit
and whether they got past them, how many attempts and how long full marks took, and who has not got there yet as
their due date nears.

Computed from the rows when asked (nothing is stored). Only the course's students count;
each one's score is the one the gradebook counts (grader.courses.counting.counted,
under their extension and override). Reports are read as stored: Report.to_dict()."""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from grader.accounts.models import User
from grader.catalog.models import Exercise
from grader.courses.times import aware as _aware, shown
from grader.courses.counting import counted
from grader.courses.assignments import course_of, rules_of
from grader.courses.roster import members
from grader.courses.gradebook import out_of, who
from grader.courses.models import Assignment, Course, Extension, MemberRole, ScoreOverride
from grader.courses.rules import Counted
from grader.db import now
from grader.submissions.models import Submission, SubmissionStatus

BIN_WIDTH = 10  # percent of the maximum; 100 falls in the last bin (90-100)
BINS = 100 // BIN_WIDTH


@dataclass
class Bin:
    low: int           # percent, included
    high: int          # percent, excluded but for the last bin's 100
    students: int = 0


@dataclass
class Scores:
    """The scores that count, as percents of the maximum."""

    bins: list[Bin]
    scored: int                # students with a score that counts (graded, or set by hand)
    unscored: int              # students with none: nothing graded and no override
    mean: float | None         # percent; None when nobody is scored
    median: float | None
    max_score: float | None    # the assignment's maximum, in points


@dataclass
class TestRate:
    """One test, visible or hidden: how many counting submissions, and how many graded
    submissions in all, passed it. A submission whose report does not list it (a syntax
    error, say) did not pass it."""

    id: str
    name: str
    names: dict[str, str]      # lang -> name, where the report has one
    visible: bool              # students see it before submitting (their practice runs run it)
    passed_counting: int
    counting: int              # students whose score that counts comes from a submission
    passed_graded: int
    graded: int                # every graded submission of the students


@dataclass
class TestName:
    """A test that gave a hint."""

    id: str
    name: str
    names: dict[str, str]      # lang -> the test's name


@dataclass
class Misconception:
    """One hint, whichever failed tests gave it (one mistake often fails several): the
    tests it came from, how many students it was given to, and how many of them got past
    it: a graded submission made after the last one that gave it to them passed every
    test that had given it to them."""

    hint: str
    hints: dict[str, str]      # lang -> the hint, where a report has one
    tests: list[TestName]      # in the order they first appeared
    students: int
    got_past: int


@dataclass
class FullMarks:
    """Attempts and time to the first full-marks submission (every test passed, before
    any late penalty), for the students who made one."""

    reached: int
    never: int                 # the other students, those who submitted nothing too
    attempts_median: float | None = None   # attempts up to and including it (failed gradings are no attempt)
    attempts_max: int | None = None
    time_median: timedelta | None = None   # from their first submission to it
    time_max: timedelta | None = None


@dataclass
class Pending:
    """A student without a full-marks submission, and the due date that is theirs."""

    user: User
    due_at: datetime           # an extension's, where they have one
    left: timedelta            # negative once it has passed
    extended: bool             # an extension moved their due date
    counted: Counted
    attempts: int


@dataclass
class Analytics:
    assignment: Assignment
    course: Course
    at: datetime               # the service's now, which time left is measured from
    students: int
    scores: Scores
    tests: list[TestRate] = field(default_factory=list)
    misconceptions: list[Misconception] = field(default_factory=list)
    full_marks: FullMarks | None = None
    pending: list[Pending] = field(default_factory=list)


def analytics(session: Session, assignment: Assignment, *, at: datetime | None = None) -> Analytics:
    at = at or now()
    course = course_of(session, assignment)
    students = [user for user, role in members(session, course) if role == MemberRole.STUDENT]
    made: dict[int, list[Submission]] = defaultdict(list)  # attempts: every submission but failed gradings
    if students:
        for row in session.scalars(select(Submission).where(
                Submission.assignment_id == assignment.id, Submission.user_id.in_([u.id for u in students]),
                Submission.status != SubmissionStatus.FAILED).order_by(Submission.created_at, Submission.id)):
            made[row.user_id].append(row)
    graded = {u.id: [s for s in made[u.id] if s.status == SubmissionStatus.GRADED] for u in students}
    extensions = {e.user_id: e for e in session.scalars(select(Extension).where(
        Extension.assignment_id == assignment.id))}
    overrides = {o.user_id: o for o in session.scalars(select(ScoreOverride).where(
        ScoreOverride.assignment_id == assignment.id))}
    rules = {u.id: rules_of(assignment, extensions.get(u.id)) for u in students}
    counts = {u.id: counted(rules[u.id], graded[u.id], overrides.get(u.id)) for u in students}
    most = out_of((s for subs in graded.values() for s in reversed(subs)),
                  session.get(Exercise, assignment.exercise_slug))

    first_full = {u.id: next((s for s in graded[u.id] if _full(s)), None) for u in students}
    due = _aware(assignment.due_at)
    pending = sorted((Pending(u, rules[u.id].due_at, rules[u.id].due_at - at, rules[u.id].due_at != due,
                              counts[u.id], len(made[u.id])) for u in students if first_full[u.id] is None),
                     key=lambda p: (p.due_at, p.user.name or "", p.user.id))
    return Analytics(assignment, course, at, len(students), _scores(counts.values(), most),
                     _tests(graded, counts), _misconceptions(graded), _full_marks(made, first_full), pending)


def _full(row: Submission) -> bool:
    return bool(row.max_score) and (row.score or 0.0) >= row.max_score


def _percent(score: float, most: float | None) -> float:
    # Rounded so that 4.2 of 6 falls in 70-80, not just under it.
    return max(0.0, min(100.0, round(100 * score / most, 6))) if most else 0.0


def _scores(counts, most: float | None) -> Scores:
    percents = [_percent(c.score, c.max_score or most) for c in counts if c.score is not None]
    unscored = sum(c.score is None for c in counts)
    bins = [Bin(i * BIN_WIDTH, (i + 1) * BIN_WIDTH) for i in range(BINS)]
    for p in percents:
        bins[min(int(p // BIN_WIDTH), BINS - 1)].students += 1
    return Scores(bins, len(percents), unscored, statistics.fmean(percents) if percents else None,
                  statistics.median(percents) if percents else None, most)


def _tests_of(row: Submission) -> list[dict]:
    return [t for t in (row.report or {}).get("tests", []) if isinstance(t, dict) and "id" in t]


def _passed(row: Submission, test_id: str) -> bool:
    return any(t["id"] == test_id and t.get("passed") for t in _tests_of(row))


def _localized(test: dict, key: str) -> dict[str, str]:
    return {lang: texts[key] for lang, texts in (test.get("i18n") or {}).items()
            if isinstance(texts, dict) and texts.get(key)}


def _tests(graded: dict[int, list[Submission]], counts: dict[int, Counted]) -> list[TestRate]:
    every = sorted((s for subs in graded.values() for s in subs), key=lambda s: (_aware(s.created_at), s.id))
    listed: dict[str, dict] = {}  # id -> its latest listing, in the order tests first appeared
    for row in every:
        for test in _tests_of(row):
            listed[test["id"]] = test
    by_id = {s.id: s for s in every}
    # An override's score comes from no submission: its student has no counting submission.
    counting = [by_id[c.submission_id] for c in counts.values() if c.submission_id in by_id]
    return [TestRate(test_id, test.get("name") or test_id, _localized(test, "name"), bool(test.get("visible")),
                     sum(_passed(s, test_id) for s in counting), len(counting),
                     sum(_passed(s, test_id) for s in every), len(every))
            for test_id, test in listed.items()]


def _misconceptions(graded: dict[int, list[Submission]]) -> list[Misconception]:
    """One per hint (its English text): several tests failing on one mistake give it once."""
    found: dict[str, Misconception] = {}
    order: dict[str, int] = {}  # tests in the order they first appeared, for ties
    for subs in graded.values():
        last_hit: dict[str, int] = {}         # hint -> the last submission of theirs that gave it
        gave: dict[str, set[str]] = defaultdict(set)  # hint -> the tests that gave it to them
        for i, row in enumerate(subs):
            for test in _tests_of(row):
                order.setdefault(test["id"], len(order))
                hint = test.get("hint")
                if test.get("passed") or not isinstance(hint, str) or not hint:
                    continue
                last_hit[hint] = i
                gave[hint].add(test["id"])
                m = found.setdefault(hint, Misconception(hint, {}, [], 0, 0))
                for lang, text in _localized(test, "hint").items():
                    m.hints.setdefault(lang, text)
                if all(t.id != test["id"] for t in m.tests):
                    m.tests.append(TestName(test["id"], test.get("name") or test["id"], _localized(test, "name")))
        for hint, i in last_hit.items():
            found[hint].students += 1
            found[hint].got_past += any(all(_passed(s, t) for t in gave[hint]) for s in subs[i + 1:])
    for m in found.values():
        m.tests.sort(key=lambda t: order[t.id])
    return sorted(found.values(), key=lambda m: (-m.students, order[m.tests[0].id], m.hint))


def _full_marks(made: dict[int, list[Submission]], first_full: dict[int, Submission | None]) -> FullMarks:
    attempts, times = [], []
    for user_id, full in first_full.items():
        if full is not None:
            subs = made[user_id]
            attempts.append(subs.index(full) + 1)
            times.append(_aware(full.created_at) - _aware(subs[0].created_at))
    result = FullMarks(len(attempts), len(first_full) - len(attempts))
    if attempts:
        result.attempts_median, result.attempts_max = statistics.median(attempts), max(attempts)
        result.time_median, result.time_max = statistics.median(times), max(times)
    return result


# ------------------------------------------------------------------ as JSON

def _rate(passed: int, of: int) -> dict:
    return {"passed": passed, "of": of, "percent": round(100 * passed / of, 2) if of else None}


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def _seconds(span: timedelta | None) -> int | None:
    return None if span is None else int(span.total_seconds())


def as_json(found: Analytics) -> dict:
    a, course, scores, full = found.assignment, found.course, found.scores, found.full_marks
    return {
        "assignment": {"id": a.id, "title": a.title, "exercise": a.exercise_slug, "version": a.exercise_version,
                       "due_at": shown(a.due_at, course)},
        "at": shown(found.at, course),
        "students": found.students,
        "scores": {"max_score": scores.max_score, "scored": scores.scored, "unscored": scores.unscored,
                   "mean_percent": _round(scores.mean), "median_percent": _round(scores.median),
                   "bins": [{"from_percent": b.low, "to_percent": b.high, "students": b.students}
                            for b in scores.bins]},
        "tests": [{"id": t.id, "name": t.name, "i18n": t.names, "visible": t.visible,
                   "counting": _rate(t.passed_counting, t.counting), "graded": _rate(t.passed_graded, t.graded)}
                  for t in found.tests],
        "misconceptions": [{"hint": m.hint, "i18n": m.hints,
                            "tests": [{"id": t.id, "name": t.name, "i18n": t.names} for t in m.tests],
                            "students": m.students, "got_past": m.got_past} for m in found.misconceptions],
        "full_marks": {"reached": full.reached, "never": full.never,
                       "attempts": {"median": full.attempts_median, "max": full.attempts_max},
                       "seconds_to_full_marks": {"median": _seconds(full.time_median),
                                                 "max": _seconds(full.time_max)}},
        "not_yet_full_marks": [{"student": who(p.user), "name": p.user.name, "due_at": shown(p.due_at, course),
                                "seconds_left": _seconds(p.left), "extension": p.extended,
                                "score": p.counted.score, "attempts": p.attempts} for p in found.pending],
    }
