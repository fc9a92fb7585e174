"""A damaged zip sent as an exercise's bundle is refused with what is wrong and where:
on the API a 422 `damaged_zip` that names the entry, on the instructor's page the form
again with the same words; never a server error, and nothing is stored (no upload, no
folder left behind). The zips are made here with zipfile, then their bytes damaged:
a bad checksum, sizes in either header that disagree with the data or with each other,
cut short at any place, an unknown compression, an encrypted entry. (Hostile names and
links in a sound zip are test_bundles.py's and test_exercise_api.py's.)"""

from __future__ import annotations

import html
import io
import random
import re
import shutil
import struct
import tempfile
import zipfile
from pathlib import Path

import pytest
from sqlalchemy import func, select

from grader import db
from grader.accounts import keys, users
from grader.catalog import uploads
from grader.catalog.models import Upload
from tests.forms import sign_in, token

ROOT = Path(__file__).resolve().parent.parent
BASICS = ROOT / "exercises" / "autograd-basics"
TESTS = "ines-basics/tests/test_grad_2xtx.py"  # deflated, the last entry: the directory follows its data
SOLUTION = "ines-basics/solution.py"             # deflated, starter.py follows it
STATEMENT = "ines-basics/README.md"              # stored as it is

# Where an entry's fields lie: in its own (local) header, and in its record in the zip's directory.
_LOCAL = {"flags": (6, "<H"), "method": (8, "<H"), "crc": (14, "<L"), "compressed": (18, "<L"), "size": (22, "<L")}
_CENTRAL = {"flags": (8, "<H"), "method": (10, "<H"), "crc": (16, "<L"), "compressed": (20, "<L"),
            "size": (24, "<L")}


def bundle_zip() -> bytes:
    """autograd-basics as ines-basics version 1, zipped as an instructor's tool does; its
    statement stored, every other file deflated."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(BASICS.rglob("*")):
            relative = path.relative_to(BASICS)
            if not path.is_file() or "__pycache__" in relative.parts:
                continue
            data = path.read_bytes()
            if relative.name == "exercise.toml":
                data = data.replace(b'slug = "autograd-basics"', b'slug = "ines-basics"')
            method = zipfile.ZIP_STORED if relative.name == "README.md" else zipfile.ZIP_DEFLATED
            archive.writestr(f"ines-basics/{relative.as_posix()}", data, compress_type=method)
    return buffer.getvalue()


GOOD = bundle_zip()


def info(archive: bytes, name: str) -> zipfile.ZipInfo:
    with zipfile.ZipFile(io.BytesIO(archive)) as zipped:
        return zipped.getinfo(name)


def directory_start(archive: bytes) -> int:
    """Where the zip's directory begins, as its end record (the last 22 bytes) says."""
    return struct.unpack_from("<L", archive, len(archive) - 22 + 16)[0]


def record(archive: bytes, name: str) -> int:
    """Where the entry's record in the zip's directory begins."""
    at = directory_start(archive)
    while archive[at:at + 4] == b"PK\x01\x02":
        name_length, extra_length, comment_length = struct.unpack_from("<3H", archive, at + 28)
        if archive[at + 46:at + 46 + name_length] == name.encode():
            return at
        at += 46 + name_length + extra_length + comment_length
    raise LookupError(name)


def data_start(archive: bytes, name: str) -> int:
    at = info(archive, name).header_offset
    name_length, extra_length = struct.unpack_from("<2H", archive, at + 26)
    return at + 30 + name_length + extra_length


def changed(field: str, change, name: str = TESTS, headers: tuple[str, ...] = ("local", "central"),
            archive: bytes = GOOD) -> bytes:
    """The zip with one field of an entry's headers changed: ``change(value)``."""
    damaged = bytearray(archive)
    for header in headers:
        offset, layout = (_LOCAL if header == "local" else _CENTRAL)[field]
        at = (info(archive, name).header_offset if header == "local" else record(archive, name)) + offset
        (value,) = struct.unpack_from(layout, damaged, at)
        struct.pack_into(layout, damaged, at, change(value))
    return bytes(damaged)


def flipped(name: str, at: int) -> bytes:
    """The zip with one byte of an entry's data turned over."""
    damaged = bytearray(GOOD)
    damaged[data_start(GOOD, name) + at] ^= 0xFF
    return bytes(damaged)


def cut(at: int) -> bytes:
    return GOOD[:at]


SIZE, COMPRESSED = info(GOOD, TESTS).file_size, info(GOOD, TESTS).compress_size

# (the damaged zip, the entry named (None: the damage is the zip's own), what the message says)
CASES = {
    # A bad checksum
    "data-changed": (flipped(STATEMENT, 5), STATEMENT, "its data does not match its checksum (CRC)"),
    "checksum-changed": (changed("crc", lambda v: v ^ 0x10), TESTS, "its data does not match its checksum (CRC)"),
    # Sizes that disagree: each header with the other, and both with the data
    "own-size-larger": (changed("size", lambda v: v + 7, headers=("local",)), TESTS,
                        f"its own header gives it {SIZE + 7} bytes, the zip's directory {SIZE}"),
    "own-size-smaller": (changed("size", lambda v: v - 7, headers=("local",)), TESTS,
                         f"its own header gives it {SIZE - 7} bytes, the zip's directory {SIZE}"),
    "listed-size-larger": (changed("size", lambda v: v + 7, headers=("central",)), TESTS,
                           f"its own header gives it {SIZE} bytes, the zip's directory {SIZE + 7}"),
    "listed-size-smaller": (changed("size", lambda v: v - 7, headers=("central",)), TESTS,
                            f"its own header gives it {SIZE} bytes, the zip's directory {SIZE - 7}"),
    "size-larger": (changed("size", lambda v: v + 7), TESTS, f"it unpacks to {SIZE} bytes, though its headers say "
                                                             f"{SIZE + 7}"),
    "size-smaller": (changed("size", lambda v: v - 7), TESTS, f"it unpacks to more than the {SIZE - 7} bytes its "
                                                              f"headers say"),
    "own-compressed-larger": (changed("compressed", lambda v: v + 7, headers=("local",)), TESTS,
                              f"its own header gives it {COMPRESSED + 7} compressed bytes, the zip's directory "
                              f"{COMPRESSED}"),
    "own-compressed-smaller": (changed("compressed", lambda v: v - 7, headers=("local",)), TESTS,
                               f"its own header gives it {COMPRESSED - 7} compressed bytes"),
    "listed-compressed-larger": (changed("compressed", lambda v: v + 7, headers=("central",)), TESTS,
                                 f"the zip's directory {COMPRESSED + 7}"),
    "listed-compressed-smaller": (changed("compressed", lambda v: v - 7, headers=("central",)), TESTS,
                                  f"the zip's directory {COMPRESSED - 7}"),
    "compressed-larger-into-the-directory": (changed("compressed", lambda v: v + 7), TESTS,
                                             f"its headers give it {COMPRESSED + 7} compressed bytes, which run "
                                             f"into the zip's directory"),
    "compressed-larger-into-the-next-entry": (changed("compressed", lambda v: v + 7, name=SOLUTION), SOLUTION,
                                              "which run into the entry 'ines-basics/starter.py' that follows it"),
    "compressed-smaller": (changed("compressed", lambda v: v - 7), TESTS,
                           f"its compressed data stops before its end: the {COMPRESSED - 7} compressed bytes its "
                           f"headers give are not all of it"),
    "stored-sizes-smaller": (changed("size", lambda v: v - 3, name=STATEMENT), STATEMENT,
                             "bytes its headers say"),
    # Cut short, at each place
    "cut-in-an-entrys-header": (cut(20), None, "it is cut short inside the header of one of its entries"),
    "cut-in-an-entrys-data": (cut(data_start(GOOD, SOLUTION) + 10), SOLUTION,
                              f"the zip is cut short inside its data: 10 of its {info(GOOD, SOLUTION).compress_size} "
                              f"compressed bytes are there"),
    "cut-before-the-directory": (cut(directory_start(GOOD)), None,
                                 "it is cut short after its entries' data, before its directory"),
    "cut-in-the-directory": (cut(record(GOOD, SOLUTION) + 30), None, "it is cut short inside its directory"),
    "cut-before-the-end-record": (cut(len(GOOD) - 22), None,
                                  "it is cut short after its directory (the list of its entries), before the end "
                                  "record that closes it"),
    "cut-in-the-end-record": (cut(len(GOOD) - 9), None, "it is cut short inside the end record that closes it"),
    "bytes-lost-in-the-middle": (GOOD[:data_start(GOOD, SOLUTION) + 4] + GOOD[data_start(GOOD, SOLUTION) + 14:],
                                 "ines-basics/MISCONCEPTIONS.md",
                                 "the zip's directory points at a place where its header is not"),
    # A compression that cannot be undone here
    "unknown-method": (changed("method", lambda v: 77), TESTS, "it is compressed by method 77, which cannot be "
                                                               "unpacked here"),
    "deflate64": (changed("method", lambda v: 9), TESTS, "it is compressed by method 9 (Deflate64)"),
    "own-header-method": (changed("method", lambda v: 77, headers=("local",)), TESTS,
                          "its own header says it is compressed by method 77, the zip's directory by method 8"),
    # Encrypted
    "encrypted": (changed("flags", lambda v: v | 1), TESTS, "it is encrypted (the zip has a password): zip the "
                                                            "folder without one"),
    "own-header-encrypted": (changed("flags", lambda v: v | 1, headers=("local",)), TESTS,
                             "its own header says it is encrypted, the zip's directory that it is not"),
}


def message(entry: str | None, says: str) -> str:
    return f"the zip's entry {entry!r} is damaged: {says}" if entry else f"the zip is damaged: {says}"


@pytest.fixture
def scratch(monkeypatch, tmp_path) -> Path:
    """Where receiving an upload unpacks it (the temporary folder): empty again after."""
    folder = tmp_path / "scratch"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


@pytest.fixture
def service(database_url, monkeypatch, tmp_path, redis, app, scratch):
    """The web app, an administrator signed in on its pages, and an API key that publishes."""
    monkeypatch.setenv("GRADER_DATABASE_URL", database_url)
    monkeypatch.setenv("GRADER_BUNDLE_CACHE", str(tmp_path / "cache"))
    with db.transaction(database_url) as session:
        users.create_user(session, email="ines@example.org", password="correct horse", role="admin", name="Ines")
        key = keys.create(session, ("exercises:read", "exercises:write"), name="repo")[1]
    page = app.test_client()
    assert sign_in(page, "ines@example.org").status_code == 302
    return {"api": app.test_client(), "page": page, "key": key}


def send(service, surface: str, archive: bytes):
    if surface == "api":
        return service["api"].post("/api/v1/exercises", data=archive, content_type="application/zip",
                                   headers={"Authorization": f"Bearer {service['key']}"})
    page = service["page"]
    return page.post("/instructor/uploads", content_type="multipart/form-data",
                     data={"csrf_token": token(page, "/instructor/exercises"), "bundle": (io.BytesIO(archive), "b.zip")})


def stored(database_url: str) -> int:
    with db.transaction(database_url) as session:
        return session.scalar(select(func.count()).select_from(Upload))


@pytest.mark.parametrize("surface", ["api", "page"])
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_the_sound_zip_these_are_damaged_from_is_taken(service, database_url, surface):
    answer = send(service, surface, GOOD)
    assert answer.status_code in (202, 303), answer.get_data(as_text=True)
    assert stored(database_url) == 1


@pytest.mark.parametrize("surface", ["api", "page"])
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_damaged_zip_is_refused_naming_the_entry_and_what_is_wrong(service, database_url, scratch, redis,
                                                                     surface, case):
    archive, entry, says = CASES[case]
    answer = send(service, surface, archive)
    assert answer.status_code == 422, answer.get_data(as_text=True)[:2000]
    if surface == "api":
        error = answer.get_json()["error"]
        assert error["code"] == "damaged_zip" and error.get("entry") == entry, error
        assert error["message"].startswith(message(entry, "")) and says in error["message"], error["message"]
    else:
        page = html.unescape(answer.get_data(as_text=True))
        shown = page[page.index(message(entry, "")):]
        assert says in shown[:shown.index("</p>")], shown[:500]
        assert 'name="bundle"' in page  # the form, to choose the file again
    assert stored(database_url) == 0 and redis.llen("cpu") == 0
    assert list(scratch.iterdir()) == []


def test_a_damaged_zip_is_refused_on_either_database(service, database_url, scratch):
    archive, entry, says = CASES["checksum-changed"]
    for surface in ("api", "page"):
        assert send(service, surface, archive).status_code == 422
    assert stored(database_url) == 0 and list(scratch.iterdir()) == []


# ------------------------------------------------------------------ unpacking itself

def small_zip(**options) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("b/exercise.toml", 'slug = "x"\nversion = 1\n' * 3, **options)
        archive.writestr("b/README.md", "# X\n", compress_type=zipfile.ZIP_STORED)
        archive.writestr("b/tests/test_x.py", "def test_x():\n    assert True\n" * 4)
    return buffer.getvalue()


def test_every_cut_and_every_changed_byte_is_refused_as_a_zip_or_unpacks(tmp_path):
    """Wherever a small zip is cut, and whichever of its bytes is changed, unpacking either
    works (a timestamp, say) or raises UploadError: never another exception."""
    archive = small_zip()
    damaged = [archive[:n] for n in range(len(archive))]
    rng = random.Random(7)
    damaged += [archive[:n] + bytes([archive[n] ^ rng.randrange(1, 256)]) + archive[n + 1:]
                for n in range(len(archive)) for _ in range(3)]
    for n, bytes_ in enumerate(damaged):
        dest = tmp_path / str(n)
        dest.mkdir()
        try:
            uploads.unpack(bytes_, dest)
        except uploads.UploadError:
            pass
        shutil.rmtree(dest)


class _Unseekable(io.RawIOBase):
    """A stream zipfile cannot seek back in: it writes each entry's sizes after its data."""

    def __init__(self):
        self.written = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self.written += data
        return len(data)


@pytest.mark.parametrize("made", ["sizes-after-data", "zip64", "bzip2", "lzma"])
def test_sound_zips_of_other_makings_unpack(tmp_path, made):
    """What the damage checks must not refuse: sizes written after the data (a zip made
    on the fly, as Finder's are), zip64 headers, and the other compressions zipfile undoes."""
    if made == "sizes-after-data":
        stream = _Unseekable()
        with zipfile.ZipFile(stream, "w", zipfile.ZIP_DEFLATED) as zipped:
            zipped.writestr("b/exercise.toml", "slug = 'x'\n")
            zipped.writestr("b/tests/test_x.py", "def test_x():\n    pass\n")
        archive = bytes(stream.written)
        assert info(archive, "b/exercise.toml").flag_bits & 0x8
    elif made == "zip64":
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zipped:
            for name in ("b/exercise.toml", "b/tests/test_x.py"):
                with zipped.open(name, "w", force_zip64=True) as out:
                    out.write(b"slug = 'x'\n")
        archive = buffer.getvalue()
    else:
        archive = small_zip(compress_type=zipfile.ZIP_BZIP2 if made == "bzip2" else zipfile.ZIP_LZMA)
    root = uploads.unpack(archive, tmp_path)
    assert (root / "exercise.toml").is_file() and (root / "tests" / "test_x.py").is_file()


@pytest.mark.parametrize("method", [zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA])
def test_a_bad_checksum_is_found_in_every_compression(tmp_path, method):
    archive = small_zip(compress_type=method)
    damaged = changed("crc", lambda v: v ^ 1, name="b/exercise.toml", archive=archive)
    with pytest.raises(uploads.DamagedZip, match=r"'b/exercise.toml' is damaged: its data does not match its "
                                                 r"checksum \(CRC\)"):
        uploads.unpack(damaged, tmp_path)


def test_an_entry_never_writes_more_than_its_headers_say(tmp_path):
    """Both headers agree on a size smaller than the data: unpacking stops at that size."""
    archive = small_zip()
    damaged = changed("size", lambda v: 10, name="b/tests/test_x.py", archive=archive)
    with pytest.raises(uploads.DamagedZip, match="unpacks to more than the 10 bytes"):
        uploads.unpack(damaged, tmp_path)
    written = tmp_path / "b" / "tests" / "test_x.py"
    assert not written.exists() or written.stat().st_size <= 10


@pytest.mark.parametrize("names, says", [
    (("b/x", "b/x/y"), "the zip entry 'b/x/y' cannot be unpacked: a file and a folder in the zip have the same name"),
    (("b/x/y", "b/x"), "the zip entry 'b/x' cannot be unpacked: a file and a folder in the zip have the same name"),
    (("b/x/", "b/x"), "the zip entry 'b/x' cannot be unpacked: a file and a folder in the zip have the same name"),
    (("b/" + "x" * 300,), "cannot be unpacked: its name is too long"),
    (("",), "the zip holds an entry without a name"),
])
def test_names_that_cannot_be_unpacked_side_by_side_are_refused(tmp_path, names, says):
    """Sound bytes, but names a folder cannot hold together."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in names:
            archive.writestr(zipfile.ZipInfo(name), "x")
    with pytest.raises(uploads.UploadError, match=re.escape(says)):
        uploads.unpack(buffer.getvalue(), tmp_path)
