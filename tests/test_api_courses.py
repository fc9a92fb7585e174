"""Running a course through /api/v1, on a real database (SQLite and PostgreSQL) and a
real Redis: a key's own course, members, an assignment with its rules, submissions
refused with 4xx and Retry-After, extensions, overrides, and the gradebook as JSON and
CSV read back. The service's clock is moved, not a library's."""

from __future__ import annotations

import csv
import io
import json
from datetime import datetime, timedelta, timezone

import pytest

from werkzeug.http import parse_options_header

from grader import clock, db
from grader.api.openapi import document
from grader.submissions.models import Submission, SubmissionStatus
from tests.test_api import GOOD_SOURCE, assert_error, make_key  # noqa: F401  (fixtures)

DUE = datetime(2026, 12, 10, 14, 59, tzinfo=timezone.utc)  # 23:59 in Seoul
HOUR, DAY = timedelta(hours=1), timedelta(days=1)
SCOPES = ("courses:read", "courses:write", "grades:read", "grades:write", "submissions:write", "submissions:read")


@pytest.fixture
def key(make_key):
    return {"Authorization": f"Bearer {make_key(*SCOPES)}"}


@pytest.fixture
def course(client, key, basics):
    made = client.post("/api/v1/courses", json={"title": "Deep learning", "code": "DL101",
                                                "time_zone": "Asia/Seoul"}, headers=key)
    assert made.status_code == 201, made.get_json()
    course_id = made.get_json()["id"]
    members = client.put(f"/api/v1/courses/{course_id}/members", headers={**key, "Content-Type": "text/csv"},
                         data="user,name,role\nada,Ada,student\nbo,Bo,student\n")
    assert members.get_json()["added"] == ["ada", "bo"]
    assignment = client.post(f"/api/v1/courses/{course_id}/assignments", headers=key, json={
        "exercise": "autograd-basics", "due_at": "2026-12-10T23:59+09:00", "late_until": "2026-12-12T23:59+09:00",
        "late_policy": "per_day", "late_percent": 20, "attempts": 3, "cooldown_minutes": 5})
    assert assignment.status_code == 201, assignment.get_json()
    body = assignment.get_json()
    assert body["due_at"] == "2026-12-10 23:59 KST (Asia/Seoul)" and body["version"] == 1
    return course_id, body["id"]


def submit(client, key, assignment, user="ada", at=DUE - HOUR):
    with clock.travel(at):
        return client.post("/api/v1/submissions", headers=key,
                           json={"assignment": assignment, "source": GOOD_SOURCE, "user": user})


def graded(database_url, submission_id, score):
    with db.transaction(database_url) as s:
        row = s.get(Submission, submission_id)
        row.status, row.score, row.max_score = SubmissionStatus.GRADED, score, 6.0


def test_a_submission_to_an_assignment_is_taken_under_its_rules(client, key, course, redis, database_url):
    _, assignment = course
    first = submit(client, key, assignment)
    assert first.status_code == 202
    with db.transaction(database_url) as s:
        row = s.get(Submission, first.get_json()["id"])
        assert (row.assignment_id, row.exercise_version) == (assignment, 1)
    pause = submit(client, key, assignment, at=DUE - HOUR + timedelta(minutes=2))
    assert_error(pause, 429, "cooling_down")
    assert 170 <= int(pause.headers["Retry-After"]) <= 181 and "it reopens at" in pause.get_json()["error"]["message"]
    assert_error(submit(client, key, assignment, at=DUE + 3 * DAY), 409, "closed")
    assert_error(submit(client, key, assignment, user="stranger"), 422, "not_a_member")
    assert_error(submit(client, key, 10**6), 404, "assignment_not_found")
    assert client.get(f"/api/v1/submissions/{first.get_json()['id']}", headers=key).get_json()["assignment"] == assignment


def test_another_keys_course_and_assignment_are_not_found(client, key, course, make_key, redis):
    course_id, assignment = course
    other = {"Authorization": f"Bearer {make_key(*SCOPES)}"}
    assert_error(client.get(f"/api/v1/courses/{course_id}", headers=other), 404, "course_not_found")
    assert_error(client.get(f"/api/v1/courses/{course_id}/gradebook", headers=other), 404, "course_not_found")
    assert_error(submit(client, other, assignment), 404, "assignment_not_found")
    assert_error(client.post(f"/api/v1/assignments/{assignment}/overrides", headers=other,
                             json={"user": "ada", "score": 6, "reason": "x"}), 404, "assignment_not_found")


def test_the_gradebook_counts_late_penalties_extensions_and_overrides(client, key, course, redis, database_url):
    course_id, assignment = course
    graded(database_url, submit(client, key, assignment, "ada", DUE + HOUR).get_json()["id"], 6)  # a day late: 4.8
    graded(database_url, submit(client, key, assignment, "bo", DUE - DAY).get_json()["id"], 3)
    extension = client.post(f"/api/v1/assignments/{assignment}/extensions", headers=key,
                            json={"user": "ada", "due_at": "2026-12-11T23:59+09:00", "reason": "ill"})
    assert extension.status_code == 201 and extension.get_json()["due_at"] == "2026-12-11 23:59 KST (Asia/Seoul)"
    override = client.post(f"/api/v1/assignments/{assignment}/overrides", headers=key,
                           json={"user": "bo", "score": 5, "reason": "regraded by hand"})
    assert override.status_code == 201 and override.get_json()["set_by"].startswith("API key ")
    book = client.get(f"/api/v1/courses/{course_id}/gradebook", headers=key).get_json()
    scores = {s["student"]: s["scores"][0] for s in book["students"]}
    assert (scores["ada"]["score"], scores["ada"]["late"], scores["ada"]["extension"]["reason"]) == (6, False, "ill")
    assert (scores["bo"]["score"], scores["bo"]["counted"], scores["bo"]["override"]["reason"]) == (
        5, "override", "regraded by hand")
    response = client.get(f"/api/v1/courses/{course_id}/gradebook?format=csv", headers=key)
    assert response.mimetype == "text/csv" and "DL101" in response.headers["Content-Disposition"]
    rows = {r["student"]: r for r in csv.DictReader(io.StringIO(response.get_data(as_text=True)))}
    assert rows["ada"]["total"] == "6" and rows["bo"]["total"] == "5"
    assert "set by hand by API key" in rows["bo"]["Your first gradient with backward() (note)"]
    per = client.get(f"/api/v1/courses/{course_id}/gradebook?format=csv&per=submission", headers=key)
    assert len(list(csv.DictReader(io.StringIO(per.get_data(as_text=True))))) == 2


@pytest.mark.parametrize("path, body, code", [
    ("/api/v1/courses", {"title": "T", "code": "C", "time_zone": "Mars/Olympus"}, "invalid_course"),
    ("/api/v1/courses", {"title": "T"}, "missing_field"),
    ("{course}/assignments", {"exercise": "autograd-basics", "due_at": "2026-12-10T23:59"}, "invalid_assignment"),
    ("{course}/assignments", {"exercise": "autograd-basics", "due_at": "2026-12-10T23:59+09:00", "attempts": 0},
     "invalid_assignment"),
    ("{course}/assignments", {"exercise": "nope", "due_at": "2026-12-10T23:59+09:00"}, "unknown_exercise"),
    ("{course}/assignments", {"exercise": "autograd-basics", "due": "x"}, "unknown_field"),
])
def test_a_bad_course_or_assignment_is_refused_with_the_reason(client, key, course, path, body, code):
    course_id, _ = course
    response = client.post(path.replace("{course}", f"/api/v1/courses/{course_id}"), json=body, headers=key)
    assert_error(response, 422, code)


def test_a_course_code_another_course_has_is_refused_whatever_its_case(client, key, course, make_key):
    other_key = {"Authorization": f"Bearer {make_key(*SCOPES)}"}
    for headers in (key, other_key):  # codes are the site's, not a key's
        taken = client.post("/api/v1/courses", json={"title": "Again", "code": "dl101"}, headers=headers)
        assert_error(taken, 409, "course_code_taken")
        assert "dl101" in taken.get_json()["error"]["message"]
    documented = document()["paths"]["/courses"]["post"]["responses"]["409"]["description"]
    assert "`course_code_taken`" in documented


def test_a_course_with_a_korean_code_exports_its_gradebook_under_that_name(client, key, basics):
    made = client.post("/api/v1/courses", json={"title": "딥러닝", "code": "딥러닝101"}, headers=key)
    assert made.status_code == 201, made.get_json()
    for per in ("student", "submission"):
        response = client.get(f"/api/v1/courses/{made.get_json()['id']}/gradebook?format=csv&per={per}",
                              headers=key)
        assert response.status_code == 200 and response.mimetype == "text/csv"
        disposition = response.headers["Content-Disposition"]
        assert disposition.isascii() and 'filename="101-' in disposition  # for clients that read only that
        assert parse_options_header(disposition) == ("attachment", {"filename": f"딥러닝101-{per}s.csv"})


def test_a_roster_with_one_bad_line_adds_nobody(client, key, course):
    course_id, _ = course
    response = client.put(f"/api/v1/courses/{course_id}/members", headers=key, json={"members": [
        {"user": "cy", "role": "student"}, {"user": "dee", "role": "dean"}]})
    assert_error(response, 422, "invalid_roster")
    assert "line 3" in response.get_json()["error"]["message"]
    members = client.put(f"/api/v1/courses/{course_id}/members", headers=key, json={"members": []})
    assert_error(members, 422, "invalid_roster")
    course_json = client.get(f"/api/v1/courses/{course_id}", headers=key).get_json()
    assert course_json["code"] == "DL101" and len(course_json["assignments"]) == 1


@pytest.mark.parametrize("method, path, scope", [
    ("POST", "/api/v1/courses", "courses:write"),
    ("GET", "/api/v1/courses/1", "courses:read"),
    ("PUT", "/api/v1/courses/1/members", "courses:write"),
    ("POST", "/api/v1/courses/1/assignments", "courses:write"),
    ("GET", "/api/v1/courses/1/gradebook", "grades:read"),
    ("POST", "/api/v1/assignments/1/extensions", "grades:write"),
    ("POST", "/api/v1/assignments/1/overrides", "grades:write"),
    ("POST", "/api/v1/assignments/1/regrades", "grades:write"),
    ("GET", "/api/v1/regrades/1", "grades:read"),
    ("POST", "/api/v1/regrades/1/publish", "grades:write"),
    ("POST", "/api/v1/regrades/1/discard", "grades:write"),
])
def test_each_course_endpoint_needs_its_scope(client, make_key, basics, method, path, scope):
    others = [s for s in SCOPES if s != scope]
    refused = client.open(path, method=method, json={}, headers={"Authorization": f"Bearer {make_key(*others)}"})
    assert_error(refused, 403, "insufficient_scope")
    allowed = client.open(path, method=method, json={}, headers={"Authorization": f"Bearer {make_key(scope)}"})
    assert allowed.status_code in (404, 422), allowed.get_json()


def test_a_regrade_is_started_followed_and_discarded_through_the_api(client, key, course, redis, database_url,
                                                                     make_key):
    _, assignment = course
    assert_error(client.post(f"/api/v1/assignments/{assignment}/regrades", headers=key), 422, "invalid_regrade")
    graded(database_url, submit(client, key, assignment, "ada", DUE - DAY).get_json()["id"], 6)
    started = client.post(f"/api/v1/assignments/{assignment}/regrades", headers=key)
    assert started.status_code == 202, started.get_json()
    body = started.get_json()
    assert (body["status"], body["progress"], body["version"]) == ("running", {"done": 0, "total": 1}, 1)
    assert [json.loads(m)["headers"]["task"] for m in redis.lrange("cpu-regrade", 0, -1)] == ["grader.regrade_one"]
    assert_error(client.post(f"/api/v1/assignments/{assignment}/regrades", headers=key), 422, "invalid_regrade")
    assert_error(client.post(f"/api/v1/regrades/{body['id']}/publish", headers=key), 422, "invalid_regrade")
    other = {"Authorization": f"Bearer {make_key(*SCOPES)}"}
    assert_error(client.get(f"/api/v1/regrades/{body['id']}", headers=other), 404, "regrade_not_found")
    discarded = client.post(f"/api/v1/regrades/{body['id']}/discard", headers=key)
    assert discarded.status_code == 200 and discarded.get_json()["status"] == "discarded"
    assert client.get(body["url"], headers=key).get_json()["status"] == "discarded"


def test_every_assignment_of_an_exercise_is_regraded_at_once(client, key, course, redis, database_url, make_key):
    """A test of the exercise was fixed: each of the key's assignments of it gets its own
    regrade; one with nothing graded is skipped with the reason; another key's are untouched."""
    course_id, first = course
    second = client.post(f"/api/v1/courses/{course_id}/assignments", headers=key, json={
        "exercise": "autograd-basics", "due_at": "2026-12-20T23:59+09:00", "title": "Again"}).get_json()["id"]
    idle = client.post(f"/api/v1/courses/{course_id}/assignments", headers=key, json={
        "exercise": "autograd-basics", "due_at": "2026-12-24T23:59+09:00", "title": "Nobody yet"}).get_json()["id"]
    graded(database_url, submit(client, key, first, "ada", DUE - DAY).get_json()["id"], 6)
    graded(database_url, submit(client, key, second, "bo", DUE - DAY).get_json()["id"], 4)

    started = client.post("/api/v1/exercises/autograd-basics/regrades", headers=key)
    assert started.status_code == 202, started.get_json()
    body = started.get_json()
    assert [(r["assignment"], r["progress"]["total"]) for r in body["regrades"]] == [(first, 1), (second, 1)]
    assert body["skipped"] == [{"assignment": idle, "reason": "this assignment has no graded submission to regrade"}]
    assert redis.llen("cpu-regrade") == 2
    # Again at once: both are running, so every assignment is skipped and nothing more is sent.
    again = client.post("/api/v1/exercises/autograd-basics/regrades", headers=key)
    assert again.status_code == 200 and again.get_json()["regrades"] == [] and redis.llen("cpu-regrade") == 2
    other = {"Authorization": f"Bearer {make_key(*SCOPES)}"}
    assert_error(client.post("/api/v1/exercises/autograd-basics/regrades", headers=other), 404, "exercise_not_found")


def test_grader_regrade_takes_an_exercise(client, key, course, redis, database_url, monkeypatch):
    from click.testing import CliRunner

    from grader.cli import main

    monkeypatch.setenv("GRADER_DATABASE_URL", database_url)
    _, assignment = course
    graded(database_url, submit(client, key, assignment, "ada", DUE - DAY).get_json()["id"], 6)
    ran = CliRunner().invoke(main, ["regrade", "--exercise", "autograd-basics"])
    assert ran.exit_code == 0, ran.output
    assert f"of assignment {assignment}: 1 submissions sent" in ran.output and redis.llen("cpu-regrade") == 1
    both = CliRunner().invoke(main, ["regrade", "--exercise", "autograd-basics", "--assignment", str(assignment)])
    assert both.exit_code == 2 and "one of them" in both.output


def test_a_syntax_error_spends_no_attempt_and_starts_no_cool_down(client, key, course, redis, database_url):
    course_id, _ = course
    made = client.post(f"/api/v1/courses/{course_id}/assignments", headers=key, json={
        "exercise": "autograd-basics", "due_at": "2026-12-10T23:59+09:00", "attempts": 1, "cooldown_minutes": 30})
    assignment = made.get_json()["id"]
    with clock.travel(DUE - HOUR):
        broken = client.post("/api/v1/submissions", headers=key, json={
            "assignment": assignment, "source": "def grad_2xtx(x):\n    return x +\n", "user": "ada"})
        assert_error(broken, 422, "syntax_error")
        assert broken.get_json()["error"]["line"] == 2
        with db.transaction(database_url) as s:
            assert s.query(Submission).count() == 0
        assert submit(client, key, assignment, at=DUE - HOUR).status_code == 202  # at once: its one attempt
    assert_error(submit(client, key, assignment, at=DUE - HOUR / 4), 409, "no_attempts_left")
