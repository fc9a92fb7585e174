"""Instructors add exercises as bundles: an upload is refused with a reason, or checked
by a real worker and published only if every check holds; `grader exercise add` does
the same from the command line; `grader exercise sync` withdraws folders that are gone."""

from __future__ import annotations

import io
import os
import re
import shutil
import stat
import time
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import func, select

from grader import catalog, db
from grader.accounts import users
from grader.catalog import publishing, uploads
from grader.catalog.models import Exercise, Upload
from grader.cli import main
from grader.submissions.models import Submission
from tests.forms import sign_in, token
from tests.live import lent_settings, shared_worker, stop

ROOT = Path(__file__).resolve().parent.parent
BASICS = ROOT / "exercises" / "autograd-basics"


def bundle_folder(tmp_path: Path, version: int = 2, title: str = "Uploaded gradients") -> Path:
    """autograd-basics, copied and raised to `version`, with a statement that says it was uploaded."""
    folder = tmp_path / f"autograd-basics-v{version}"
    shutil.copytree(BASICS, folder, ignore=shutil.ignore_patterns("__pycache__"))
    toml = folder / "exercise.toml"
    toml.write_text(toml.read_text().replace("version = 1", f"version = {version}"))
    (folder / "README.md").write_text(f"# {title}\n\nThis statement came with the upload.\n")
    return folder


def zipped(entries: dict[str, bytes | str], links: tuple[str, ...] = ()) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
        for name in links:
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, "/etc/passwd")
    return buffer.getvalue()


@pytest.fixture
def published(database_url, monkeypatch, tmp_path):
    """autograd-basics published from the catalogue at version 1, and an administrator (uploading is
    site-wide)."""
    monkeypatch.setenv("GRADER_DATABASE_URL", database_url)
    monkeypatch.setenv("GRADER_BUNDLE_CACHE", lent_settings(tmp_path)["GRADER_BUNDLE_CACHE"])  # the lent workers'
    exercise = catalog.find("autograd-basics")
    with db.transaction(database_url) as session:
        session.add(Exercise(slug=exercise.slug, version=1, title=exercise.title, device=exercise.device,
                             max_score=6, functions=list(exercise.functions)))
        users.create_user(session, email="ines@example.org", password="correct horse", role="admin",
                          name="Ines")
    return database_url


def count_bundles(database_url: str) -> int:
    with db.transaction(database_url) as session:
        return session.scalar(select(func.count()).select_from(Upload))


# ------------------------------------------------------------------ what is refused

@pytest.mark.parametrize("archive, says", [
    (b"not a zip at all", "not a zip archive"),
    (zipped({"../evil/exercise.toml": "x"}), "points outside the bundle"),
    (zipped({"/etc/exercise.toml": "x"}), "points outside the bundle"),
    (zipped({"bundle/exercise.toml": "x"}, links=("bundle/solution.py",)), "is a link"),
    (zipped({"README.md": "# no metadata"}), "no exercise.toml"),
    (zipped({"b/exercise.toml": 'slug = "Bad Slug"\nversion = 1'}), "slug 'Bad Slug'"),
    (zipped({"b/exercise.toml": 'slug = "x"\nversion = 1\nfunctions = ["f"]\n[title]\nen = "X"'}), "missing README.md"),
], ids=["not-a-zip", "dot-dot", "absolute", "link", "no-metadata", "bad-slug", "no-readme"])
# Named: a zip's bytes hold the second it was made, and every test process must collect the same ids.
def test_a_broken_upload_says_what_is_wrong_and_stores_nothing(published, archive, says):
    with pytest.raises(uploads.UploadError, match=re.escape(says)):
        with db.transaction(published) as session:
            uploads.receive(session, archive)
    assert count_bundles(published) == 0


def test_an_upload_too_large_to_unpack_is_refused(published, monkeypatch):
    monkeypatch.setattr(uploads, "MAX_UNPACKED_BYTES", 1000)
    with pytest.raises(uploads.UploadError, match="unpacks to more than 1000 bytes"):
        with db.transaction(published) as session:
            uploads.receive(session, zipped({"b/exercise.toml": "x" * 2000}))


def test_an_upload_must_raise_the_published_version(published, tmp_path):
    same = uploads.pack(bundle_folder(tmp_path, version=1))
    with pytest.raises(uploads.UploadError, match="published at version 1; raise 'version'"):
        with db.transaction(published) as session:
            uploads.receive(session, same)
    assert count_bundles(published) == 0


def test_a_packed_folder_unpacks_to_the_same_bundle(tmp_path):
    folder = bundle_folder(tmp_path)
    root = uploads.unpack(uploads.pack(folder), tmp_path / "out")
    assert catalog.load(root).version == 2
    assert sorted(p.relative_to(root) for p in root.rglob("*.py")) == sorted(
        p.relative_to(folder) for p in folder.rglob("*.py") if "__pycache__" not in p.parts)


# ------------------------------------------------------------------ checked on a worker, then published

def upload(client, archive: bytes):
    csrf = token(client, "/instructor/exercises")
    return client.post("/instructor/uploads", data={"csrf_token": csrf, "bundle": (io.BytesIO(archive), "b.zip")},
                       content_type="multipart/form-data")


def wait_for_check(client, location: str, seconds: float = 180) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        page = client.get(location).get_data(as_text=True)
        if "Checking" not in page:
            return page
        time.sleep(0.5)
    raise AssertionError(f"still checking after {seconds} s")


@pytest.mark.slow
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_an_uploaded_bundle_is_checked_on_a_worker_published_and_graded_with(published, app, tmp_path):
    from grader import submissions

    client = app.test_client()
    assert sign_in(client, "ines@example.org").status_code == 302
    good = uploads.pack(bundle_folder(tmp_path, version=2))
    broken_folder = bundle_folder(tmp_path, version=3)
    (broken_folder / "solution.py").write_text((BASICS / "mutants" / "forgot_factor.py").read_text())
    broken = uploads.pack(broken_folder)

    worker = shared_worker(tmp_path)
    try:
        accepted = upload(client, good)
        assert accepted.status_code == 303
        page = wait_for_check(client, accepted.location)
        assert "Published" in page and "violated" not in page
        assert "mutant backward_twice" in page and "full marks" in page
        with db.transaction(published) as session:
            row = session.get(Exercise, "autograd-basics")
            assert row.version == 2 and row.upload_id is not None and row.max_score == 6
        # Students see the uploaded statement, and their code is graded against version 2.
        assert "This statement came with the upload." in client.get("/exercises/autograd-basics").get_data(
            as_text=True)
        with db.transaction(published) as session:
            student = users.create_user(session, email="ada@example.org", password="correct horse")
            submission_id = submissions.create(session, user=student, exercise_slug="autograd-basics",
                                               source=(BASICS / "solution.py").read_text()).id
        submissions.enqueue(submission_id, "any")

        rejected = upload(client, broken)
        page = wait_for_check(client, rejected.location)
        assert "Rejected" in page and "violated" in page
        deadline = time.monotonic() + 120
        while True:
            with db.transaction(published) as session:
                graded = session.get(Submission, submission_id)
            if graded.status in ("graded", "failed") or time.monotonic() > deadline:
                break
            time.sleep(0.3)
    finally:
        stop(worker)
    assert graded.status == "graded" and graded.score == 6 and graded.exercise_version == 2
    with db.transaction(published) as session:
        assert session.get(Exercise, "autograd-basics").version == 2  # the rejected v3 changed nothing
    listing = client.get("/instructor/exercises").get_data(as_text=True)
    assert "Rejected" in listing and "Published" in listing


def test_the_page_takes_a_bundle_larger_than_any_submission(published, app, redis, tmp_path):
    client = app.test_client()
    assert sign_in(client, "ines@example.org").status_code == 302
    folder = bundle_folder(tmp_path)
    (folder / "data.bin").write_bytes(os.urandom(3 * 1024 * 1024))  # incompressible: a 3 MiB zip
    assert upload(client, uploads.pack(folder)).status_code == 303
    assert count_bundles(published) == 1


def test_uploading_is_for_administrators_only(published, app):
    with db.transaction(published) as session:
        users.create_user(session, email="ada@example.org", password="correct horse")
    client = app.test_client()
    assert sign_in(client, "ada@example.org").status_code == 302
    assert client.get("/instructor/exercises").status_code == 403
    assert client.post("/instructor/uploads").status_code in (400, 403)  # no CSRF token, or no right
    assert count_bundles(published) == 0


def test_a_refused_upload_shows_its_reason_on_the_page(published, app):
    client = app.test_client()
    assert sign_in(client, "ines@example.org").status_code == 302
    answer = upload(client, b"not a zip")
    assert answer.status_code == 422 and "not a zip archive" in answer.get_data(as_text=True)
    assert count_bundles(published) == 0


# ------------------------------------------------------------------ the command line

@pytest.mark.slow
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_grader_exercise_add_checks_here_and_publishes(published, tmp_path):
    folder = bundle_folder(tmp_path, version=2)
    added = CliRunner().invoke(main, ["exercise", "add", str(folder)])
    assert added.exit_code == 0, added.output
    assert "mutant:returns_y" in added.output and "checks hold" in added.output
    again = CliRunner().invoke(main, ["exercise", "add", str(folder)])
    assert again.exit_code == 1 and "published at version 2" in again.output
    with db.transaction(published) as session:
        assert session.get(Exercise, "autograd-basics").version == 2
        assert session.scalar(select(func.count()).select_from(Upload)) == 1


def test_grader_exercise_sync_withdraws_folders_that_are_gone(published, tmp_path, monkeypatch):

    with db.transaction(published) as session:
        session.add(Exercise(slug="old-exercise", version=1, title={"en": "Old"}, device="cpu", max_score=1,
                             functions=["f"]))
    assert publishing.unpublish_missing([catalog.find("autograd-basics")]) == ["old-exercise"]
    with db.transaction(published) as session:
        assert session.get(Exercise, "old-exercise").published is False
        assert session.get(Exercise, "autograd-basics").published is True


def test_a_check_lost_with_its_worker_ends_as_rejected_with_the_reason(published, redis):
    from datetime import timedelta

    from grader.db import now
    from grader.catalog import tasks

    with db.transaction(published) as session:
        session.add(Upload(slug="autograd-basics", version=2, device="any", archive=b"zip", sha256="0" * 64,
                           status="checking", uploaded_at=now() - tasks.CHECK_DEADLINE - timedelta(minutes=1)))
        session.add(Upload(slug="zero-grad", version=1, device="any", archive=b"zip", sha256="1" * 64,
                           status="checking", uploaded_at=now()))
    tasks.end_lost_checks()
    with db.transaction(published) as session:
        rows = {b.slug: b for b in session.scalars(select(Upload))}
    assert rows["autograd-basics"].status == "rejected" and "upload the bundle again" in rows["autograd-basics"].error
    assert rows["zero-grad"].status == "checking"  # still within its time


def test_the_check_table_reads_in_korean(app):
    from grader.authoring.check_table import CheckRow
    from grader.web.check_rows import check_text

    rows = [CheckRow("x", "solution", "full marks", "6/6 [graded]", True),
            CheckRow("x", "bundle", ">= 1 visible and >= 1 hidden test", "2 visible, 3 hidden", True),
            CheckRow("x", "mutant:wrong_power", "fails test_a, test_b", "fails nothing", False),
            CheckRow("x", "bundle", "valid mutants/mutants.toml", "Expected '=' (at line 3)", False)]
    with app.test_request_context(headers={"Accept-Language": "ko"}):
        shown = [(check_text(r.subject), check_text(r.expected), check_text(r.actual)) for r in rows]
    assert shown[0] == ("모범 답안", "만점", "6/6 [채점됨]")
    assert shown[1][1:] == ("공개 테스트와 비공개 테스트가 각각 하나 이상", "공개 2개, 비공개 3개")
    assert shown[2] == ("변형 답안 wrong_power", "실패: test_a, test_b", "실패: 없음")
    assert shown[3][2] == "Expected '=' (at line 3)"  # the TOML parser's own words, as written
