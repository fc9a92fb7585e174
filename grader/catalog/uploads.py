"""Bundles that instructors upload: a zip of the bundle format.

An upload is received (unpacked safely, its exercise.toml validated, its version
compared with what is published) and stored as an Upload row in "checking"; a worker
then runs the catalogue's check on it and publishes it only if every check holds.
The zip itself stays in the database, so any worker, on any machine, grades with the
same files: it unpacks them once into its bundle cache, by content hash.

A bundle's hidden tests run in a sandbox room of their own (grader.engine.exercise_sandbox),
as the catalogue's do: an instructor's code is untrusted for the host. The zip itself is
treated as hostile too. Instructors upload through their page, `grader exercise add`, or
the API with a key that holds exercises:write; such a key publishes new versions only of
the exercises it published itself.
"""

from __future__ import annotations

import hashlib
import io
import logging
import shutil
import stat
import tempfile
import zipfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path, PurePosixPath

from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from grader.tasks import queue_for, send_task
from grader.bundle import Bundle, CatalogError, find, load
from grader.catalog.models import Exercise, Upload, UploadStatus
from grader.db import transaction
from grader.settings import settings

log = logging.getLogger(__name__)

MAX_ARCHIVE_BYTES = 8 * 1024 * 1024
MAX_REQUEST_BYTES = MAX_ARCHIVE_BYTES + 64 * 1024  # the zip and a multipart form's framing
MAX_UNPACKED_BYTES = 32 * 1024 * 1024
MAX_FILES = 500
MAX_CHECKING_PER_KEY = 3
CHECK_TASK = "grader.check_upload"
_SKIPPED = ("__pycache__", ".git", ".pytest_cache", "__MACOSX")


class UploadError(ValueError):
    """An upload that cannot be taken; the message says what is wrong with it."""


class NotYours(UploadError):
    """A version of an exercise this API key did not publish."""


class TooManyChecks(UploadError):
    """The key has as many bundles being checked as it may."""


# ------------------------------------------------------------------ zip files

def pack(folder: str | Path) -> bytes:
    """A bundle folder as a zip, its files under the folder's name."""
    folder = Path(folder).resolve()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            relative = path.relative_to(folder)
            if path.is_file() and not path.is_symlink() and not set(relative.parts) & set(_SKIPPED):
                archive.write(path, str(PurePosixPath(folder.name, *relative.parts)))
    return buffer.getvalue()


def unpack(archive: bytes, dest: Path) -> Path:
    """Unpack into dest (an empty folder) and return the bundle's root: the folder that
    holds exercise.toml, at the top or one level down. Refuses what could escape dest
    or fill the disk: absolute or '..' paths, links, too many or too large files."""
    if len(archive) > MAX_ARCHIVE_BYTES:
        raise UploadError(f"the zip is {len(archive)} bytes; the limit is {MAX_ARCHIVE_BYTES}")
    try:
        zipped = zipfile.ZipFile(io.BytesIO(archive))
    except zipfile.BadZipFile:
        raise UploadError("the upload is not a zip archive") from None
    with zipped:
        entries = [e for e in zipped.infolist() if not set(PurePosixPath(e.filename).parts) & set(_SKIPPED)]
        if len(entries) > MAX_FILES:
            raise UploadError(f"the zip holds {len(entries)} files; the limit is {MAX_FILES}")
        total = 0
        for entry in entries:
            name = PurePosixPath(entry.filename)
            if name.is_absolute() or ".." in name.parts or "\\" in entry.filename or ":" in entry.filename:
                raise UploadError(f"the zip entry {entry.filename!r} points outside the bundle")
            if stat.S_ISLNK(entry.external_attr >> 16):
                raise UploadError(f"the zip entry {entry.filename!r} is a link; bundles hold plain files")
            total += entry.file_size
            if total > MAX_UNPACKED_BYTES:
                raise UploadError(f"the zip unpacks to more than {MAX_UNPACKED_BYTES} bytes")
        for entry in entries:
            target = dest.joinpath(*PurePosixPath(entry.filename).parts)
            if entry.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with zipped.open(entry) as source, open(target, "wb") as out:
                # The header's size can lie: count what actually comes out.
                shutil.copyfileobj(_Limited(source, entry.file_size), out)
    if (dest / "exercise.toml").is_file():
        return dest
    tops = [p for p in dest.iterdir() if p.is_dir() and (p / "exercise.toml").is_file()]
    if len(tops) != 1:
        raise UploadError("the zip holds no exercise.toml (at its top or in one folder)")
    return tops[0]


class _Limited(io.RawIOBase):
    def __init__(self, stream, limit: int):
        self.stream, self.left = stream, limit

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        chunk = self.stream.read(min(len(buffer), self.left + 1))
        if len(chunk) > self.left:
            raise UploadError("a zip entry is larger than its header says")
        self.left -= len(chunk)
        buffer[:len(chunk)] = chunk
        return len(chunk)


# ------------------------------------------------------------------ receiving

def receive(session: Session, archive: bytes, *, uploaded_by: int | None = None,
            api_key_id: int | None = None) -> Upload:
    """Validate an upload and add it to the session as an Upload in "checking" (the
    caller commits, then calls enqueue_check). Raises UploadError with what is wrong
    (NotYours when an API key sends a version of someone else's exercise); nothing is
    stored then."""
    if api_key_id is not None:
        waiting = session.scalar(select(func.count()).select_from(Upload).where(
            Upload.api_key_id == api_key_id, Upload.status == UploadStatus.CHECKING))
        if waiting >= MAX_CHECKING_PER_KEY:
            # A check grades a bundle several times over: one key must not fill the workers.
            raise TooManyChecks(f"this key has {waiting} bundles being checked; the limit is "
                                f"{MAX_CHECKING_PER_KEY}: wait for one to finish")
    with tempfile.TemporaryDirectory(prefix="grader-upload-") as scratch:
        root = unpack(archive, Path(scratch))
        try:
            bundle = load(root)
        except CatalogError as exc:
            # Name the place in the zip, never this machine's scratch folder.
            shown = "the bundle" if root == Path(scratch) else root.name
            raise UploadError(str(exc).replace(str(root), shown)) from None
    published = session.get(Exercise, bundle.slug)
    if api_key_id is not None and published is not None and owner_key(session, published) != api_key_id:
        raise NotYours(f"{bundle.slug} is published by {_publisher(session, published)}; an API key publishes "
                       f"new versions of the exercises it published itself: choose another slug")
    if published is not None and published.version >= bundle.version:
        raise UploadError(f"{bundle.slug} is published at version {published.version}; "
                          f"raise 'version' in exercise.toml above it to replace it")
    pending = session.scalar(select(Upload).where(Upload.slug == bundle.slug, Upload.status == UploadStatus.CHECKING,
                                                  Upload.version == bundle.version))
    if pending is not None:
        raise UploadError(f"{bundle.slug} version {bundle.version} is being checked already "
                          f"(upload {pending.id})")
    upload = Upload(slug=bundle.slug, version=bundle.version, device=bundle.device, archive=archive,
                    sha256=hashlib.sha256(archive).hexdigest(), status=UploadStatus.CHECKING,
                    uploaded_by=uploaded_by, api_key_id=api_key_id)
    session.add(upload)
    session.flush()
    return upload


def owner_key(session: Session, exercise: Exercise) -> int | None:
    """The API key whose upload the exercise is graded with now; None: the catalogue
    folder, the instructor page or the command line (the site's administrators)."""
    return session.scalar(select(Upload.api_key_id).where(Upload.id == exercise.upload_id)) \
        if exercise.upload_id is not None else None


def _publisher(session: Session, exercise: Exercise) -> str:
    if exercise.upload_id is None:
        return "the site's catalogue"
    return "another API key" if owner_key(session, exercise) is not None else "the site's administrators"


def enqueue_check(upload_id: int, device: str) -> None:
    """Send the check to a worker that can grade the bundle's device (after the commit)."""
    send_task(CHECK_TASK, [upload_id], queue=queue_for(device))


class WorkersUnreachable(UploadError):
    """The check could not be sent; the upload was removed, so nothing is half-stored."""


def start_check(upload_id: int, device: str, database_url: str | None = None) -> None:
    """Enqueue the check of a committed upload; if the broker cannot take it, remove the
    upload again and raise WorkersUnreachable (the instructor simply uploads again)."""
    try:
        enqueue_check(upload_id, device)
    except Exception:
        log.exception("upload %s stored but its check not enqueued", upload_id)
        with transaction(database_url) as session:
            session.delete(session.get(Upload, upload_id))
        raise WorkersUnreachable("the workers cannot be reached; nothing was stored: try again shortly") from None


@dataclass
class Version:
    """One version of an exercise as the service holds it."""

    version: int
    # published: what new submissions are graded against; kept: published before, still
    # graded against for the assignments pinned to it; checking or rejected: an upload.
    state: str
    check: int | None          # the upload (its check) it came from; None: the catalogue folder
    uploaded_at: datetime | None
    checked_at: datetime | None
    error: str | None


def versions(session: Session, slug: str, *, api_key_id: int | None = None) -> list[Version]:
    """The versions of ``slug``, newest first: the published one and those kept, and the
    uploads still checking or rejected that ``api_key_id`` sent (no one else's)."""
    exercise = session.get(Exercise, slug)
    seen = select(Upload).where(Upload.slug == slug)
    seen = seen.where(or_(Upload.status == UploadStatus.PUBLISHED, Upload.api_key_id == api_key_id)) \
        if api_key_id is not None else seen.where(Upload.status == UploadStatus.PUBLISHED)
    listed = []
    for upload in session.scalars(seen.order_by(Upload.id.desc())):
        state = upload.status
        if state == UploadStatus.PUBLISHED and (exercise is None or exercise.upload_id != upload.id):
            state = "kept"
        listed.append(Version(upload.version, state, upload.id, upload.uploaded_at, upload.checked_at, upload.error))
    if exercise is not None and exercise.upload_id is None:
        listed.append(Version(exercise.version, UploadStatus.PUBLISHED, None, None, exercise.updated_at, None))
    if exercise is not None and not exercise.published:
        listed = [v for v in listed if v.state != UploadStatus.PUBLISHED]  # withdrawn: nothing is offered
    return sorted(listed, key=lambda v: (v.version, v.check or 0), reverse=True)


# ------------------------------------------------------------------ reading a published bundle

def materialize(upload: Upload) -> Bundle:
    """The upload as a bundle folder, unpacked once into this machine's cache (by
    content hash, so a changed upload never reuses old files)."""
    folder = settings().bundle_cache / f"{upload.slug}-v{upload.version}-{upload.sha256[:16]}"
    if not folder.is_dir():
        folder.parent.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=".unpacking-", dir=folder.parent))
        try:
            root = unpack(upload.archive, scratch)
            try:
                root.rename(folder)  # atomic: another worker may be unpacking it too
            except OSError:
                if not folder.is_dir():
                    raise
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return load(folder)


def bundle_for(session: Session, slug: str, exercises_dir: str | Path | None = None) -> Bundle:
    """What a submission to `slug` is graded with, and its statement read from: its
    upload, or the catalogue's folder. CatalogError or UploadError if unreadable."""
    row = session.get(Exercise, slug)
    if row is not None and row.upload_id is not None:
        return materialize(session.get(Upload, row.upload_id))
    return find(slug, exercises_dir)


def bundle_at(session: Session, slug: str, version: int, exercises_dir: str | Path | None = None) -> Bundle:
    """The bundle of ``slug`` at ``version`` (what an assignment pinned), whatever is
    published now: the published bundle if it is that version, else the upload of it that
    was published. CatalogError when no copy of that version is kept."""
    current = bundle_for(session, slug, exercises_dir)
    if current.version == version:
        return current
    kept = session.scalar(select(Upload).where(Upload.slug == slug, Upload.version == version,
                                               Upload.status == UploadStatus.PUBLISHED).order_by(Upload.id.desc()))
    if kept is None:
        raise CatalogError(f"version {version} of {slug} is no longer kept (version {current.version} is published)")
    return materialize(kept)


def starter(session: Session, slug: str, version: int | None = None,
            exercises_dir: str | Path | None = None) -> str | None:
    """The starter code students begin from (of ``version``, an assignment's pinned one, where
    given); None (and a warning logged) when no copy of the bundle is kept."""
    try:
        bundle = bundle_for(session, slug, exercises_dir) if version is None else \
            bundle_at(session, slug, version, exercises_dir)
        return bundle.read("starter.py")
    except (CatalogError, UploadError):
        log.warning("the starter code of %s cannot be read", slug, exc_info=True)
        return None


def statements(session: Session, slug: str, exercises_dir: str | Path | None = None) -> dict[str, str | None]:
    """A published exercise's statement in each language it has, for the pages and the
    API; all None (and a warning logged) when its bundle cannot be read: the row
    outlives the folder or upload it came from."""
    try:
        return bundle_for(session, slug, exercises_dir).statements()
    except (CatalogError, UploadError):
        log.warning("exercise %s is published but its bundle cannot be read", slug, exc_info=True)
        return dict.fromkeys(Bundle.LANGUAGES)
