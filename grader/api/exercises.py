"""/api/v1 for exercises: reading the published ones, and publishing from a repository.

A bundle sent here takes the same road as one uploaded through the instructor page:
stored as an upload, checked on a worker, published only if every check holds. A key
with exercises:write publishes new exercises, and new versions of the ones it published
itself; never a version of the catalogue's exercises or of another key's.
"""

from __future__ import annotations

from flask import current_app, g, request, url_for

from grader.api import answers
from grader.api.answers import reply
from grader.api.views import ApiError, _accepted, _key_limit, _key_prefix, bp, requires
from grader import courses
from grader.accounts.models import User
from grader.catalog import drafts, is_slug, uploads
from grader.authoring.check_table import CheckRow
from grader.catalog.models import Exercise, Upload, UploadStatus
from grader.courses.times import aware
from grader.extensions import get_db, limiter

# What a zip may be sent as; browsers and curl name it differently.
_ZIP_TYPES = ("application/zip", "application/x-zip-compressed", "application/octet-stream")


def _exercise_json(row: Exercise) -> dict:
    """The exercise's fields as the API gives them (answers.Exercise, and its detail)."""
    return {"slug": row.slug, "version": row.version, "title": row.title, "device": row.device,
            "max_score": row.max_score, "functions": row.functions, "released": row.released}


def viewer(session) -> dict:
    """Who reads, for the rule of who sees which exercise (grader.courses.exercises): a
    personal token's owner, as on the site; a service's key, as itself."""
    if g.caller.user_id is not None:
        return {"user": session.get(User, g.caller.user_id)}
    return {"key_id": g.caller.key_id}


def _visible(session, slug: str) -> Exercise:
    """The exercise ``slug`` where the caller sees it; exercise_not_found otherwise (a draft
    that is not theirs is not told apart from a slug that names nothing)."""
    row = courses.exercises.find(session, slug, **viewer(session))
    if row is None:
        raise ApiError("exercise_not_found", f"there is no exercise {slug[:100]!r}")
    return row


@bp.get("/exercises")
@requires("exercises:read")
def list_exercises():
    with get_db() as session:
        rows = courses.exercises.listed(session, **viewer(session))
        return reply(answers.ExerciseList(exercises=[answers.Exercise(**_exercise_json(row)) for row in rows]))


@bp.get("/exercises/<slug>")
@requires("exercises:read")
def get_exercise(slug: str):
    with get_db() as session:
        row = _visible(session, slug)
        found = _exercise_json(row)
    with get_db() as session:
        statement = uploads.statements(session, slug, current_app.config["EXERCISES_DIR"])
    return reply(answers.ExerciseDetail(**found, statement=statement))


@bp.post("/exercises/<slug>/release")
@requires("exercises:write")
def release_exercise(slug: str):
    """Release a draft to the catalogue: only the key that published it (an exercise of the
    catalogue folder or the instructor page is the administrators'). Again on a released
    exercise: the same answer, nothing changes."""
    with get_db() as session:
        row = _visible(session, slug)
        try:
            drafts.release(session, row, key_id=g.caller.key_id)
        except drafts.NotReleasable as exc:
            raise ApiError.of(exc) from None
        return reply(answers.Exercise(**_exercise_json(row)))


@bp.get("/exercises/<slug>/versions")
@requires("exercises:read")
def exercise_versions(slug: str):
    listed = []
    if is_slug(slug):
        with get_db() as session:
            row = session.get(Exercise, slug)
            # A draft that is not the caller's has no versions to show them; a slug with
            # nothing published may have this key's own uploads, checking or rejected.
            if row is None or courses.exercises.visible_to(session, row, **viewer(session)):
                listed = uploads.versions(session, slug, api_key_id=g.caller.key_id)
    if not listed:
        raise ApiError("exercise_not_found", f"there is no exercise {slug[:100]!r}")
    return reply(answers.ExerciseVersions(slug=slug, versions=[answers.ExerciseVersion(
        version=v.version, state=v.state,
        check=url_for("api.get_exercise_check", check_id=v.check, _external=True) if v.check else None,
        uploaded_at=_iso(v.uploaded_at), checked_at=_iso(v.checked_at), error=v.error) for v in listed]))


# ------------------------------------------------------------------ publishing

@bp.post("/exercises")
# Only accepted bundles count against the key's budget; each starts a check that grades
# the bundle several times, and uploads.receive bounds how many may wait at once.
@limiter.limit(_key_limit, key_func=_key_prefix, deduct_when=_accepted)
@requires("exercises:write")
def publish_exercise():
    archive = _bundle_body()
    try:
        with get_db() as session:
            upload = uploads.receive(session, archive, api_key_id=g.caller.key_id)
            upload_id, device, slug, version = upload.id, upload.device, upload.slug, upload.version
    except uploads.NotYours as exc:
        raise ApiError("exercise_not_yours", str(exc)) from None
    except uploads.TooManyChecks as exc:
        raise ApiError("too_many_checks", str(exc), {"Retry-After": "30"}) from None
    except uploads.DamagedZip as exc:
        raise ApiError("damaged_zip", str(exc), where={"entry": exc.entry} if exc.entry is not None else None) \
            from None
    except uploads.UploadError as exc:
        raise ApiError("invalid_bundle", str(exc)) from None
    try:
        uploads.start_check(upload_id, device, current_app.config["DATABASE_URL"])  # only now: it is committed
    except uploads.WorkersUnreachable as exc:
        raise ApiError("workers_unreachable", str(exc), {"Retry-After": "30"}) from None
    url = url_for("api.get_exercise_check", check_id=upload_id, _external=True)
    return reply(answers.ExerciseCheckAccepted(id=upload_id, url=url, status=UploadStatus.CHECKING, slug=slug,
                                               version=version), 202, {"Location": url})


def _bundle_body() -> bytes:
    """The zip: the whole body, or the multipart field ``bundle`` (up to the zip's own
    limit, larger than a submission's: see grader.app)."""
    if request.mimetype == "multipart/form-data":
        file = request.files.get("bundle")
        if file is None:
            raise ApiError("missing_field", "send the zip as the multipart field 'bundle'")
        archive = file.stream.read(uploads.MAX_ARCHIVE_BYTES + 1)
    elif request.mimetype in _ZIP_TYPES:
        archive = request.get_data(cache=False)
    else:
        raise ApiError("unsupported_media_type", "send the bundle as application/zip (or the multipart field "
                                                 f"'bundle'), not {request.mimetype or 'no content type'!r}")
    if not archive:
        raise ApiError("invalid_bundle", "the body is empty; send a zip of the exercise's folder")
    return archive


@bp.get("/exercise-checks/<int:check_id>")
@requires("exercises:write")
def get_exercise_check(check_id: int):
    with get_db() as session:
        upload = session.get(Upload, check_id) if check_id < 2**31 else None
        # Only the key that sent a bundle follows its check; another's is "not found".
        if upload is None or upload.api_key_id != g.caller.key_id:
            raise ApiError("check_not_found", f"this key sent no bundle checked as {check_id}")
        rows = [CheckRow(**row) for row in upload.check_rows or []]
        return reply(answers.ExerciseCheck(
            id=upload.id, url=url_for("api.get_exercise_check", check_id=upload.id, _external=True),
            slug=upload.slug, version=upload.version, status=upload.status, error=upload.error,
            uploaded_at=_iso(upload.uploaded_at), checked_at=_iso(upload.checked_at),
            holds=sum(r.ok for r in rows), violated=sum(not r.ok for r in rows), warnings=upload.warnings or [],
            checks=[answers.CheckResult(subject=r.subject, expected=r.expected, actual=r.actual, ok=r.ok,
                                        reason=None if r.ok else f"expected {r.expected}; got {r.actual}")
                    for r in rows]))


def _iso(moment) -> str | None:
    # The database keeps UTC without its zone; the document promises RFC 3339 date-times, which carry one.
    return aware(moment).isoformat(timespec="seconds") if moment is not None else None
