"""What an instructor sees: every submission, filtered by exercise and student."""

from __future__ import annotations

from flask import render_template, request
from sqlalchemy import or_, select

from grader import db
from grader.models import Exercise, Submission, User
from grader.web import bp
from grader.web.auth import database_url, instructor_required

PAGE = 100


@bp.get("/instructor/submissions")
@instructor_required
def all_submissions():
    exercise = request.args.get("exercise", "").strip()
    student = request.args.get("student", "").strip()
    status = request.args.get("status", "").strip()
    page = max(1, request.args.get("page", 1, type=int) or 1)
    query = select(Submission).join(User).order_by(Submission.created_at.desc())
    if exercise:
        query = query.where(Submission.exercise_slug == exercise)
    if student:
        like = "%" + student.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        query = query.where(or_(*(column.ilike(like, escape="\\")
                                  for column in (User.email, User.name, User.external_id))))
    if status:
        query = query.where(Submission.status == status)
    with db.transaction(database_url()) as s:
        rows = s.scalars(query.offset((page - 1) * PAGE).limit(PAGE + 1)).all()
        owners = {row.id: row.user for row in rows}
        slugs = s.scalars(select(Exercise.slug).order_by(Exercise.slug)).all()
    return render_template("instructor/submissions.html", submissions=rows[:PAGE], owners=owners,
                           slugs=slugs, exercise=exercise, student=student, status=status, page=page,
                           more=len(rows) > PAGE)
