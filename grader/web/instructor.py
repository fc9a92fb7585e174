"""What staff see: the submissions of their courses (an administrator: every one),
filtered by exercise and student; and, for administrators only, the exercises with the
bundles uploaded and what their checks found."""

from __future__ import annotations

import logging

from flask import abort, g, redirect, render_template, request, url_for
from flask_babel import gettext as _
from sqlalchemy import or_, select

from grader import bundles, db
from grader.courses import access
from grader.models import Bundle, Exercise, Submission, User
from grader.web import bp
from grader.web.auth import admin_required, database_url, staff_required

log = logging.getLogger(__name__)

PAGE = 100


@bp.get("/instructor/submissions")
@staff_required
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
        query = access.visible(s, g.user, query)
        rows = s.scalars(query.offset((page - 1) * PAGE).limit(PAGE + 1)).all()
        owners = {row.id: row.user for row in rows}
        slugs = access.course_exercises(s, g.user)
    return render_template("instructor/submissions.html", submissions=rows[:PAGE], owners=owners,
                           slugs=slugs, exercise=exercise, student=student, status=status, page=page,
                           more=len(rows) > PAGE)


@bp.get("/instructor/exercises")
@admin_required
def manage_exercises():
    return _exercises_page()


def _exercises_page(error: str | None = None, status: int = 200):
    with db.transaction(database_url()) as s:
        exercises = s.scalars(select(Exercise).order_by(Exercise.slug)).all()
        uploads = s.execute(select(Bundle.id, Bundle.slug, Bundle.version, Bundle.status, Bundle.uploaded_at)
                            .order_by(Bundle.uploaded_at.desc()).limit(50)).all()
    return render_template("instructor/exercises.html", exercises=exercises, uploads=uploads, error=error,
                           max_mb=bundles.MAX_ARCHIVE_BYTES // (1024 * 1024)), status


@bp.post("/instructor/bundles")
@admin_required
def upload_bundle():
    upload = request.files.get("bundle")
    if upload is None or not upload.filename:
        return _exercises_page(_("Choose a .zip file of an exercise folder."), 422)
    archive = upload.stream.read(bundles.MAX_ARCHIVE_BYTES + 1)
    try:
        with db.transaction(database_url()) as s:
            bundle = bundles.receive(s, archive, uploaded_by=g.user.id)
            bundle_id, device = bundle.id, bundle.device
    except bundles.BundleError as exc:
        return _exercises_page(str(exc), 422)
    try:
        bundles.enqueue_check(bundle_id, device)  # only now: the row is committed
    except Exception:
        log.exception("bundle %s stored but its check not enqueued", bundle_id)
        with db.transaction(database_url()) as s:
            s.delete(s.get(Bundle, bundle_id))  # nothing half-done: the instructor uploads again
        return _exercises_page(_("The workers cannot be reached; nothing was stored. Try again shortly."), 503)
    return redirect(url_for("web.bundle", bundle_id=bundle_id), code=303)


@bp.get("/instructor/bundles/<int:bundle_id>")
@admin_required
def bundle(bundle_id: int):
    with db.transaction(database_url()) as s:
        row = s.get(Bundle, bundle_id)
        if row is None:
            abort(404)
        uploader = s.get(User, row.uploaded_by) if row.uploaded_by else None
    return render_template("instructor/bundle.html", bundle=row, uploader=uploader, rows=row.check_rows or [],
                           pending=row.status == "checking")
