"""The gradebook: every student of a course against every assignment, with the score
that counts under each assignment's rules, its late mark, extension and override; as
rows for the pages and the API (whose JSON grader.api.courses makes of them) and CSV for
the registrar (one row per student, or one per submission), every time in the course's
time zone (in CSV as ISO 8601, with its UTC offset). Every CSV goes through
grader.exports: each column named once, no cell a spreadsheet would run."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.orm import Session, load_only

from grader.accounts.models import User
from grader.catalog.models import Exercise
from grader.courses.times import aware as _aware, iso
from grader.courses.counting import counted
from grader.courses.roster import members
from grader.courses.assignments import rules_of
from grader.courses.models import Assignment, Course, Extension, ScoreOverride
from grader.courses.rules import Counted, late_penalty
from grader.exports import csv_text, header
from grader.submissions import shown_external_id
from grader.submissions.models import Submission, SubmissionStatus


@dataclass
class Cell:
    counted: Counted
    attempts: int = 0
    extension: Extension | None = None
    override: ScoreOverride | None = None

    def note(self) -> str:
        """What a reader needs to know beside the number, in English (the CSV's)."""
        notes = []
        if self.override is not None:
            notes.append(f"set by hand by {self.override.set_by}: {self.override.reason}")
        elif self.counted.late and self.counted.penalty:
            notes.append(f"late: -{self.counted.penalty:g}%")
        elif self.counted.late:
            notes.append("late")
        if self.extension is not None:
            notes.append(f"extension: {self.extension.reason}")
        return "; ".join(notes)


@dataclass
class Row:
    user: User
    role: str
    cells: dict[int, Cell] = field(default_factory=dict)

    @property
    def total(self) -> float:
        return round(sum(c.counted.score or 0.0 for c in self.cells.values()), 6)


@dataclass
class Gradebook:
    course: Course
    assignments: list[Assignment]
    rows: list[Row]
    maxima: dict[int, float | None] = field(default_factory=dict)  # each assignment's maximum (out_of)

    @property
    def max_total(self) -> float:
        """What a student's total is out of: the sum of the assignments' maxima."""
        return round(sum(self.maxima.get(a.id) or 0.0 for a in self.assignments), 6)


def out_of(graded: Iterable[Submission], exercise: Exercise | None) -> float | None:
    """An assignment's maximum: what the pinned version's grades were out of (the first of
    ``graded`` with one); before any, the exercise's (the cap an override is held to)."""
    return next((s.max_score for s in graded if s.max_score), exercise.max_score if exercise is not None else None)


def assignments_of(session: Session, course: Course) -> list[Assignment]:
    return list(session.scalars(select(Assignment).where(Assignment.course_id == course.id)
                                .order_by(Assignment.due_at, Assignment.id)))


def gradebook(session: Session, course: Course, *, students_only: bool = True,
              only: Assignment | None = None) -> Gradebook:
    """The course's gradebook (``only``: with that one assignment's column alone)."""
    assignments = [only] if only is not None else assignments_of(session, course)
    ids = [a.id for a in assignments]
    graded: dict[tuple[int, int], list[Submission]] = defaultdict(list)
    tried: dict[tuple[int, int], int] = defaultdict(int)
    extensions, overrides = {}, {}
    if ids:
        # What counting reads of each submission; not its source and report (a class's worth).
        for row in session.scalars(select(Submission).where(Submission.assignment_id.in_(ids))
                                   .options(load_only(Submission.id, Submission.user_id, Submission.assignment_id,
                                                      Submission.status, Submission.score, Submission.max_score,
                                                      Submission.created_at))
                                   .order_by(Submission.created_at)):
            if row.status != SubmissionStatus.FAILED:
                tried[(row.assignment_id, row.user_id)] += 1
            if row.status == SubmissionStatus.GRADED:
                graded[(row.assignment_id, row.user_id)].append(row)
        extensions = {(e.assignment_id, e.user_id): e
                      for e in session.scalars(select(Extension).where(Extension.assignment_id.in_(ids)))}
        overrides = {(o.assignment_id, o.user_id): o
                     for o in session.scalars(select(ScoreOverride).where(ScoreOverride.assignment_id.in_(ids)))}
    rows = []
    for user, role in members(session, course):
        if students_only and role != "student":
            continue
        row = Row(user, role)
        for assignment in assignments:
            key = (assignment.id, user.id)
            rules = rules_of(assignment, extensions.get(key))
            row.cells[assignment.id] = Cell(counted(rules, graded[key], overrides.get(key)), tried[key],
                                            extensions.get(key), overrides.get(key))
        rows.append(row)
    by_assignment: dict[int, list[Submission]] = defaultdict(list)  # latest first
    for (assignment_id, _), subs in graded.items():
        by_assignment[assignment_id] += reversed(subs)
    maxima = {a.id: out_of(by_assignment[a.id], session.get(Exercise, a.exercise_slug)) for a in assignments}
    return Gradebook(course, assignments, rows, maxima)


def who(user: User) -> str:
    """A student as a gradebook names them: their e-mail, else the id an outside system gave."""
    return user.email or shown_external_id(user) or f"user {user.id}"


def titles(book: Gradebook) -> list[str]:
    """Each assignment's name in a CSV's header: its title, with its id after it where
    another assignment has the same title."""
    return header([a.title for a in book.assignments], [f"#{a.id}" for a in book.assignments])


def students_csv(book: Gradebook) -> str:
    """One row per student: each assignment's counting score and a note, then the total
    and what it is out of."""
    names = ["student", "name"]
    for title in titles(book):
        names += [f"{title} (score)", f"{title} (note)"]
    lines = []
    for row in book.rows:
        line = [who(row.user), row.user.name]
        for a in book.assignments:
            cell = row.cells[a.id]
            line += ["" if cell.counted.score is None else f"{cell.counted.score:g}", cell.note()]
        lines.append(line + [f"{row.total:g}", f"{book.max_total:g}"])
    return csv_text(names + ["total", "max_total"], lines)


def submissions_csv(session: Session, book: Gradebook) -> str:
    """One row per submission to the course's assignments: which assignment (its title
    and id), when (ISO 8601 in course time, with its offset), what it scored, its late
    penalty, and whether it is the one that counts."""
    counting_ids = {cell.counted.submission_id for row in book.rows for cell in row.cells.values()
                    if cell.counted.how != "override"}
    by_id = {a.id: a for a in book.assignments}
    students = {row.user.id: row for row in book.rows}
    lines = []
    if by_id:
        for sub in session.scalars(select(Submission).where(Submission.assignment_id.in_(list(by_id)))
                                   .order_by(Submission.created_at)):
            row = students.get(sub.user_id)
            if row is None:
                continue  # staff trying their own assignment
            assignment = by_id[sub.assignment_id]
            rules = rules_of(assignment, row.cells[assignment.id].extension)
            late = _aware(sub.created_at) > rules.due_at
            lines.append([sub.id, who(row.user), assignment.title, assignment.id, iso(sub.created_at, book.course),
                          sub.status,
                          "" if sub.score is None else f"{sub.score:g}",
                          "" if sub.max_score is None else f"{sub.max_score:g}",
                          "yes" if late else "no", f"{late_penalty(rules, _aware(sub.created_at)):g}",
                          "yes" if sub.id in counting_ids else "no"])
    return csv_text(["submission", "student", "assignment", "assignment_id", "submitted_at", "status", "score",
                     "max_score", "late", "late_penalty_percent", "counts"], lines)
