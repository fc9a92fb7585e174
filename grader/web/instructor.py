"""What staff see: the submissions of their courses (an administrator: every one),
filtered by exercise and student; and, for administrators only, the exercises with the
bundles uploaded and what their checks found."""

from __future__ import annotations

from flask import abort, current_app, g, redirect, render_template, request, url_for
from flask_babel import gettext as _
from sqlalchemy import or_, select

from grader.accounts.models import User
from grader.catalog import uploads
from grader.catalog.models import Exercise, Upload, UploadStatus
from grader.courses import access
from grader.extensions import get_db
from grader.submissions.models import Submission
from grader.web import bp
from grader.web.auth import admin_required, staff_required
from grader.web.params import page_number, text_filter, valid_id
from grader.web.views import courses_of

PAGE = 100


@bp.get("/instructor/submissions")
@staff_required
def all_submissions():
    exercise, student, status = text_filter("exercise"), text_filter("student"), text_filter("status")
    page = page_number()
    query = select(Submission).join(User).order_by(Submission.created_at.desc())
    if exercise:
        query = query.where(Submission.exercise_slug == exercise)
    if student:
        like = "%" + student.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        query = query.where(or_(*(column.ilike(like, escape="\\")
                                  for column in (User.email, User.name, User.external_id))))
    if status:
        query = query.where(Submission.status == status)
    with get_db() as s:
        query = access.visible(s, g.user, query)
        rows = s.scalars(query.offset((page - 1) * PAGE).limit(PAGE + 1)).all()
        owners = {row.id: row.user for row in rows}
        slugs = access.course_exercises(s, g.user)
        course_of = courses_of(s, rows)
    return render_template("instructor/submissions.html", submissions=rows[:PAGE], owners=owners,
                           course_of=course_of, slugs=slugs, exercise=exercise, student=student, status=status,
                           page=page, more=len(rows) > PAGE)


@bp.get("/instructor/exercises")
@admin_required
def manage_exercises():
    return _exercises_page()


def _exercises_page(error: str | None = None, status: int = 200):
    with get_db() as s:
        exercises = s.scalars(select(Exercise).order_by(Exercise.slug)).all()
        recent = s.execute(select(Upload.id, Upload.slug, Upload.version, Upload.status, Upload.uploaded_at)
                            .order_by(Upload.uploaded_at.desc()).limit(50)).all()
    return render_template("instructor/exercises.html", exercises=exercises, uploads=recent, error=error,
                           max_mb=uploads.MAX_ARCHIVE_BYTES // (1024 * 1024)), status


@bp.post("/instructor/uploads")
@admin_required
def upload():
    file = request.files.get("bundle")
    if file is None or not file.filename:
        return _exercises_page(_("Choose a .zip file of an exercise folder."), 422)
    archive = file.stream.read(uploads.MAX_ARCHIVE_BYTES + 1)
    try:
        with get_db() as s:
            received = uploads.receive(s, archive, uploaded_by=g.user.id)
            upload_id, device = received.id, received.device
    except uploads.UploadError as exc:
        return _exercises_page(str(exc), 422)
    try:
        uploads.start_check(upload_id, device, current_app.config["DATABASE_URL"])  # only now: it is committed
    except uploads.WorkersUnreachable:
        return _exercises_page(_("The workers cannot be reached; nothing was stored. Try again shortly."), 503)
    return redirect(url_for("web.upload_page", upload_id=upload_id), code=303)


@bp.get("/instructor/uploads/<int:upload_id>")
@admin_required
def upload_page(upload_id: int):
    with get_db() as s:
        row = s.get(Upload, upload_id) if valid_id(upload_id) else None
        if row is None:
            abort(404)
        uploader = s.get(User, row.uploaded_by) if row.uploaded_by else None
        exercise = s.get(Exercise, row.slug)
    return render_template("instructor/upload.html", upload=row, uploader=uploader, rows=row.check_rows or [],
                           pending=row.status == UploadStatus.CHECKING, exercise=exercise)
