"""On a worker: check an uploaded bundle and publish it only if every check holds."""

from __future__ import annotations

import logging
from datetime import timedelta

from sqlalchemy import select

from grader import db
from grader.bundle import CatalogError
from grader.authoring.check import check
from grader.authoring.warnings import warnings
from grader.catalog import drafts
from grader.catalog.models import Exercise, Upload, UploadStatus
from grader.catalog.uploads import CHECK_TASK, UploadError, materialize, owner_key, receive
from grader.db import now
from grader.engine import SandboxUnavailable
from grader.tasks import GRADE_HARD_LIMIT, celery

log = logging.getLogger(__name__)

# Longer than a check may run (its hard limit), and a redelivery after it.
CHECK_DEADLINE = timedelta(seconds=GRADE_HARD_LIMIT * 8)


def check_and_publish(upload_id: int, database_url: str | None = None) -> str:
    """Run the bundle check on an upload; publish it if every check holds. Returns the
    upload's status. Idempotent: an upload already decided is left alone. What the check
    warns of (grader.authoring.warnings: still the template; a title a released exercise
    has) is kept with its table and decides nothing."""
    with db.transaction(database_url) as session:
        upload = session.get(Upload, upload_id)
        if upload is None or upload.status != UploadStatus.CHECKING:
            return upload.status if upload else "missing"
        bundle = materialize(upload)
        titles = dict(session.execute(select(Exercise.slug, Exercise.title).where(drafts.released())).all())
    warned = warnings(bundle, titles)
    reports = {}
    rows = check(bundle, on_report=reports.__setitem__)
    solution = reports.get("solution")
    max_score = solution.max_score if solution is not None and solution.status == "graded" else 0.0
    with db.transaction(database_url) as session:
        upload = session.get(Upload, upload_id, with_for_update=True)
        if upload.status != UploadStatus.CHECKING:
            return upload.status
        upload.check_rows = [vars(r) for r in rows]
        upload.warnings = warned
        upload.checked_at = now()
        published = session.get(Exercise, upload.slug)
        if not all(r.ok for r in rows):
            upload.status = UploadStatus.REJECTED
            upload.error = f"{sum(not r.ok for r in rows)} of {len(rows)} checks failed"
        elif max_score <= 0:
            upload.status, upload.error = UploadStatus.REJECTED, "its solution did not grade to a positive score"
        elif (upload.api_key_id is not None and published is not None
              and owner_key(session, published) != upload.api_key_id):
            upload.status = UploadStatus.REJECTED
            upload.error = "another key or an administrator published this exercise while it was checked"
        elif published is not None and published.version >= upload.version:
            upload.status = UploadStatus.REJECTED
            upload.error = f"version {published.version} was published while this one was checked"
        else:
            row = published or Exercise(slug=upload.slug)
            row.publish(bundle, max_score, upload_id=upload.id)
            session.add(row)
            upload.status, upload.error = UploadStatus.PUBLISHED, None
        return upload.status


def check_here(archive: bytes) -> Upload:
    """Store a bundle (a zip of its folder) as an upload, check it here rather than on a
    worker, and publish it if every check holds. Returns the upload, decided. UploadError
    when it is refused before any check; SandboxUnavailable when nothing can be graded
    here, and then the upload is deleted: not checked, it leaves nothing behind."""
    with db.transaction() as session:
        upload_id = receive(session, archive).id
    try:
        check_and_publish(upload_id)
    except SandboxUnavailable:
        with db.transaction() as session:
            session.delete(session.get(Upload, upload_id))
        raise
    with db.transaction() as session:
        return session.get(Upload, upload_id)


@celery.task(name="grader.end_lost_checks")
def end_lost_checks() -> int:
    """A check lost with its worker (and past any redelivery) would say "checking" for
    ever: end it, so that the instructor sees why and uploads again."""
    with db.transaction() as session:
        lost = session.scalars(select(Upload).where(
            Upload.status == UploadStatus.CHECKING, Upload.uploaded_at < now() - CHECK_DEADLINE)).all()
        for upload in lost:
            upload.status, upload.checked_at = UploadStatus.REJECTED, now()
            upload.error = "the check did not finish in time; upload the bundle again"
        return len(lost)


@celery.task(name=CHECK_TASK, acks_late=True, time_limit=GRADE_HARD_LIMIT * 4,
             soft_time_limit=GRADE_HARD_LIMIT * 4 - 30)
def check_upload(upload_id: int) -> str:
    """Check an uploaded bundle and publish it if every check holds."""
    try:
        return check_and_publish(upload_id)
    except (SandboxUnavailable, CatalogError, UploadError) as exc:
        log.warning("could not check upload %s: %s", upload_id, exc)
        with db.transaction() as session:
            upload = session.get(Upload, upload_id, with_for_update=True)
            if upload is not None and upload.status == UploadStatus.CHECKING:
                upload.status, upload.checked_at = UploadStatus.REJECTED, now()
                upload.error = f"could not be checked: {exc}"
        return UploadStatus.REJECTED
