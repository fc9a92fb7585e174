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

import errno
import hashlib
import io
import logging
import lzma
import shutil
import stat
import struct
import tempfile
import zipfile
import zlib
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
    or fill the disk: absolute or '..' paths, links, too many or too large files; and a
    damaged zip (DamagedZip: cut short, a header that disagrees with the data or with the
    other header, a bad checksum, an encrypted entry, a compression it cannot undo)."""
    if len(archive) > MAX_ARCHIVE_BYTES:
        raise UploadError(f"the zip is {len(archive)} bytes; the limit is {MAX_ARCHIVE_BYTES}")
    zipped = _open_zip(archive)
    with zipped:
        starts = _check_layout(archive, zipped)
        entries = [e for e in zipped.infolist() if not set(PurePosixPath(e.filename).parts) & set(_SKIPPED)]
        if len(entries) > MAX_FILES:
            raise UploadError(f"the zip holds {len(entries)} files; the limit is {MAX_FILES}")
        total = 0
        for entry in entries:
            name = PurePosixPath(entry.filename)
            if not entry.filename:
                raise UploadError("the zip holds an entry without a name")
            if name.is_absolute() or ".." in name.parts or "\\" in entry.filename or ":" in entry.filename:
                raise UploadError(f"the zip entry {entry.filename!r} points outside the bundle")
            if stat.S_ISLNK(entry.external_attr >> 16):
                raise UploadError(f"the zip entry {entry.filename!r} is a link; bundles hold plain files")
            total += entry.file_size
            if total > MAX_UNPACKED_BYTES:
                raise UploadError(f"the zip unpacks to more than {MAX_UNPACKED_BYTES} bytes")
        for entry in entries:
            target = dest.joinpath(*PurePosixPath(entry.filename).parts)
            try:
                if entry.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                _extract(archive, zipped, entry, starts[entry.header_offset], target)
            except OSError as exc:
                if exc.errno not in (errno.EEXIST, errno.EISDIR, errno.ENOTDIR, errno.ENAMETOOLONG):
                    raise
                raise UploadError(f"the zip entry {entry.filename!r} cannot be unpacked: " + (
                    "its name is too long" if exc.errno == errno.ENAMETOOLONG else
                    "a file and a folder in the zip have the same name")) from None
    if (dest / "exercise.toml").is_file():
        return dest
    tops = [p for p in dest.iterdir() if p.is_dir() and (p / "exercise.toml").is_file()]
    if len(tops) != 1:
        raise UploadError("the zip holds no exercise.toml (at its top or in one folder)")
    return tops[0]


# What an entry may be compressed with (what zipfile unpacks); a few others, by name.
_METHODS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA)
_OTHER_METHODS = {9: "Deflate64", 93: "Zstandard", 95: "xz", 98: "PPMd", 99: "AES encryption"}
_LOCAL, _LOCAL_SIGNATURE = struct.Struct("<4s5H3L2H"), b"PK\x03\x04"
_CENTRAL, _CENTRAL_SIGNATURE = struct.Struct("<4s6H3L5H2L"), b"PK\x01\x02"
_END_SIGNATURE = b"PK\x05\x06"
_ENCRYPTED, _SIZES_AFTER_DATA, _UTF8_NAME = 0x1, 0x8, 0x800
_CHUNK = 64 * 1024
# What reading a damaged entry through zipfile raises (bzip2 and LZMA entries are read so).
_READ_ERRORS = (zipfile.BadZipFile, EOFError, zlib.error, OSError, ValueError, RuntimeError, NotImplementedError,
                lzma.LZMAError)


class DamagedZip(UploadError):
    """A zip whose bytes do not hold together: cut short, a header that disagrees with the
    data or with the entry's other header, a bad checksum, an encrypted entry, or one
    compressed in a way that cannot be undone here. ``entry``: the damaged entry's path
    inside the zip; None where the damage is the zip's own (its directory, its end)."""

    def __init__(self, problem: str, entry: str | None = None):
        self.entry, self.problem = entry, problem
        super().__init__(f"the zip's entry {entry!r} is damaged: {problem}" if entry is not None
                         else f"the zip is damaged: {problem}")


def _open_zip(archive: bytes) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(io.BytesIO(archive))
    except UnicodeDecodeError:
        raise DamagedZip("an entry's name is marked as UTF-8 but is not") from None
    except NotImplementedError as exc:  # a zip version, or spanning several files
        raise DamagedZip(f"its directory asks for what cannot be unpacked here ({exc})") from None
    except (zipfile.BadZipFile, EOFError, ValueError, OSError, struct.error) as exc:
        if not archive.startswith(_LOCAL_SIGNATURE):
            raise UploadError("the upload is not a zip archive") from None
        end = archive.rfind(_END_SIGNATURE, max(0, len(archive) - _END_RECORD_MAX))
        if end < 0 or end + _END_RECORD > len(archive):
            raise _where_cut(archive) from None
        raise DamagedZip(f"its directory (the list of its entries) cannot be read ({exc})") from None


_END_RECORD = 22
_END_RECORD_MAX = _END_RECORD + 65535  # with the longest comment it may carry


def _where_cut(archive: bytes) -> DamagedZip:
    """A zip that begins as one but lacks the end record that closes it was cut short:
    walk it from the start to say where."""
    at, size = 0, len(archive)
    while archive.startswith(_LOCAL_SIGNATURE, at):
        if at + _LOCAL.size > size:
            return DamagedZip("it is cut short inside the header of one of its entries")
        *_, flags, _, _, _, _, compressed, _, name_length, extra_length = _LOCAL.unpack_from(archive, at)
        start = at + _LOCAL.size + name_length + extra_length
        if start > size:
            return DamagedZip("it is cut short inside the header of one of its entries")
        name = _decoded(archive[at + _LOCAL.size:at + _LOCAL.size + name_length], flags)
        if flags & _SIZES_AFTER_DATA:
            break  # its size follows its data: where the next entry begins is not known here
        if start + compressed > size:
            return DamagedZip(f"the zip is cut short inside its data: {size - start} of its {compressed} "
                              f"compressed bytes are there", name)
        at = start + compressed
    if at == size:
        return DamagedZip("it is cut short after its entries' data, before its directory (the list of its "
                          "entries) and the end record that closes it")
    if archive.startswith(_CENTRAL_SIGNATURE, at):
        while at + _CENTRAL.size <= size and archive.startswith(_CENTRAL_SIGNATURE, at):
            at += _CENTRAL.size + sum(_CENTRAL.unpack_from(archive, at)[10:13])  # its name, extra field, comment
        rest = archive[at:at + 4]
        if at > size or rest and _CENTRAL_SIGNATURE.startswith(rest):
            return DamagedZip("it is cut short inside its directory (the list of its entries), before the "
                              "end record that closes it")
        if at == size:
            return DamagedZip("it is cut short after its directory (the list of its entries), before the end "
                              "record that closes it")
        if _END_SIGNATURE.startswith(rest):
            return DamagedZip("it is cut short inside the end record that closes it")
    return DamagedZip("the end record that closes it is missing (is it cut short?)")


def _decoded(name: bytes, flags: int) -> str:
    return name.decode("utf-8" if flags & _UTF8_NAME else "cp437", "replace")


def _check_layout(archive: bytes, zipped: zipfile.ZipFile) -> dict[int, int]:
    """Every entry is one that can be unpacked here (not encrypted, a known compression),
    its own header agrees with the zip's directory, and its data lies between its header
    and the next entry's (or the directory). Returns where each entry's data begins, by
    the place of its header."""
    entries = sorted(zipped.infolist(), key=lambda e: e.header_offset)
    starts = {}
    for n, entry in enumerate(entries):
        name = entry.filename
        if entry.flag_bits & _ENCRYPTED:
            raise DamagedZip("it is encrypted (the zip has a password): zip the folder without one", name)
        if entry.compress_type not in _METHODS:
            known = f" ({_OTHER_METHODS[entry.compress_type]})" if entry.compress_type in _OTHER_METHODS else ""
            raise DamagedZip(f"it is compressed by method {entry.compress_type}{known}, which cannot be unpacked "
                             f"here: zip it with the usual compression (deflate), or none", name)
        at = entry.header_offset
        if at < 0 or at + _LOCAL.size > len(archive) or not archive.startswith(_LOCAL_SIGNATURE, at):
            raise DamagedZip("the zip's directory points at a place where its header is not (bytes are missing, "
                             "or were added, before it)", name)
        _, _, flags, method, _, _, crc, compressed, size, name_length, extra_length = _LOCAL.unpack_from(archive, at)
        start = at + _LOCAL.size + name_length + extra_length
        own_name = archive[at + _LOCAL.size:at + _LOCAL.size + name_length]
        if own_name != entry.orig_filename.encode("utf-8" if entry.flag_bits & _UTF8_NAME else "cp437"):
            raise DamagedZip(f"the header the zip's directory points at names another entry, "
                             f"{_decoded(own_name, flags)!r}", name)
        if 0xFFFFFFFF in (size, compressed):
            size, compressed = _zip64_sizes(archive[at + _LOCAL.size + name_length:start], size, compressed)
        if flags & _ENCRYPTED:
            raise DamagedZip("its own header says it is encrypted, the zip's directory that it is not", name)
        if method != entry.compress_type:
            raise DamagedZip(f"its own header says it is compressed by method {method}, the zip's directory by "
                             f"method {entry.compress_type}", name)
        after = flags & _SIZES_AFTER_DATA  # its own header may then leave its sizes and checksum unset
        for own, listed, says in ((size, entry.file_size, "its own header gives it {} bytes, the zip's directory {}"),
                                  (compressed, entry.compress_size,
                                   "its own header gives it {} compressed bytes, the zip's directory {}"),
                                  (crc, entry.CRC, "its own header and the zip's directory give it different "
                                                   "checksums (CRC)")):
            if own != listed and not (after and own in (0, 0xFFFFFFFF)):
                raise DamagedZip(says.format(own, listed), name)
        end = start + entry.compress_size
        following = entries[n + 1] if n + 1 < len(entries) else None
        if following is not None and end > following.header_offset:
            raise DamagedZip(f"its headers give it {entry.compress_size} compressed bytes, which run into the entry "
                             f"{following.filename!r} that follows it", name)
        if following is None and end > zipped.start_dir:
            raise DamagedZip(f"its headers give it {entry.compress_size} compressed bytes, which run into the zip's "
                             f"directory (the list of its entries) that follows it", name)
        starts[at] = start
    return starts


def _zip64_sizes(extra: bytes, size: int, compressed: int) -> tuple[int, int]:
    """The sizes a local header gives as 0xFFFFFFFF, read from its zip64 extra field."""
    at = 0
    while at + 4 <= len(extra):
        kind, length = struct.unpack_from("<2H", extra, at)
        if kind == 1:
            body = extra[at + 4:at + 4 + length]
            values = list(struct.unpack(f"<{len(body) // 8}Q", body[:len(body) // 8 * 8]))
            if size == 0xFFFFFFFF and values:
                size = values.pop(0)
            if compressed == 0xFFFFFFFF and values:
                compressed = values.pop(0)
            break
        at += 4 + length
    return size, compressed


def _extract(archive: bytes, zipped: zipfile.ZipFile, entry: zipfile.ZipInfo, start: int, target: Path) -> None:
    """Write the entry's data to target, never more than its headers say (a header can
    lie: what comes out is counted), and check that it is all there and its checksum."""
    name, size = entry.filename, entry.file_size
    if entry.compress_size == 0 and size == 0:
        pieces = iter(())  # an empty file, however its compression is named
    elif entry.compress_type == zipfile.ZIP_STORED:
        raw = memoryview(archive)[start:start + entry.compress_size]
        pieces = (raw[i:i + _CHUNK] for i in range(0, len(raw), _CHUNK))
    elif entry.compress_type == zipfile.ZIP_DEFLATED:
        pieces = _inflated(memoryview(archive)[start:start + entry.compress_size], name)
    else:
        pieces = _read_by_zipfile(zipped, entry)
    crc, count = 0, 0
    with open(target, "wb") as out:
        for piece in pieces:
            count += len(piece)
            if count > size:
                raise DamagedZip(f"it unpacks to more than the {size} bytes its headers say", name)
            crc = zlib.crc32(piece, crc)
            out.write(piece)
    if count < size:
        raise DamagedZip(f"it unpacks to {count} bytes, though its headers say {size}", name)
    if crc != entry.CRC:
        raise DamagedZip("its data does not match its checksum (CRC)", name)


def _inflated(raw: memoryview, name: str):
    """Deflated data, undone at most _CHUNK bytes at a time."""
    inflater = zlib.decompressobj(-zlib.MAX_WBITS)
    data = raw
    try:
        while not inflater.eof:
            piece = inflater.decompress(data, _CHUNK)
            data = inflater.unconsumed_tail
            if not piece and not data:
                break  # every byte read, and nothing more comes out: the stream stops before its end
            yield piece
    except zlib.error:
        raise DamagedZip("its compressed data is corrupt: it cannot be unpacked", name) from None
    if not inflater.eof:
        raise DamagedZip(f"its compressed data stops before its end: the {len(raw)} compressed bytes its "
                         f"headers give are not all of it", name)
    if inflater.unused_data:
        raise DamagedZip(f"its compressed data ends {len(inflater.unused_data)} bytes before the {len(raw)} "
                         f"compressed bytes its headers give", name)


def _read_by_zipfile(zipped: zipfile.ZipFile, entry: zipfile.ZipInfo):
    try:
        with zipped.open(entry) as source:
            while piece := source.read(_CHUNK):
                yield piece
    except _READ_ERRORS as exc:
        problem = "its data does not match its checksum (CRC)" if "CRC" in str(exc) else \
            "its compressed data is corrupt: it cannot be unpacked"
        raise DamagedZip(problem, entry.filename) from None


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
