"""Exercise bundles that instructors upload (a zip of the catalogue's folder format).

An upload is received (unpacked safely, its exercise.toml validated, its version
compared with what is published) and stored as a Bundle row in "checking"; a worker
then runs the catalogue's check on it and publishes it only if every check holds.
The zip itself stays in the database, so any worker, on any machine, grades with the
same files: it unpacks them once into its bundle cache, by content hash.

Hidden tests in a bundle run in the trusted grading process, as the catalogue's do:
uploading is for instructors only. The zip itself is treated as hostile all the same.
"""

from __future__ import annotations

import hashlib
import io
import shutil
import stat
import tempfile
import zipfile
from pathlib import Path, PurePosixPath

from sqlalchemy import select
from sqlalchemy.orm import Session

from grader import catalog
from grader.models import Bundle, Exercise, now

MAX_ARCHIVE_BYTES = 8 * 1024 * 1024
MAX_UNPACKED_BYTES = 32 * 1024 * 1024
MAX_FILES = 500
CHECK_TASK = "grader.check_bundle"
_SKIPPED = ("__pycache__", ".git", ".pytest_cache", "__MACOSX")


class BundleError(ValueError):
    """An upload that cannot be taken; the message says what is wrong with it."""


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
        raise BundleError(f"the zip is {len(archive)} bytes; the limit is {MAX_ARCHIVE_BYTES}")
    try:
        zipped = zipfile.ZipFile(io.BytesIO(archive))
    except zipfile.BadZipFile:
        raise BundleError("the upload is not a zip archive") from None
    with zipped:
        entries = [e for e in zipped.infolist() if not set(PurePosixPath(e.filename).parts) & set(_SKIPPED)]
        if len(entries) > MAX_FILES:
            raise BundleError(f"the zip holds {len(entries)} files; the limit is {MAX_FILES}")
        total = 0
        for entry in entries:
            name = PurePosixPath(entry.filename)
            if name.is_absolute() or ".." in name.parts or "\\" in entry.filename or ":" in entry.filename:
                raise BundleError(f"the zip entry {entry.filename!r} points outside the bundle")
            if stat.S_ISLNK(entry.external_attr >> 16):
                raise BundleError(f"the zip entry {entry.filename!r} is a link; bundles hold plain files")
            total += entry.file_size
            if total > MAX_UNPACKED_BYTES:
                raise BundleError(f"the zip unpacks to more than {MAX_UNPACKED_BYTES} bytes")
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
        raise BundleError("the zip holds no exercise.toml (at its top or in one folder)")
    return tops[0]


class _Limited(io.RawIOBase):
    def __init__(self, stream, limit: int):
        self.stream, self.left = stream, limit

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        chunk = self.stream.read(min(len(buffer), self.left + 1))
        if len(chunk) > self.left:
            raise BundleError("a zip entry is larger than its header says")
        self.left -= len(chunk)
        buffer[:len(chunk)] = chunk
        return len(chunk)


# ------------------------------------------------------------------ receiving

def receive(session: Session, archive: bytes, *, uploaded_by: int | None = None) -> Bundle:
    """Validate an upload and add it to the session as a Bundle in "checking" (the
    caller commits, then calls enqueue_check). Raises BundleError with what is wrong;
    nothing is stored then."""
    with tempfile.TemporaryDirectory(prefix="grader-upload-") as scratch:
        root = unpack(archive, Path(scratch))
        try:
            exercise = catalog.load(root)
        except catalog.CatalogError as exc:
            # Name the place in the zip, never this machine's scratch folder.
            shown = "the bundle" if root == Path(scratch) else root.name
            raise BundleError(str(exc).replace(str(root), shown)) from None
    published = session.get(Exercise, exercise.slug)
    if published is not None and published.version >= exercise.version:
        raise BundleError(f"{exercise.slug} is published at version {published.version}; "
                          f"raise 'version' in exercise.toml above it to replace it")
    pending = session.scalar(select(Bundle).where(Bundle.slug == exercise.slug, Bundle.status == "checking",
                                                  Bundle.version == exercise.version))
    if pending is not None:
        raise BundleError(f"{exercise.slug} version {exercise.version} is being checked already "
                          f"(upload {pending.id})")
    bundle = Bundle(slug=exercise.slug, version=exercise.version, device=exercise.device, archive=archive,
                    sha256=hashlib.sha256(archive).hexdigest(), status="checking", uploaded_by=uploaded_by)
    session.add(bundle)
    session.flush()
    return bundle


def enqueue_check(bundle_id: int, device: str) -> None:
    """Send the check to a worker that can grade the bundle's device (after the commit)."""
    from grader.submissions import queue_for
    from worker.app import celery

    celery.send_task(CHECK_TASK, args=[bundle_id], queue=queue_for(device))


# ------------------------------------------------------------------ on the worker

def materialize(bundle: Bundle) -> catalog.Exercise:
    """The bundle as a catalogue exercise, unpacked once into this machine's cache
    (by content hash, so a changed upload never reuses old files)."""
    from grader.settings import settings

    folder = settings().bundle_cache / f"{bundle.slug}-v{bundle.version}-{bundle.sha256[:16]}"
    if not folder.is_dir():
        folder.parent.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=".unpacking-", dir=folder.parent))
        try:
            root = unpack(bundle.archive, scratch)
            try:
                root.rename(folder)  # atomic: another worker may be unpacking it too
            except OSError:
                if not folder.is_dir():
                    raise
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return catalog.load(folder)


def exercise_for(session: Session, slug: str, exercises_dir: str | Path | None = None) -> catalog.Exercise:
    """What a submission to `slug` is graded with, and its statement read from: its
    uploaded bundle, or the catalogue's folder. CatalogError or BundleError if unreadable."""
    row = session.get(Exercise, slug)
    if row is not None and row.bundle_id is not None:
        return materialize(session.get(Bundle, row.bundle_id))
    return catalog.find(slug, exercises_dir)


def check_and_publish(bundle_id: int, database_url: str | None = None) -> str:
    """Run the catalogue's check on an uploaded bundle; publish it if every check holds.
    Returns the bundle's status. Idempotent: a bundle already decided is left alone."""
    from grader import db

    with db.transaction(database_url) as session:
        bundle = session.get(Bundle, bundle_id)
        if bundle is None or bundle.status != "checking":
            return bundle.status if bundle else "missing"
        exercise = materialize(bundle)
    reports = {}
    rows = catalog.check(exercise, on_report=reports.__setitem__)
    solution = reports.get("solution")
    max_score = solution.max_score if solution is not None and solution.status == "graded" else 0.0
    with db.transaction(database_url) as session:
        bundle = session.get(Bundle, bundle_id, with_for_update=True)
        if bundle.status != "checking":
            return bundle.status
        bundle.check_rows = [vars(r) for r in rows]
        bundle.checked_at = now()
        published = session.get(Exercise, bundle.slug)
        if not all(r.ok for r in rows):
            bundle.status, bundle.error = "rejected", f"{sum(not r.ok for r in rows)} of {len(rows)} checks failed"
        elif max_score <= 0:
            bundle.status, bundle.error = "rejected", "its solution did not grade to a positive score"
        elif published is not None and published.version >= bundle.version:
            bundle.status = "rejected"
            bundle.error = f"version {published.version} was published while this one was checked"
        else:
            row = published or Exercise(slug=bundle.slug)
            row.publish(exercise, max_score, bundle_id=bundle.id)
            session.add(row)
            bundle.status, bundle.error = "published", None
        return bundle.status
