"""An assignment's submissions as one zip, for its staff: a folder per student with every
attempt (the source graded, as ``attempt-<n>.py``; a notebook's is the Python made of its
code cells) and its report as JSON and as text, the way the API and ``grader grade`` give
them (grader.report_text); where staff commented on an attempt, its comments beside it as
JSON and as text (``attempt-<n>.comments.json``, ``.comments.txt``: held ones too, since the zip
is the staff's); ``index.csv`` at the top lists each attempt with what the gradebook says of it.

Staff see everything of their course's work (grader.courses.visibility), so nothing is held
here; who may ask for the zip is each surface's staff rule. The zip is written as it is
read, one submission at a time, into a file the caller gives (or a temporary file), so a
large class never sits in memory whole.
"""

from __future__ import annotations

import json
import re
import tempfile
import unicodedata
import zipfile
from dataclasses import dataclass
from datetime import datetime
from typing import IO

from sqlalchemy import select
from sqlalchemy.orm import Session

from grader.accounts.models import User
from grader.courses import comments
from grader.courses import rules as course_rules
from grader.courses.assignments import course_of, rules_of
from grader.courses.fields import CourseError
from grader.courses.gradebook import gradebook, who
from grader.courses.models import Assignment, Course, SubmissionComment
from grader.courses.times import aware, iso, zone
from grader.db import now
from grader import report_text
from grader.exports import csv_text
from grader.submissions import notebooks
from grader.submissions.models import Submission

INDEX = "index.csv"
INDEX_HEADER = ["student", "name", "user_id", "attempt", "submission", "submitted_at", "status", "score",
                "max_score", "counted", "late", "source", "report_json", "report_text", "comments",
                "comments_json", "comments_text"]
_UNSAFE = re.compile(r"[^\w@.+-]+")  # \w: letters and digits of any language, and "_"
_LONGEST = 60  # characters of a name kept in a folder's or a file's name


@dataclass(frozen=True)
class Archived:
    """What a zip holds: how many students (with at least one submission) and attempts."""

    students: int
    attempts: int


def assignment_by_id(session: Session, assignment_id: int) -> Assignment:
    """The assignment with this id; CourseError if there is none."""
    assignment = session.get(Assignment, assignment_id) if 0 < assignment_id < 2**31 else None
    if assignment is None:
        raise CourseError("assignment_not_found", f"there is no assignment {assignment_id}")
    return assignment


def safe_name(text: str, fallback: str) -> str:
    """``text`` as one path segment any system accepts: letters and digits of any language
    and ``@ . + - _`` kept, every other run of characters (slashes, spaces, control and
    direction marks) one ``-``, never starting or ending with a dot or dash."""
    safe = _UNSAFE.sub("-", unicodedata.normalize("NFC", text)).strip("-.")
    return safe[:_LONGEST].strip("-.") or fallback


def folder_of(user: User) -> str:
    """A student's folder: their e-mail (else their name, else the id an outside system
    gave) made safe, and their user id, which keeps two alike apart."""
    return f"{safe_name(user.email or user.name or who(user), 'student')}-{user.id}"


def file_name(course: Course, assignment: Assignment) -> str:
    """What the download is called: the course's code and the assignment's title."""
    code, title = safe_name(course.code or "", "course"), safe_name(assignment.title or "", "assignment")
    return f"{code}-{title}-submissions.zip"


def submissions_zip(session: Session, assignment: Assignment, out: IO[bytes], *, lang: str = "en") -> Archived:
    """Write the zip of ``assignment``'s students' submissions to ``out`` (a binary file);
    the reports' text in ``lang``. A submission not yet graded has no report files, one
    whose grading failed its status; the staff's own tries are left out, as the gradebook
    leaves them out."""
    course = course_of(session, assignment)
    book = gradebook(session, course, only=assignment)
    students = {row.user.id: row for row in book.rows}
    counting = {row.user.id: row.cells[assignment.id].counted.submission_id for row in book.rows
                if row.cells[assignment.id].counted.how != "override"}
    tz = zone(course.time_zone)
    said = comments.on_assignment(session, assignment.id)
    made: dict[int, int] = {}
    lines = []
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for sub in session.scalars(select(Submission).where(Submission.assignment_id == assignment.id)
                                   .order_by(Submission.created_at, Submission.id)
                                   .execution_options(yield_per=50)):
            row = students.get(sub.user_id)
            if row is None:
                continue  # staff trying their own assignment
            made[sub.user_id] = attempt = made.get(sub.user_id, 0) + 1
            folder = folder_of(row.user)
            submitted = aware(sub.created_at).astimezone(tz)
            source = f"{folder}/attempt-{attempt}.py"
            _write(archive, source, sub.source, submitted)
            json_path = text_path = ""
            if sub.report:
                # As the API gives it (line numbers named by cell), and `grader grade` prints it.
                located = notebooks.located_report(sub.report, sub.notebook)
                described = notebooks.described(sub.notebook)
                json_path = f"{folder}/attempt-{attempt}.report.json"
                text_path = f"{folder}/attempt-{attempt}.report.txt"
                as_json = {**located, **({"notebook": described} if described else {})}
                _write(archive, json_path, json.dumps(as_json, ensure_ascii=False, indent=2) + "\n", submitted)
                _write(archive, text_path, report_text.render(located, lang) + "\n", submitted)
            comments_json = comments_text = ""
            if said.get(sub.id):
                comments_json = f"{folder}/attempt-{attempt}.comments.json"
                comments_text = f"{folder}/attempt-{attempt}.comments.txt"
                _write(archive, comments_json, json.dumps([_comment_dict(c, course) for c in said[sub.id]],
                                                          ensure_ascii=False, indent=2) + "\n", submitted)
                _write(archive, comments_text, _comments_text(said[sub.id], course), submitted)
            rules = rules_of(assignment, row.cells[assignment.id].extension)
            lines.append([who(row.user), row.user.name, row.user.id, attempt, sub.id,
                          iso(sub.created_at, course), sub.status,
                          "" if sub.score is None else f"{sub.score:g}",
                          "" if sub.max_score is None else f"{sub.max_score:g}",
                          "yes" if counting.get(sub.user_id) == sub.id else "no",
                          "yes" if course_rules.is_late(rules, aware(sub.created_at)) else "no",
                          source, json_path, text_path, len(said.get(sub.id, ())), comments_json, comments_text])
            session.expunge(sub)  # done with it: its source and report need not stay in memory
        _write(archive, INDEX, csv_text(INDEX_HEADER, lines), aware(now()).astimezone(tz))
    return Archived(students=len(made), attempts=len(lines))


def _comment_dict(comment: SubmissionComment, course: Course) -> dict:
    return {"id": comment.id, "line": comment.line, "author": comment.author_name,
            "created_at": iso(comment.created_at, course), "body": comment.body}


def _comments_text(comments: list[SubmissionComment], course: Course) -> str:
    blocks = [f"{'on the whole submission' if c.line is None else f'on line {c.line}'}, by {c.author_name or '?'}"
              f" at {iso(c.created_at, course)}:\n" + "\n".join("  " + line for line in c.body.split("\n"))
              for c in comments]
    return "\n\n".join(blocks) + "\n"


def spooled_submissions_zip(session: Session, assignment: Assignment, *, lang: str = "en"
                            ) -> tuple[IO[bytes], Archived]:
    """:func:`submissions_zip` into a temporary file, read from its start; the caller
    closes it (the file is gone once closed)."""
    spool = tempfile.TemporaryFile()
    try:
        archived = submissions_zip(session, assignment, spool, lang=lang)
    except BaseException:
        spool.close()
        raise
    spool.seek(0)
    return spool, archived


def _write(archive: zipfile.ZipFile, name: str, text: str, at: datetime) -> None:
    info = zipfile.ZipInfo(name, date_time=max(at.timetuple()[:6], (1980, 1, 1, 0, 0, 0)))
    info.compress_type = zipfile.ZIP_DEFLATED
    archive.writestr(info, text.encode("utf-8"))
