"""A student's work on an assignment, for the staff of its course: the submissions one
student made to it (where a gradebook cell leads), and every student's submissions as one
zip (grader.courses.archive)."""

from __future__ import annotations

from flask import abort, g, render_template, send_file
from sqlalchemy import select

from grader import courses
from grader.accounts.models import User
from grader.courses import access, archive, comments
from grader.courses.gradebook import who
from grader.courses.times import aware
from grader.exports import attachment
from grader.extensions import get_db, locale
from grader.submissions.models import Submission
from grader.web import bp
from grader.web.auth import login_required
from grader.web.courses import _assignment, _staff, why
from grader.web.durations import duration
from grader.web.views import held_ids


@bp.get("/assignments/<int:assignment_id>/students/<int:user_id>")
@login_required
def assignment_student(assignment_id: int, user_id: int):
    """One student's submissions to the assignment, numbered as the zip numbers them, with
    the one that counts, how many comments staff left on each (linked to them), and where
    they stand (their due date, attempts, the score that counts and why)."""
    with get_db() as s:
        assignment, course, role = _assignment(s, assignment_id)
        if not _staff(role):
            abort(403)
        student = s.get(User, user_id) if user_id < 2**31 else None
        if student is None or courses.role_in(s, course, student) is None:
            abort(404)
        made = s.scalars(access.visible(s, g.user, select(Submission).where(
            Submission.assignment_id == assignment.id, Submission.user_id == student.id))
            .order_by(Submission.created_at, Submission.id)).all()
        standing = courses.standing(s, assignment, student)
        held = held_ids(s, made)
        said = comments.counts(s, (row.id for row in made))
    attempts = [(n, row, courses.is_late(standing.rules, aware(row.created_at))) for n, row in enumerate(made, 1)]
    return render_template("courses/student_work.html", assignment=assignment, course=course, student=student,
                           shown_as=who(student), attempts=attempts[::-1], standing=standing, held=held,
                           said=said, shown=courses.shown, why=why, duration=duration)


@bp.get("/assignments/<int:assignment_id>/submissions.zip")
@login_required
def assignment_submissions_zip(assignment_id: int):
    """Every student's submissions to the assignment, with their reports and index.csv."""
    with get_db() as s:
        assignment, course, role = _assignment(s, assignment_id)
        if not _staff(role):
            abort(403)
        spool, _archived = archive.spooled_submissions_zip(s, assignment, lang=locale())
        name = archive.file_name(course, assignment)
    response = send_file(spool, mimetype="application/zip", max_age=0)
    response.headers["Content-Disposition"] = attachment(name)
    return response
