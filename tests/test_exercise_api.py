"""Exercises as code: an instructor's repository publishes through the API. A bundle sent
to POST /api/v1/exercises is checked on a real worker and published only if every check
holds; a refused one stores nothing; a key publishes only its own exercises; and
`grader exercise push` does it all against the running service over HTTP."""

from __future__ import annotations

import io
import os
import re
import shutil
import time
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from flask import Flask, redirect
from sqlalchemy import func, select

from grader import catalog, db
from grader.accounts import keys
from grader.catalog import uploads
from grader.catalog.models import Exercise, Upload
from grader.cli import main
from tests.live import lent_settings, serve, shared_worker, stop

ROOT = Path(__file__).resolve().parent.parent
BASICS = ROOT / "exercises" / "autograd-basics"
SOLUTION = (BASICS / "solution.py").read_text()


def bundle_folder(tmp_path: Path, slug: str = "ines-basics", version: int = 1, *, broken: bool = False,
                  statement: str = "From Ines's repository.") -> Path:
    """autograd-basics under another slug and version, as it sits in an instructor's
    repository; ``broken``: its solution is one of its own mutants (the check must fail)."""
    folder = tmp_path / f"{slug}-v{version}-{len(list(tmp_path.iterdir()))}"  # a fresh copy each time
    shutil.copytree(BASICS, folder, ignore=shutil.ignore_patterns("__pycache__"))
    toml = folder / "exercise.toml"
    toml.write_text(toml.read_text().replace('slug = "autograd-basics"', f'slug = "{slug}"')
                    .replace("version = 1", f"version = {version}"))
    (folder / "README.md").write_text(f"# Gradients\n\n{statement}\n")
    if broken:
        (folder / "solution.py").write_text((BASICS / "mutants" / "forgot_factor.py").read_text())
    return folder


def zipped(entries: dict[str, bytes | str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return buffer.getvalue()


@pytest.fixture
def catalogue(database_url, monkeypatch, tmp_path):
    """autograd-basics published from the site's catalogue folder."""
    monkeypatch.setenv("GRADER_DATABASE_URL", database_url)
    monkeypatch.setenv("GRADER_BUNDLE_CACHE", lent_settings(tmp_path)["GRADER_BUNDLE_CACHE"])  # the lent workers'
    exercise = catalog.find("autograd-basics")
    with db.transaction(database_url) as session:
        session.add(Exercise(slug=exercise.slug, version=1, title=exercise.title, device=exercise.device,
                             max_score=6, functions=list(exercise.functions)))
    return database_url


@pytest.fixture
def key(database_url):
    """key(*scopes) -> a new API key."""

    def key(*scopes: str) -> str:
        with db.transaction(database_url) as session:
            return keys.create(session, scopes or ("exercises:read", "exercises:write"), name="repo")[1]

    return key


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def post_zip(client, token: str, archive: bytes, content_type: str = "application/zip"):
    return client.post("/api/v1/exercises", data=archive, content_type=content_type, headers=bearer(token))


def stored(database_url) -> int:
    with db.transaction(database_url) as session:
        return session.scalar(select(func.count()).select_from(Upload))


def assert_error(response, status: int, code: str, says: str = ""):
    assert response.status_code == status, response.get_data(as_text=True)
    error = response.get_json()["error"]
    assert error["code"] == code and says in error["message"], error


# ------------------------------------------------------------------ refused, with nothing stored

def test_a_key_without_exercises_write_cannot_publish(client, catalogue, key, tmp_path, redis):
    reader = key("exercises:read", "submissions:write")
    assert_error(post_zip(client, reader, uploads.pack(bundle_folder(tmp_path))), 403, "insufficient_scope",
                 "exercises:write")
    assert_error(client.get("/api/v1/exercise-checks/1", headers=bearer(reader)), 403, "insufficient_scope")
    assert_error(client.post("/api/v1/exercises", data=b"PK"), 401, "missing_api_key")
    assert stored(catalogue) == 0 and redis.llen("cpu") == 0


@pytest.mark.parametrize("body, content_type, status, code, says", [
    (b"not a zip at all", "application/zip", 422, "invalid_bundle", "not a zip archive"),
    (zipped({"../evil/exercise.toml": "x"}), "application/zip", 422, "invalid_bundle",
     "the zip entry '../evil/exercise.toml' points outside the bundle"),
    (zipped({"README.md": "# no metadata"}), "application/zip", 422, "invalid_bundle", "no exercise.toml"),
    (zipped({"b/exercise.toml": 'slug = "x"\nversion = 1\nfunctions = ["f"]\n[title]\nen = "X"'}),
     "application/octet-stream", 422, "invalid_bundle", "missing README.md"),
    (b"", "application/zip", 422, "invalid_bundle", "the body is empty"),
    (b'{"bundle": "x"}', "application/json", 415, "unsupported_media_type", "application/zip"),
], ids=["not-a-zip", "dot-dot", "no-metadata", "no-readme", "empty", "json"])
# Named: a zip's bytes hold the second it was made, and every test process must collect the same ids.
def test_a_malformed_bundle_is_refused_naming_the_problem_and_nothing_is_stored(
        client, catalogue, key, redis, body, content_type, status, code, says):
    assert_error(post_zip(client, key(), body, content_type), status, code, says)
    assert stored(catalogue) == 0 and redis.llen("cpu") == 0


def test_a_multipart_upload_names_its_field(client, catalogue, key, tmp_path, redis):
    token = key()
    wrong = client.post("/api/v1/exercises", headers=bearer(token), content_type="multipart/form-data",
                        data={"zip": (io.BytesIO(b"PK"), "b.zip")})
    assert_error(wrong, 422, "missing_field", "'bundle'")
    right = client.post("/api/v1/exercises", headers=bearer(token), content_type="multipart/form-data",
                        data={"bundle": (io.BytesIO(uploads.pack(bundle_folder(tmp_path))), "b.zip")})
    assert right.status_code == 202 and stored(catalogue) == 1


def test_the_catalogues_exercises_and_another_keys_are_not_yours(client, catalogue, key, tmp_path, redis):
    mine, theirs = key(), key()
    catalogue_v2 = bundle_folder(tmp_path, slug="autograd-basics", version=2)
    assert_error(post_zip(client, mine, uploads.pack(catalogue_v2)), 403, "exercise_not_yours",
                 "autograd-basics is published by the site's catalogue")
    # Ines's key published ines-basics v1 (as a worker would have, after its check).
    accepted = post_zip(client, mine, uploads.pack(bundle_folder(tmp_path)))
    assert accepted.status_code == 202
    check_id = accepted.get_json()["id"]
    with db.transaction(catalogue) as session:
        upload = session.get(Upload, check_id)
        upload.status = "published"
        row = Exercise(slug="ines-basics")
        row.publish(catalog.load(bundle_folder(tmp_path)), 6, upload_id=upload.id)
        session.add(row)
    assert_error(post_zip(client, theirs, uploads.pack(bundle_folder(tmp_path, version=2))), 403,
                 "exercise_not_yours", "ines-basics is published by another API key")
    assert_error(client.get(f"/api/v1/exercise-checks/{check_id}", headers=bearer(theirs)), 404, "check_not_found")
    assert post_zip(client, mine, uploads.pack(bundle_folder(tmp_path, version=2))).status_code == 202
    assert stored(catalogue) == 2


def test_one_key_has_only_a_few_bundles_checking_at_once(client, catalogue, key, tmp_path, redis):
    token = key()
    for n in range(uploads.MAX_CHECKING_PER_KEY):
        answer = post_zip(client, token, uploads.pack(bundle_folder(tmp_path, slug=f"ines-{n}")))
        assert answer.status_code == 202
        assert answer.headers["Location"] == answer.get_json()["url"]
    refused = post_zip(client, token, uploads.pack(bundle_folder(tmp_path, slug="ines-more")))
    assert_error(refused, 429, "too_many_checks", "wait for one to finish")
    assert refused.headers["Retry-After"]
    assert stored(catalogue) == uploads.MAX_CHECKING_PER_KEY == redis.llen("cpu")


def test_a_bundle_larger_than_any_submission_is_taken_up_to_the_zips_limit(client, catalogue, key, tmp_path, redis):
    folder = bundle_folder(tmp_path)
    (folder / "data.bin").write_bytes(os.urandom(3 * 1024 * 1024))  # over a request's usual limit
    assert post_zip(client, key(), uploads.pack(folder)).status_code == 202
    assert_error(post_zip(client, key(), b"PK" + os.urandom(uploads.MAX_ARCHIVE_BYTES + 100 * 1024)), 413,
                 "request_too_large")
    assert stored(catalogue) == 1


# ------------------------------------------------------------------ the command line, refused before a check

def test_push_refuses_to_follow_a_redirect_with_the_key(tmp_path, catalogue):
    """A redirect would carry the Authorization header to wherever it points."""
    seen = []
    elsewhere = Flask("elsewhere")
    elsewhere.add_url_rule("/<path:anything>", "any", lambda anything: seen.append(anything) or "",
                           methods=["GET", "POST"])
    with serve(elsewhere) as target:
        redirecting = Flask("redirecting")
        redirecting.add_url_rule("/api/v1/exercises", "go", lambda: redirect(f"{target}/steal", 307),
                                 methods=["POST"])
        with serve(redirecting) as url:
            pushed = CliRunner().invoke(main, ["exercise", "push", str(bundle_folder(tmp_path)), "--url", url],
                                        env={"GRADER_API_KEY": "gk_0123456789ab_" + "s" * 43})
    assert pushed.exit_code == 2 and "redirect" in pushed.output, pushed.output
    assert seen == []


@pytest.mark.parametrize("url, says", [("ftp://grader.example.edu", "not an http(s) address"),
                                       ("http://127.0.0.1:9", "cannot reach")])
def test_push_says_why_it_could_not_send(tmp_path, catalogue, url, says):
    pushed = CliRunner().invoke(main, ["exercise", "push", str(bundle_folder(tmp_path)), "--url", url],
                                env={"GRADER_API_KEY": "gk_0123456789ab_" + "s" * 43})
    assert pushed.exit_code == 2 and says in pushed.output, pushed.output
    assert "s" * 43 not in pushed.output


def test_exercise_check_is_grader_check_for_a_folder(tmp_path):
    folder = bundle_folder(tmp_path)
    (folder / "exercise.toml").write_text('slug = "ines-basics"\nversion = "one"\n')
    checked = CliRunner().invoke(main, ["exercise", "check", str(folder)])
    assert checked.exit_code == 1 and "version" in checked.output, checked.output


# ------------------------------------------------------------------ end to end, with a worker

def versions(client, token: str, slug: str = "ines-basics") -> list[tuple[int, str]]:
    answer = client.get(f"/api/v1/exercises/{slug}/versions", headers=bearer(token))
    assert answer.status_code == 200, answer.get_data(as_text=True)
    return [(v["version"], v["state"]) for v in answer.get_json()["versions"]]


def wait_graded(database_url, submission_id: str, seconds: float = 120):
    from grader.submissions.models import Submission

    deadline = time.monotonic() + seconds
    while True:
        with db.transaction(database_url) as session:
            row = session.get(Submission, submission_id)
            if row.status in ("graded", "failed"):
                return row
        assert time.monotonic() < deadline, f"submission still {row.status}"
        time.sleep(0.3)


@pytest.mark.slow
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_grader_exercise_push_publishes_through_the_running_service(app, catalogue, key, tmp_path, redis):
    client = app.test_client()
    token, stranger = key(), key("exercises:read")
    staff = key("courses:write", "submissions:write", "submissions:read")
    push = ["exercise", "push", "--url"]
    worker = shared_worker(tmp_path)
    try:
        with serve(app) as url:
            first = CliRunner().invoke(main, [*push, url, str(bundle_folder(tmp_path))],
                                       env={"GRADER_API_KEY": token})
            assert first.exit_code == 0, first.output
            assert "mutant:returns_y" in first.output and re.search(r"(\d+) of \1 checks hold", first.output)
            assert "published ines-basics v1" in first.output and token not in first.output
            # Its title is autograd-basics' own: the worker's check warns, and publishes it all the same.
            assert "warn ines-basics  its title 'Your first gradient with backward()' is the title of the exercise " \
                   "'autograd-basics' already" in first.output
            # Without --release a new exercise is a draft: its key sees it, no one else does.
            assert "released" not in first.output
            assert client.get("/api/v1/exercises/ines-basics", headers=bearer(stranger)).status_code == 404
            assert client.get("/api/v1/exercises/ines-basics", headers=bearer(token)).get_json()["released"] is False
            released = CliRunner().invoke(main, [*push, url, "--release", str(bundle_folder(tmp_path, version=2))],
                                          env={"GRADER_API_KEY": token})
            assert released.exit_code == 0, released.output
            assert "published ines-basics v2" in released.output and "released ines-basics" in released.output
            listed = client.get("/api/v1/exercises/ines-basics", headers=bearer(stranger)).get_json()
            assert listed["version"] == 2 and listed["released"] is True
            assert "From Ines's repository." in listed["statement"]["en"]

            # A course pins version 1; a broken version 2 is rejected with its table and changes nothing.
            course = client.post("/api/v1/courses", headers=bearer(staff),
                                 json={"title": "Deep learning", "code": "DL101"}).get_json()["id"]
            assert client.put(f"/api/v1/courses/{course}/members", headers=bearer(staff),
                              json={"members": [{"user": "ada", "role": "student"}]}).status_code == 200
            assignment = client.post(f"/api/v1/courses/{course}/assignments", headers=bearer(staff), json={
                "exercise": "ines-basics", "due_at": "2030-01-01T00:00:00+00:00"}).get_json()
            assert assignment["version"] == 2
            broken = CliRunner().invoke(main, [*push, url, str(bundle_folder(tmp_path, version=3, broken=True))],
                                        env={"GRADER_API_KEY": token})
            assert broken.exit_code == 1, broken.output
            assert "FAIL ines-basics  solution" in broken.output and "was not published" in broken.output
            assert versions(client, token) == [(3, "rejected"), (2, "published"), (1, "kept")]
            assert versions(client, stranger) == [(2, "published"), (1, "kept")]  # no one else's rejected uploads

            # Version 4 holds and is published, released as version 2 was; the assignment still
            # grades against version 2.
            fourth = CliRunner().invoke(main, [*push, url, str(bundle_folder(tmp_path, version=4,
                                                                             statement="Version four."))],
                                        env={"GRADER_API_KEY": token})
            assert fourth.exit_code == 0, fourth.output
            assert versions(client, token) == [(4, "published"), (3, "rejected"), (2, "kept"), (1, "kept")]
            assert client.get("/api/v1/exercises/ines-basics", headers=bearer(stranger)).get_json()["version"] == 4
            made = client.post("/api/v1/submissions", headers=bearer(staff),
                               json={"assignment": assignment["id"], "source": SOLUTION, "user": "ada"})
            assert made.status_code == 202, made.get_data(as_text=True)
            graded = wait_graded(catalogue, made.get_json()["id"])
    finally:
        stop(worker)
    assert graded.status == "graded" and graded.exercise_version == 2 and graded.score == 6
    with db.transaction(catalogue) as session:
        assert session.get(Exercise, "ines-basics").version == 4
