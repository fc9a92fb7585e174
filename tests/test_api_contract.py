"""/api/v1 keeps to its OpenAPI document where the fuzzing found it did not, and where a
request is refused before a view runs; a client made from the document alone works.

Every response here also passes tests/openapi_check.py (the autouse fixture of conftest.py):
the status is one the document lists for the operation (or its NotFound and MethodNotAllowed
answers), and the body keeps to the schema, formats included."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from grader import db
from grader.api.openapi import document
from grader.refusals import CODES
from grader.submissions.models import Submission, SubmissionStatus
from tests.api_fuzzing import MALFORMED_AUTHORIZATION, build_world, table_counts
from tests.openapi_check import Drift, hold_to_document
from tests.openapi_client import Client
from tests.test_api import assert_error, make_key  # noqa: F401  (a fixture)

# The API's answers, not the database's: SQLite is enough.
sqlite = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)


def error_of(response) -> dict:
    assert response.mimetype == "application/json", response.get_data(as_text=True)[:200]
    error = response.get_json()["error"]
    assert set(error) >= {"code", "message"} and error["code"] in CODES
    assert CODES[error["code"]].status == response.status_code
    return error


@pytest.fixture
def world(app, client, database_url):
    return build_world(client, database_url)


def operations_with_a_body():
    for path, item in document()["paths"].items():
        for method, operation in item.items():
            if "requestBody" in operation:
                yield method.upper(), path, operation


def filled(path: str, ids: dict) -> str:
    for name, value in ids.items():
        path = path.replace("{" + name + "}", str(value))
    return "/api/v1" + path


# ------------------------------------------------------------------ refused before a view runs

@sqlite
@pytest.mark.parametrize("value", [v for v in MALFORMED_AUTHORIZATION if v is not None])
def test_a_malformed_authorization_header_is_a_json_401_with_a_challenge(client, basics, value):
    response = client.get("/api/v1/exercises", headers={"Authorization": value})
    assert response.status_code == 401
    assert error_of(response)["code"] in ("missing_api_key", "invalid_api_key")
    assert response.headers["WWW-Authenticate"].startswith("Bearer")


@sqlite
def test_every_body_an_operation_cannot_read_is_refused_as_json_and_stores_nothing(client, world, database_url):
    """Another content type, JSON cut short, bytes that are not UTF-8 and a body over the limit,
    sent to every operation that takes a body, on what exists (so only the body is wrong)."""
    auth = {"Authorization": f"Bearer {world.full_key}"}
    huge = b" " * (8 * 1024 * 1024 + 64 * 1024 + 1)  # past every limit, a bundle's included
    before = table_counts(database_url)
    for method, template, operation in operations_with_a_body():
        path, taken = filled(template, world.ids), list(operation["requestBody"]["content"])
        takes_json = "application/json" in taken
        sent = {"type": ("text/plain", b"hello", 415, {"unsupported_media_type"}),
                "large": (taken[0], huge, 413, {"request_too_large"})}
        if takes_json:
            sent["json"] = ("application/json", b'{"exercise": ', 400, {"malformed_json"})
            sent["utf8"] = ("application/json", b'{"exercise": "\xff"}', 400, {"body_not_utf8"})
        for what, (content_type, data, status, codes) in sent.items():
            response = client.open(path, method=method, headers={**auth, "Content-Type": content_type}, data=data)
            assert response.status_code == status, (method, template, what, response.get_data(as_text=True)[:300])
            assert error_of(response)["code"] in codes, (method, template, what)
    assert table_counts(database_url) == before


@sqlite
def test_a_path_that_is_no_operations_is_a_json_404_the_document_describes(client):
    for path in ("/api/v1/no-such-thing", "/api/v1/courses/not-a-number", "/api/v1/webhooks/x"):
        response = client.get(path) if "webhooks" not in path else client.delete(path)
        assert response.status_code == 404 and error_of(response)["code"] == "not_found"
    assert "NotFound" in document()["components"]["responses"]


@sqlite
def test_a_method_a_path_does_not_take_is_a_json_405_with_allow(client):
    response = client.delete("/api/v1/submissions")
    assert response.status_code == 405 and error_of(response)["code"] == "method_not_allowed"
    assert "POST" in response.headers["Allow"]
    assert "MethodNotAllowed" in document()["components"]["responses"]


@sqlite
def test_a_rate_limited_request_is_a_json_429_that_names_the_limit(app, client, basics, make_key):  # noqa: F811
    app.config["SUBMISSION_RATE_LIMIT"] = "1 per minute"
    auth = {"Authorization": f"Bearer {make_key('submissions:write')}"}
    body = {"exercise": "autograd-basics", "source": "def grad_2xtx(x):\n    return 2 * x\n", "user": "ada"}
    assert client.post("/api/v1/submissions", json=body, headers=auth).status_code == 202
    limited = client.post("/api/v1/submissions", json=body, headers=auth)
    assert limited.status_code == 429 and int(limited.headers["Retry-After"]) > 0
    error = error_of(limited)
    # Not "too many submissions": bundles (POST /exercises) are limited the same way.
    assert error["code"] == "rate_limited" and error["message"].startswith("too many requests: at most 1 per 1 minute")


def test_every_operation_lists_the_refusals_that_come_before_its_view():
    doc = document()
    for path, item in doc["paths"].items():
        for method, operation in item.items():
            responses = operation["responses"]
            assert "500" in responses, (method, path)
            if operation.get("x-required-scope"):
                assert {"401", "403"} <= set(responses), (method, path)
            if "requestBody" in operation:
                assert {"400", "413", "415"} <= set(responses), (method, path)
    for name in ("MalformedBody", "TooLarge", "UnsupportedMediaType", "NotFound", "MethodNotAllowed"):
        schema = doc["components"]["responses"][name]["content"]["application/json"]["schema"]
        assert schema == {"$ref": "#/components/schemas/Error"}


# ------------------------------------------------------------------ what the fuzzing found

@sqlite
def test_the_times_of_an_exercises_versions_carry_their_zone(client, basics, make_key):  # noqa: F811
    auth = {"Authorization": f"Bearer {make_key('exercises:read')}"}
    versions = client.get("/api/v1/exercises/autograd-basics/versions", headers=auth).get_json()["versions"]
    assert versions[0]["checked_at"].endswith("+00:00")  # RFC 3339, as `format: date-time` promises


@sqlite
def test_the_documents_validator_holds_formats(client, basics, make_key):  # noqa: F811
    """A date-time without its zone passed the validator once, since it checked no formats."""
    auth = {"Authorization": f"Bearer {make_key('exercises:read')}"}
    response = client.get("/api/v1/exercises/autograd-basics/versions", headers=auth)
    response.set_data(response.get_data(as_text=True).replace("+00:00", ""))
    with pytest.raises(Drift, match="date-time"):
        hold_to_document("GET", "/api/v1/exercises/autograd-basics/versions", response)


@sqlite
def test_a_slug_or_run_id_the_document_does_not_allow_is_not_found(client, basics, make_key):  # noqa: F811
    auth = {"Authorization": f"Bearer {make_key('exercises:read', 'submissions:read')}"}
    assert_error(client.get("/api/v1/exercises/Not_A_Slug", headers=auth), 404, "exercise_not_found")
    assert_error(client.get("/api/v1/practice-runs/nope", headers=auth), 404, "practice_run_not_found")
    parameters = document()["paths"]["/exercises/{slug}"]["get"]["parameters"]
    assert parameters[0]["schema"]["pattern"] == "^[a-z0-9]+(-[a-z0-9]+)*$"


# ------------------------------------------------------------------ a client made from the document

@sqlite
def test_a_client_made_from_the_document_alone_submits_follows_and_reads_a_submission(client, basics, make_key,  # noqa: F811
                                                                                     database_url, redis):
    doc = client.get("/api/v1/openapi.json").get_json()  # all the client is given, besides a key

    def send(method, url, headers, data):
        return client.open(url, method=method, headers=headers, data=data)

    api = Client(doc, send, check=lambda method, url, response: hold_to_document(method, urlsplit(url).path,
                                                                                     response),
                 headers={"Authorization": f"Bearer {make_key('submissions:read', 'submissions:write')}"})
    body = api.example("createSubmission")
    body["user"] = "ada"  # adjusted: one of our students
    accepted = api.call("createSubmission", body=body)
    assert accepted.status == 202 and accepted.body["status"] == "queued"
    assert redis.llen("cpu") == 1  # queued for a worker

    followed = api.follow(accepted, "getSubmission")
    assert followed.status == 200
    assert (followed.body["id"], followed.body["status"], followed.body["user"]) == (accepted.body["id"], "queued",
                                                                                   "ada")

    with db.transaction(database_url) as session:  # as a worker leaves it
        row = session.get(Submission, accepted.body["id"])
        row.status, row.score, row.max_score = SubmissionStatus.GRADED, 6.0, 6.0
        row.report = {"status": "graded", "score": 6.0, "max_score": 6.0, "tests": []}
    read = api.follow(accepted, "getSubmission")
    assert (read.body["status"], read.body["score"], read.body["max_score"]) == ("graded", 6.0, 6.0)
    assert read.body["report"]["score"] == 6.0


def test_every_operation_has_an_id_and_every_json_body_an_example_or_a_schema_to_build_from():
    for path, item in document()["paths"].items():
        for method, operation in item.items():
            assert operation.get("operationId"), (method, path)
            media = operation.get("requestBody", {}).get("content", {}).get("application/json")
            if media is not None:
                assert "$ref" in media["schema"] or media["schema"].get("type"), (method, path)
    assert Client(document(), send=None).example("createSubmission")["exercise"] == "autograd-basics"
