"""The REST API v1 through Flask's test client, on a real database (SQLite and
PostgreSQL) and a real Redis. No worker runs: these tests stop at the queue."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import func, select

from grader import db, refusals, submissions
from grader.accounts import keys
from grader.api.openapi import ERROR_CODES
from grader.cli import main
from grader.accounts.models import ApiKey, User
from grader.catalog.models import Exercise
from grader.submissions.models import Submission
from grader.settings import MAX_SOURCE_BYTES

ROOT = Path(__file__).resolve().parent.parent
GOOD_SOURCE = (ROOT / "exercises" / "autograd-basics" / "solution.py").read_text(encoding="utf-8")
ALL_SCOPES = keys.SCOPES


# ------------------------------------------------------------------ fixtures

@pytest.fixture
def make_key(database_url):
    """make_key(*scopes) -> a new API key holding those scopes."""

    def make_key(*scopes: str) -> str:
        with db.transaction(database_url) as session:
            return keys.create(session, scopes, name="test")[1]

    return make_key


@pytest.fixture
def auth(make_key):
    """Headers with a key that may do everything."""
    return {"Authorization": f"Bearer {make_key(*ALL_SCOPES)}"}


def submit(client, auth, body=None, **kw):
    body = {"exercise": "autograd-basics", "source": GOOD_SOURCE, "user": "lms-42"} if body is None else body
    return client.post("/api/v1/submissions", json=body, headers=auth, **kw)


def count(database_url, model) -> int:
    with db.transaction(database_url) as session:
        return session.scalar(select(func.count()).select_from(model))


def queued_messages(redis) -> list[dict]:
    """The messages waiting in the cpu queue (Celery's Redis transport: a list per queue)."""
    return [json.loads(raw) for raw in redis.lrange("cpu", 0, -1)]


def assert_error(response, status: int, code: str):
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.is_json
    error = response.get_json()["error"]
    assert error["code"] == code and error["message"]
    assert ERROR_CODES[code] == status  # the document tells clients the same status


# ------------------------------------------------------------------ exercises

def test_the_exercise_list_holds_published_exercises_only(client, auth, basics, database_url):
    with db.transaction(database_url) as session:
        session.add(Exercise(slug="draft", version=1, device="cpu", max_score=1, title={"en": "Draft"},
                             functions=["f"], published=False))
    response = client.get("/api/v1/exercises", headers=auth)
    assert response.status_code == 200
    assert response.get_json() == {"exercises": [{
        "slug": "autograd-basics", "version": 1, "device": "any", "max_score": 6, "functions": ["grad_2xtx"],
        "title": {"en": "Your first gradient with backward()", "ko": "backward()로 구하는 첫 번째 기울기"},
        "released": True}]}


def test_an_exercise_comes_with_its_statement_in_english_and_korean(client, auth, basics):
    response = client.get("/api/v1/exercises/autograd-basics", headers=auth)
    assert response.status_code == 200
    data = response.get_json()
    readme = ROOT / "exercises" / "autograd-basics"
    assert data["statement"] == {"en": (readme / "README.md").read_text(encoding="utf-8"),
                                 "ko": (readme / "README.ko.md").read_text(encoding="utf-8")}
    assert data["slug"] == "autograd-basics" and data["max_score"] == 6 and data["functions"] == ["grad_2xtx"]


def test_a_published_exercise_whose_bundle_is_gone_has_no_statement(client, auth, basics, app, tmp_path):
    app.config["EXERCISES_DIR"] = tmp_path
    response = client.get("/api/v1/exercises/autograd-basics", headers=auth)
    assert response.status_code == 200
    assert response.get_json()["statement"] == {"en": None, "ko": None}


@pytest.mark.parametrize("slug", ["no-such-exercise", "draft", "Autograd-Basics", "a%00b", "a.b", "x" * 300])
def test_an_unknown_or_unpublished_exercise_is_a_404(client, auth, basics, database_url, slug):
    with db.transaction(database_url) as session:
        session.add(Exercise(slug="draft", version=1, device="cpu", max_score=1, title={"en": "Draft"},
                             functions=["f"], published=False))
    assert_error(client.get(f"/api/v1/exercises/{slug}", headers=auth), 404, "exercise_not_found")


# ------------------------------------------------------------------ submitting

def test_a_submission_is_stored_queued_and_sent_once_to_the_cpu_queue(client, auth, basics, database_url, redis):
    response = submit(client, auth)
    assert response.status_code == 202
    data = response.get_json()
    assert data["status"] == "queued" and re.fullmatch(r"[0-9a-f]{32}", data["id"])
    assert data["url"] == f"http://localhost/api/v1/submissions/{data['id']}" == response.headers["Location"]
    with db.transaction(database_url) as session:
        row = session.get(Submission, data["id"])
        assert (row.status, row.source, row.exercise_version) == ("queued", GOOD_SOURCE, 1)
        # in the key's own namespace (tests/security/test_api_tenants.py)
        assert row.user.external_id.endswith(":lms-42") and row.user.role == "student"
    assert redis.llen("cpu") == 1
    [message] = queued_messages(redis)
    assert message["headers"]["task"] == submissions.GRADE_TASK
    args, _kwargs, _embed = json.loads(base64.b64decode(message["body"]))
    assert args == [data["id"]]


def test_the_task_is_sent_only_after_the_row_is_committed(client, auth, basics, database_url, monkeypatch):
    seen = []

    def enqueue(submission_id, device, **kw):
        with db.transaction(database_url) as other_session:  # what a worker would see
            seen.append(other_session.get(Submission, submission_id) is not None)

    monkeypatch.setattr(submissions, "enqueue", enqueue)
    assert submit(client, auth).status_code == 202
    assert seen == [True]


def test_a_user_submitting_again_is_the_same_user(client, auth, basics, database_url, redis):
    first, second = submit(client, auth).get_json(), submit(client, auth).get_json()
    assert first["id"] != second["id"]
    assert count(database_url, User) == 1 and count(database_url, Submission) == 2
    assert redis.llen("cpu") == 2


def test_a_new_users_first_submissions_at_once_both_succeed(client, auth, basics, database_url, monkeypatch):
    real = submissions.api_user
    raced = []

    def racing(session, key_id, user, **kw):
        if not raced:  # another request makes the same user between our look-up and our insert
            raced.append(True)
            external_id = submissions.api_external_id(key_id, user)
            with db.transaction(database_url) as other_session:
                other_session.add(User(external_id=external_id, name=user, role="student", api_key_id=key_id))
            session.add(User(external_id=external_id, name=user, role="student", api_key_id=key_id))
            session.flush()
        return real(session, key_id, user, **kw)

    monkeypatch.setattr(submissions, "api_user", racing)
    assert submit(client, auth).status_code == 202
    assert raced and count(database_url, User) == 1 and count(database_url, Submission) == 1


def test_a_broker_outage_keeps_the_submission_for_the_sweeper(client, auth, basics, database_url, monkeypatch):
    def enqueue(*args, **kw):
        raise ConnectionError("redis is down")

    monkeypatch.setattr(submissions, "enqueue", enqueue)
    response = submit(client, auth)
    assert response.status_code == 202
    with db.transaction(database_url) as session:
        row = session.get(Submission, response.get_json()["id"])
        assert row.status == "queued" and row.deadline is not None  # past it, the sweeper sends it


TOO_LARGE = "x" * (MAX_SOURCE_BYTES + 1)
GOOD = {"exercise": "autograd-basics", "source": GOOD_SOURCE, "user": "lms-42"}
JSON = {"content_type": "application/json"}

BAD_REQUESTS = {
    # name: (keyword arguments of client.post, status, code)
    "unknown exercise": (dict(json={**GOOD, "exercise": "no-such-exercise"}), 422, "unknown_exercise"),
    "unpublished exercise": (dict(json={**GOOD, "exercise": "draft"}), 422, "unknown_exercise"),
    "exercise that cannot be a slug": (dict(json={**GOOD, "exercise": "a\x00b"}), 422, "unknown_exercise"),
    "empty source": (dict(json={**GOOD, "source": ""}), 422, "source_empty"),
    "blank source": (dict(json={**GOOD, "source": " \n\t"}), 422, "source_empty"),
    "source over the limit": (dict(json={**GOOD, "source": TOO_LARGE}), 413, "source_too_large"),
    "source over the limit in UTF-8 bytes": (
        dict(json={**GOOD, "source": "# " + "가" * (MAX_SOURCE_BYTES // 3)}), 413, "source_too_large"),
    "source with a NUL": (dict(json={**GOOD, "source": "x = 1\x00"}), 422, "source_invalid"),
    "source that does not parse": (dict(json={**GOOD, "source": "def grad_2xtx(x:\n"}), 422, "syntax_error"),
    "source nested too deeply to parse": (dict(json={**GOOD, "source": "-" * 100_000 + "1"}), 422,
                                          "syntax_error"),
    "source with an unpaired surrogate": (
        dict(data=b'{"exercise": "autograd-basics", "user": "u", "source": "x = \\ud800"}', **JSON),
        422, "source_not_utf8"),
    "body not UTF-8": (
        dict(data=b'{"exercise": "autograd-basics", "user": "u", "source": "x = \xff"}', **JSON),
        400, "body_not_utf8"),
    "body in UTF-16": (dict(data=json.dumps(GOOD).encode("utf-16"), **JSON), 400, "body_not_utf8"),
    "malformed JSON": (dict(data=b'{"exercise": "autograd-basics",', **JSON), 400, "malformed_json"),
    "JSON nested too deep": (dict(data=b"[" * 100_000, **JSON), 400, "malformed_json"),
    "empty body": (dict(data=b"", **JSON), 400, "malformed_json"),
    "a JSON array": (dict(json=[GOOD]), 422, "invalid_body"),
    "text/plain": (dict(data=json.dumps(GOOD), content_type="text/plain"), 415, "unsupported_media_type"),
    "a form": (dict(data=GOOD), 415, "unsupported_media_type"),
    "no content type": (dict(data=json.dumps(GOOD)), 415, "unsupported_media_type"),
    "JSON in Latin-1": (dict(data=json.dumps(GOOD), content_type="application/json; charset=latin-1"),
                        415, "unsupported_media_type"),
    "no exercise": (dict(json={"source": GOOD_SOURCE, "user": "u"}), 422, "missing_field"),
    "no source": (dict(json={"exercise": "autograd-basics", "user": "u"}), 422, "missing_field"),
    "no user": (dict(json={"exercise": "autograd-basics", "source": GOOD_SOURCE}), 422, "missing_field"),
    "source a number": (dict(json={**GOOD, "source": 12}), 422, "wrong_type"),
    "source a list of lines": (dict(json={**GOOD, "source": ["x = 1"]}), 422, "wrong_type"),
    "exercise null": (dict(json={**GOOD, "exercise": None}), 422, "wrong_type"),
    "user a number": (dict(json={**GOOD, "user": 42}), 422, "wrong_type"),
    "an unknown field": (dict(json={**GOOD, "language": "python"}), 422, "unknown_field"),
    "empty user": (dict(json={**GOOD, "user": " "}), 422, "invalid_user"),
    "user too long": (dict(json={**GOOD, "user": "u" * 501}), 422, "invalid_user"),
    "user with a NUL": (dict(json={**GOOD, "user": "u\x00"}), 422, "invalid_user"),
    "body far over any source": (dict(data=b" " * (7 * MAX_SOURCE_BYTES), **JSON), 413, "request_too_large"),
}


@pytest.mark.parametrize("name", list(BAD_REQUESTS))
def test_a_bad_submission_is_refused_and_leaves_no_row_and_no_task(client, auth, basics, database_url,
                                                                    redis, name):
    with db.transaction(database_url) as session:
        session.add(Exercise(slug="draft", version=1, device="cpu", max_score=1, title={"en": "Draft"},
                             functions=["f"], published=False))
    kwargs, status, code = BAD_REQUESTS[name]
    assert_error(client.post("/api/v1/submissions", headers=auth, **kwargs), status, code)
    assert count(database_url, Submission) == 0
    assert count(database_url, User) == 0
    assert redis.dbsize() == 0  # no message, not even a queue binding


def test_a_syntax_error_is_refused_with_its_line_and_column_and_nothing_is_stored(client, auth, basics,
                                                                                  database_url, redis):
    source = GOOD_SOURCE.replace("\n", "\r\n") + "\r\ndef broken(x):\r\n    return x +\r\n"
    response = submit(client, auth, {**GOOD, "source": source})
    assert_error(response, 422, "syntax_error")
    line = GOOD_SOURCE.count("\n") + 3  # the line counted as the student counts it: CRLF is one line end
    assert response.get_json()["error"] == {
        "code": "syntax_error", "line": line, "column": 15,
        "message": f"syntax error in submission.py, line {line}, column 15: invalid syntax"}
    assert count(database_url, Submission) == 0 and count(database_url, User) == 0 and redis.dbsize() == 0


def test_a_crlf_source_is_stored_with_lf(client, auth, basics, database_url, redis):
    response = submit(client, auth, {**GOOD, "source": "\ufeff" + GOOD_SOURCE.replace("\n", "\r\n")})
    assert response.status_code == 202, response.get_json()
    with db.transaction(database_url) as session:
        assert session.get(Submission, response.get_json()["id"]).source == GOOD_SOURCE


# ------------------------------------------------------------------ following a submission

def test_a_queued_submission_shows_its_status(client, auth, basics):
    created = submit(client, auth).get_json()
    response = client.get(f"/api/v1/submissions/{created['id']}", headers=auth)
    assert response.status_code == 200
    assert response.get_json() == {
        "id": created["id"], "exercise": "autograd-basics", "exercise_version": 1, "assignment": None, "user": "lms-42",
        "status": "queued", "progress": {"done": 0, "total": 0}, "score": None, "max_score": None,
        "failure_reason": None, "report": None, "notebook": None, "delayed": True,  # no worker in this test
        "comments": []}


def test_a_graded_submission_shows_its_score_and_report(client, auth, basics, database_url):
    created = submit(client, auth).get_json()
    report = {"exercise": "autograd-basics", "version": 1, "status": "graded", "score": 4.0, "max_score": 6.0,
              "tests": [{"id": "t::test_value", "name": "value", "passed": True, "points": 4.0,
                         "max_points": 4.0, "message": None, "hint": None, "i18n": {}},
                        {"id": "t::test_twice", "name": "twice", "passed": False, "points": 0.0,
                         "max_points": 2.0, "message": "x.grad is 4", "hint": "기울기는 누적됩니다", "i18n": {}}]}
    with db.transaction(database_url) as session:
        row = session.get(Submission, created["id"])
        row.status, row.score, row.max_score, row.report = "graded", 4.0, 6.0, report
        row.progress_done = row.progress_total = 2
    data = client.get(created["url"], headers=auth).get_json()
    assert (data["status"], data["score"], data["max_score"]) == ("graded", 4.0, 6.0)
    assert data["progress"] == {"done": 2, "total": 2}
    assert data["report"] == report


def test_a_failed_submission_says_why(client, auth, basics, database_url):
    created = submit(client, auth).get_json()
    with db.transaction(database_url) as session:
        row = session.get(Submission, created["id"])
        row.status, row.failure_reason = "failed", "the sandbox could not start"
    data = client.get(created["url"], headers=auth).get_json()
    assert (data["status"], data["failure_reason"], data["score"]) == ("failed", "the sandbox could not start", None)


@pytest.mark.parametrize("submission_id", ["0" * 32, "not-an-id", "a%00b"])
def test_an_unknown_submission_is_a_404(client, auth, basics, submission_id):
    assert_error(client.get(f"/api/v1/submissions/{submission_id}", headers=auth), 404, "submission_not_found")


# ------------------------------------------------------------------ keys and scopes

ENDPOINTS = [  # (method, path, scope it needs)
    ("GET", "/api/v1/exercises", "exercises:read"),
    ("GET", "/api/v1/exercises/autograd-basics", "exercises:read"),
    ("POST", "/api/v1/submissions", "submissions:write"),
    ("GET", "/api/v1/submissions/" + "0" * 32, "submissions:read"),
]


def call(client, method, path, headers):
    return client.open(path, method=method, headers=headers, json=GOOD if method == "POST" else None)


@pytest.mark.parametrize("method,path,scope", ENDPOINTS)
def test_every_endpoint_needs_a_key_with_its_scope(client, basics, make_key, database_url, redis,
                                                   method, path, scope):
    response = call(client, method, path, {})
    assert_error(response, 401, "missing_api_key")
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    others = [s for s in ALL_SCOPES if s != scope]
    assert_error(call(client, method, path, {"Authorization": f"Bearer {make_key(*others)}"}),
                 403, "insufficient_scope")
    allowed = call(client, method, path, {"Authorization": f"Bearer {make_key(scope)}"})
    assert allowed.status_code in (200, 202, 404)
    if method == "POST":
        assert allowed.status_code == 202
    else:
        assert count(database_url, Submission) == 0 and redis.dbsize() == 0


def test_a_wrong_key_is_refused(client, basics, make_key):
    key = make_key(*ALL_SCOPES)
    prefix = key.split("_")[1]
    wrong_secret = f"gk_{prefix}_" + "A" * 43
    unknown_prefix = "gk_0123456789ab_" + key.split("_", 2)[2]
    for token in (wrong_secret, unknown_prefix, key[:-1], key + "x", "gk_", "hunter2", "é" * 60):
        assert_error(client.get("/api/v1/exercises", headers={"Authorization": f"Bearer {token}"}),
                     401, "invalid_api_key")
    for header in (f"Basic {key}", key, "Bearer", "Bearer "):
        assert_error(client.get("/api/v1/exercises", headers={"Authorization": header}), 401, "missing_api_key")
    assert client.get("/api/v1/exercises", headers={"Authorization": f"bearer {key}"}).status_code == 200


def test_a_revoked_key_is_refused(client, basics, make_key, database_url, redis):
    key = make_key(*ALL_SCOPES)
    with db.transaction(database_url) as session:
        assert keys.revoke(session, key.split("_")[1]) is not None
    assert_error(client.get("/api/v1/exercises", headers={"Authorization": f"Bearer {key}"}),
                 401, "api_key_revoked")
    assert_error(submit(client, {"Authorization": f"Bearer {key}"}), 401, "api_key_revoked")
    assert count(database_url, Submission) == 0 and redis.dbsize() == 0


def test_a_key_is_stored_only_as_its_hash(make_key, database_url):
    key = make_key("exercises:read", "exercises:read")
    match = re.fullmatch(r"gk_([0-9a-f]{12})_([A-Za-z0-9_-]{43})", key)
    assert match
    with db.transaction(database_url) as session:
        row = session.scalar(select(ApiKey))
        assert row.prefix == match.group(1) and row.scopes == ["exercises:read"]
        assert row.key_hash == hashlib.sha256(key.encode()).hexdigest()
        assert match.group(2) not in repr([getattr(row, c.key) for c in ApiKey.__table__.columns])


def test_a_key_with_an_unknown_scope_cannot_be_made(database_url):
    with pytest.raises(ValueError, match="unknown scopes"), db.transaction(database_url) as session:
        keys.create(session, ["submissions:delete"])


# ------------------------------------------------------------------ errors outside the views

def test_an_unknown_api_path_is_a_json_404(client, auth):
    assert_error(client.get("/api/v1/nothing-here", headers=auth), 404, "not_found")
    assert_error(client.get("/api/v2/exercises"), 404, "not_found")


def test_a_wrong_method_is_a_json_405_that_says_what_is_allowed(client, auth):
    response = client.delete("/api/v1/exercises", headers=auth)
    assert_error(response, 405, "method_not_allowed")
    assert "GET" in response.headers["Allow"]


def test_an_internal_error_is_a_json_500_that_leaks_nothing(app, client, auth, basics, monkeypatch):
    from grader.api import exercises

    def broken(row):
        raise RuntimeError("secret detail")

    monkeypatch.setattr(exercises, "_exercise_json", broken)
    app.testing = False  # let Flask turn the exception into a 500, as in production
    response = client.get("/api/v1/exercises", headers=auth)
    assert_error(response, 500, "internal_error")
    assert "secret" not in response.get_data(as_text=True)


def test_pages_outside_the_api_keep_flasks_errors(client):
    response = client.get("/nothing-here")
    assert response.status_code == 404 and not response.is_json


def test_the_web_app_never_imports_the_engine(database_url, redis):
    code = ("import sys; from grader.app import create_app; app = create_app(); "
            "app.test_client().get('/api/v1/openapi.json'); "
            "bad = sorted(m for m in sys.modules if m.startswith(('grader.engine', 'torch'))); "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT,
                   env={"GRADER_DATABASE_URL": database_url, "PATH": "/usr/bin:/bin"})


# ------------------------------------------------------------------ the OpenAPI document

def test_the_document_describes_every_route_and_only_routes(app, client):
    response = client.get("/api/v1/openapi.json")  # no key: the document is public
    assert response.status_code == 200
    document = response.get_json()
    assert document["openapi"] == "3.1.0"
    prefix = "/api/v1"
    routed = {}
    for rule in app.url_map.iter_rules():
        if rule.endpoint.startswith("api."):
            path = re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", rule.rule.removeprefix(prefix))
            routed.setdefault(path, set()).update(m.lower() for m in rule.methods - {"HEAD", "OPTIONS"})
    documented = {path: set(item) - {"parameters"} for path, item in document["paths"].items()}
    assert documented == routed
    for path, item in document["paths"].items():
        for operation in item.values():
            names = {p["name"] for p in operation.get("parameters", []) if p["in"] == "path"}
            assert names == set(re.findall(r"{(\w+)}", path)), path


def test_the_document_names_the_scope_each_operation_needs(app, client):
    document = client.get("/api/v1/openapi.json").get_json()
    for rule in app.url_map.iter_rules():
        if not rule.endpoint.startswith("api."):
            continue
        view = app.view_functions[rule.endpoint]
        path = re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", rule.rule.removeprefix("/api/v1"))
        for method in rule.methods - {"HEAD", "OPTIONS"}:
            operation = document["paths"][path][method.lower()]
            assert operation.get("x-required-scope") == getattr(view, "scope", None), (method, path)
            if getattr(view, "scope", None) is None:
                assert operation["security"] == []
    assert set(document["components"]["securitySchemes"]["bearerAuth"].items()) >= {
        ("type", "http"), ("scheme", "bearer")}


def test_every_reference_in_the_document_resolves(client):
    document = client.get("/api/v1/openapi.json").get_json()

    def refs(node):
        if isinstance(node, dict):
            if "$ref" in node:
                yield node["$ref"]
            for value in node.values():
                yield from refs(value)
        elif isinstance(node, list):
            for value in node:
                yield from refs(value)

    found = list(refs(document))
    assert found
    for ref in found:
        target = document
        for part in ref.removeprefix("#/").split("/"):
            target = target[part]


def test_every_refusal_the_code_raises_is_registered_with_its_status_and_documented():
    """grader.refusals owns each code's status and words; the OpenAPI document lists them."""
    codes = set()
    for source in sorted((ROOT / "grader").rglob("*.py")):
        text = source.read_text(encoding="utf-8")
        codes |= set(re.findall(r'(?:ApiError|SubmissionError|SourceError|KeyRefused|TokenRefused|CourseError|'
                                r'Refusal|Refused)\(\s*"(\w+)"', text))
        codes |= set(re.findall(r'\d{3}: "(\w+)"', text))
    assert len(codes) > 50 and codes <= set(refusals.CODES), codes - set(refusals.CODES)
    assert ERROR_CODES == {code: kind.status for code, kind in refusals.CODES.items()}
    with pytest.raises(LookupError, match="not a refusal code"):
        refusals.Refused("made_up_code", "a code no registry knows")


# ------------------------------------------------------------------ the command line

def test_an_api_key_made_on_the_command_line_opens_the_api(client, basics, database_url, monkeypatch):
    monkeypatch.setenv("GRADER_DATABASE_URL", database_url)
    result = CliRunner().invoke(main, ["api-key", "create", "--scope", "exercises:read", "--name", "lms"])
    assert result.exit_code == 0, result.output
    key = result.stdout.strip()
    assert client.get("/api/v1/exercises", headers={"Authorization": f"Bearer {key}"}).status_code == 200
    assert_error(submit(client, {"Authorization": f"Bearer {key}"}), 403, "insufficient_scope")

    result = CliRunner().invoke(main, ["api-key", "revoke", key.split("_")[1]])
    assert result.exit_code == 0, result.output
    assert_error(client.get("/api/v1/exercises", headers={"Authorization": f"Bearer {key}"}),
                 401, "api_key_revoked")


def test_the_command_line_offers_exactly_the_apis_scopes():
    create = main.commands["api-key"].commands["create"]
    [scope] = [p for p in create.params if p.name == "scopes"]
    assert tuple(scope.type.choices) == keys.SCOPES


def test_db_upgrade_makes_the_schema(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'new.db'}"
    monkeypatch.setenv("GRADER_DATABASE_URL", url)
    result = CliRunner().invoke(main, ["db", "upgrade"])
    assert result.exit_code == 0, result.output
    assert count(url, Exercise) == 0 and count(url, ApiKey) == 0
    db.release(url)


def test_exercise_sync_publishes_every_bundle_with_its_solutions_score(database_url, monkeypatch):
    from grader import catalog
    from grader.catalog import publishing
    from grader.protocol.report import Report

    graded = []

    def grade(bundle, source):  # the engine is tested elsewhere; here: what sync does with its report
        graded.append((bundle.slug, source == bundle.file("solution.py").read_text(encoding="utf-8")))
        return Report(exercise=bundle.slug, version=bundle.version, status="graded", score=7.5,
                      max_score=7.5, duration_ms=1)

    monkeypatch.setattr(publishing, "grade", grade)
    monkeypatch.setenv("GRADER_DATABASE_URL", database_url)
    monkeypatch.delenv("GRADER_EXERCISES_DIR", raising=False)
    with db.transaction(database_url) as session:  # an older version, unpublished: sync brings it back
        session.add(Exercise(slug="autograd-basics", version=0, device="cpu", max_score=1, title={"en": "old"},
                             functions=[], published=False))
    result = CliRunner().invoke(main, ["exercise", "sync"])
    assert result.exit_code == 0, result.output
    bundles = catalog.all_bundles(ROOT / "exercises")
    assert sorted(graded) == sorted((b.slug, True) for b in bundles)
    with db.transaction(database_url) as session:
        rows = {row.slug: row for row in session.scalars(select(Exercise))}
        assert set(rows) == {b.slug for b in bundles}
        for bundle in bundles:
            row = rows[bundle.slug]
            assert (row.version, row.title, row.device, row.functions, row.max_score, row.published) == (
                bundle.version, bundle.title, bundle.device, list(bundle.functions), 7.5, True)


def test_exercise_sync_publishes_nothing_for_a_bundle_its_solution_fails(database_url, monkeypatch):
    from grader.catalog import publishing
    from grader.protocol.report import Report

    def grade(bundle, source):
        status = "sandbox_error" if bundle.slug == "detach" else "graded"
        return Report(exercise=bundle.slug, version=bundle.version, status=status, score=3,
                      max_score=3 if status == "graded" else 0, duration_ms=1, message="no sandbox")

    monkeypatch.setattr(publishing, "grade", grade)
    monkeypatch.setenv("GRADER_DATABASE_URL", database_url)
    monkeypatch.delenv("GRADER_EXERCISES_DIR", raising=False)
    result = CliRunner().invoke(main, ["exercise", "sync"])
    assert result.exit_code == 1
    assert "detach" in result.stderr
    with db.transaction(database_url) as session:
        assert session.get(Exercise, "detach") is None
        assert session.get(Exercise, "autograd-basics").max_score == 3


@pytest.mark.slow
def test_exercise_sync_grades_the_real_solution(tmp_path, monkeypatch):
    catalogue = tmp_path / "exercises"
    catalogue.mkdir()
    (catalogue / "autograd-basics").symlink_to(ROOT / "exercises" / "autograd-basics")
    url = f"sqlite:///{tmp_path / 'grader.db'}"
    monkeypatch.setenv("GRADER_DATABASE_URL", url)
    monkeypatch.setenv("GRADER_EXERCISES_DIR", str(catalogue))
    result = CliRunner().invoke(main, ["exercise", "sync"])
    if result.exit_code == 2:
        pytest.skip(f"no sandbox here: {result.stderr}")
    assert result.exit_code == 0, result.output
    with db.transaction(url) as session:
        assert session.get(Exercise, "autograd-basics").max_score == 6
    db.release(url)


def test_a_user_past_the_rate_limit_gets_429_with_retry_after_and_nothing_stored(app, client, basics, auth,
                                                                                 database_url):
    app.config["SUBMISSION_RATE_LIMIT"] = "2 per minute"
    bad = submit(client, auth, {"exercise": "autograd-basics", "source": "", "user": "lms-42"})
    assert bad.status_code == 422  # a refused submission does not count
    assert [submit(client, auth).status_code for _ in range(2)] == [202, 202]
    limited = submit(client, auth)
    assert_error(limited, 429, "rate_limited")
    assert int(limited.headers["Retry-After"]) > 0 and "2 per 1 minute" in limited.get_json()["error"]["message"]
    assert count(database_url, Submission) == 2
    other = submit(client, auth, {"exercise": "autograd-basics", "source": GOOD_SOURCE, "user": "lms-43"})
    assert other.status_code == 202  # per user
