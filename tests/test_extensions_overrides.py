"""Extensions and scores set by hand, listed, changed and revoked: on the assignment's page
for its staff and through /api/v1, on a real database (SQLite and PostgreSQL) and a real
Redis. A revoke takes the student back to the assignment's own rules (a submission counted
on time under an extension counts late again; the graded work counts instead of the score
set by hand) and tells the integrations as a grant does. The service's clock is moved,
not a library's."""

from __future__ import annotations

import base64
import json
import re
from datetime import datetime

import pytest

from grader import clock, courses, db
from grader.accounts import users
from grader.courses.models import Assignment
from grader.submissions.models import Submission
from tests.forms import sign_in, token
from tests.mailbox import queued_mail
from tests.test_api import assert_error, make_key  # noqa: F401  (fixtures)
from tests.test_api_courses import DAY, DUE, HOUR, SCOPES, course, graded, key, submit  # noqa: F401  (fixtures)
from tests.test_web import GOOD, ada, site  # noqa: F401  (fixtures)


def standing_changes(redis) -> list[list]:
    """The standing-changed tasks waiting on the workers' queue (their arguments), taken off it."""
    found, kept = [], []
    for raw in redis.lrange("cpu", 0, -1):
        message = json.loads(raw)
        if message["headers"]["task"] == "grader.standing_changed":
            found.append(json.loads(base64.b64decode(message["body"]))[0])
        else:
            kept.append(raw)
    redis.delete("cpu")
    for raw in reversed(kept):
        redis.lpush("cpu", raw)
    return found


def scores(client, key, course_id) -> dict:
    book = client.get(f"/api/v1/courses/{course_id}/gradebook", headers=key).get_json()
    return {s["student"]: s["scores"][0] for s in book["students"]}


# ------------------------------------------------------------------ the API

def test_extensions_are_listed_changed_and_revoked_through_the_api(client, key, course, redis, database_url):
    _, assignment = course
    url = f"/api/v1/assignments/{assignment}/extensions"
    assert client.get(url, headers=key).get_json() == {"assignment": assignment, "extensions": []}
    with clock.travel(DUE - DAY):
        assert client.post(url, headers=key, json={"user": "ada", "due_at": "2026-12-11T23:59+09:00",
                                                   "reason": "ill"}).status_code == 201
    [listed] = client.get(url, headers=key).get_json()["extensions"]
    assert (listed["user"], listed["due_at"], listed["due_at_shown"], listed["extra_attempts"], listed["reason"]) == (
        "ada", "2026-12-11T14:59:00+00:00", "2026-12-11 23:59 KST (Asia/Seoul)", 0, "ill")
    assert listed["granted_by"].startswith("API key ")
    assert datetime.fromisoformat(listed["granted_at"]) == DUE - DAY
    ada_id = listed["user_id"]

    with clock.travel(DUE - HOUR):  # granting again changes it
        assert client.post(url, headers=key, json={"user": "ada", "extra_attempts": 2,
                                                   "reason": "still ill"}).status_code == 201
    [changed] = client.get(url, headers=key).get_json()["extensions"]
    assert (changed["user_id"], changed["due_at"], changed["extra_attempts"], changed["reason"]) == (
        ada_id, None, 2, "still ill")
    assert datetime.fromisoformat(changed["granted_at"]) == DUE - HOUR
    standing_changes(redis)

    revoked = client.delete(f"{url}/{ada_id}", headers=key)
    assert revoked.status_code == 204 and revoked.get_data() == b""
    assert client.get(url, headers=key).get_json()["extensions"] == []
    with db.transaction(database_url) as s:  # kept in the assignment's history, with who took it back
        [(gone, student)] = courses.list_revoked(s, s.get(Assignment, assignment))
        assert (student.id, gone.kind, gone.extra_attempts, gone.reason) == (ada_id, "extension", 2, "still ill")
        assert gone.granted_by == changed["granted_by"] and gone.revoked_by.startswith("API key ")
    [(announced_assignment, announced_user, _at)] = standing_changes(redis)  # as after a grant
    assert (announced_assignment, announced_user) == (assignment, ada_id)
    assert_error(client.delete(f"{url}/{ada_id}", headers=key), 404, "extension_not_found")
    assert_error(client.delete(f"{url}/{10**12}", headers=key), 404, "extension_not_found")
    assert standing_changes(redis) == []  # nothing revoked, nothing told


def test_scores_set_by_hand_are_listed_changed_and_revoked_through_the_api(client, key, course, redis,
                                                                          database_url):
    course_id, assignment = course
    graded(database_url, submit(client, key, assignment, "bo", DUE - DAY).get_json()["id"], 3)
    url = f"/api/v1/assignments/{assignment}/overrides"
    with clock.travel(DUE):
        client.post(url, headers=key, json={"user": "bo", "score": 5, "reason": "regraded by hand"})
    with clock.travel(DUE + HOUR):
        client.post(url, headers=key, json={"user": "bo", "score": 5.5, "reason": "a second look"})
    [listed] = client.get(url, headers=key).get_json()["overrides"]
    assert (listed["user"], listed["score"], listed["reason"]) == ("bo", 5.5, "a second look")
    assert listed["granted_by"].startswith("API key ")
    assert datetime.fromisoformat(listed["granted_at"]) == DUE + HOUR
    assert (scores(client, key, course_id)["bo"]["score"], scores(client, key, course_id)["bo"]["counted"]) == (
        5.5, "override")
    standing_changes(redis)

    assert client.delete(f"{url}/{listed['user_id']}", headers=key).status_code == 204
    assert client.get(url, headers=key).get_json()["overrides"] == []
    assert scores(client, key, course_id)["bo"]["score"] == 3  # the graded work counts again
    assert [args[:2] for args in standing_changes(redis)] == [[assignment, listed["user_id"]]]
    assert_error(client.delete(f"{url}/{listed['user_id']}", headers=key), 404, "override_not_found")


def test_revoking_an_extension_counts_a_late_submission_late_again(client, key, course, redis, database_url):
    """Due 23:59 in Seoul, 20% off per begun day late. Ada's extension to the next day makes
    her submission an hour after the due date count in full; taken back, it is late again."""
    course_id, assignment = course
    client.post(f"/api/v1/assignments/{assignment}/extensions", headers=key,
                json={"user": "ada", "due_at": "2026-12-11T23:59+09:00", "reason": "ill"})
    graded(database_url, submit(client, key, assignment, "ada", DUE + HOUR).get_json()["id"], 6)
    ada = scores(client, key, course_id)["ada"]
    assert (ada["score"], ada["late"]) == (6, False)
    [listed] = client.get(f"/api/v1/assignments/{assignment}/extensions", headers=key).get_json()["extensions"]
    assert client.delete(f"/api/v1/assignments/{assignment}/extensions/{listed['user_id']}",
                         headers=key).status_code == 204
    ada = scores(client, key, course_id)["ada"]
    assert (ada["score"], ada["late"], ada["extension"]) == (4.8, True, None)


@pytest.mark.parametrize("method, path, scope", [
    ("GET", "/api/v1/assignments/1/extensions", "grades:read"),
    ("GET", "/api/v1/assignments/1/overrides", "grades:read"),
    ("DELETE", "/api/v1/assignments/1/extensions/1", "grades:write"),
    ("DELETE", "/api/v1/assignments/1/overrides/1", "grades:write"),
])
def test_listing_needs_the_grades_read_scope_and_revoking_the_write_one(client, make_key, basics, method, path,
                                                                        scope):
    others = [s for s in SCOPES if s != scope]
    refused = client.open(path, method=method, headers={"Authorization": f"Bearer {make_key(*others)}"})
    assert_error(refused, 403, "insufficient_scope")
    allowed = client.open(path, method=method, headers={"Authorization": f"Bearer {make_key(scope)}"})
    assert_error(allowed, 404, "assignment_not_found")


# ------------------------------------------------------------------ the assignment's page

@pytest.fixture
def page(site, database_url, redis):
    """Prof (a local instructor) made DL101 in Seoul with Ada in it, and an assignment of
    autograd-basics due 2026-12-10 23:59 there, taking late work for two days at 20% a day."""
    with db.transaction(database_url) as s:
        users.create_user(s, email="prof@example.org", password="correct horse", role="instructor", name="Prof")
    prof = site.test_client()
    assert sign_in(prof, "prof@example.org").status_code == 302
    made = prof.post("/courses", data={"title": "Deep learning", "code": "DL101", "time_zone": "Asia/Seoul",
                                       "csrf_token": token(prof, "/courses")})
    course_url = made.headers["Location"]
    prof.post(f"{course_url}/members", data={"roster_text": "email,name,role\nada@example.org,Ada,student\n",
                                             "csrf_token": token(prof, course_url)})
    made = prof.post(f"{course_url}/assignments", data={
        "exercise": "autograd-basics", "due_at": "2026-12-10T23:59", "late_until": "2026-12-12T23:59",
        "late_policy": "per_day", "late_percent": "20", "csrf_token": token(prof, course_url)})
    assert made.status_code == 303, made.get_data(as_text=True)
    queued_mail(redis)
    url = made.headers["Location"]
    ada_id = re.search(r'<option value="(\d+)">[^<]*ada@example.org', prof.get(url).get_data(as_text=True)).group(1)
    return prof, url, ada_id


def _post(client, url: str, path: str, **data):
    return client.post(f"{url}{path}", data={**data, "csrf_token": token(client, url)})


def _table(html: str, heading: str) -> str:
    """The part of the staff section under ``heading`` (up to the next heading), without the
    spaces between its tags."""
    start = html.index(f'id="{heading}"')
    return re.sub(r">\s+<", "><", html[start:html.index("<h3", start + 1)])


def test_staff_list_change_and_revoke_extensions_on_the_assignments_page(page, ada, database_url, redis):
    prof, url, ada_id = page
    assert "No student has an extension." in prof.get(url).get_data(as_text=True)
    with clock.travel(DUE - DAY):
        assert _post(prof, url, "/extensions", student=ada_id, due_at="2026-12-11T23:59", extra_attempts="1",
                     reason="ill").status_code == 303
    table = _table(prof.get(url).get_data(as_text=True), "extensions-heading")
    assert "ada (ada@example.org)" in table and "2026-12-11 23:59 KST (Asia/Seoul)" in table
    assert "<td>1</td><td>ill</td>" in table and "<td>prof@example.org</td>" in table
    assert "2026-12-09 23:59 KST (Asia/Seoul)" in table  # granted a day before the due date
    assert 'value="2026-12-11T23:59"' in table  # the change form starts from what is granted

    changed = _post(prof, url, "/extensions", student=ada_id, due_at="2026-12-12T12:00", extra_attempts="",
                    reason="still ill")
    assert changed.status_code == 303
    table = _table(prof.get(url).get_data(as_text=True), "extensions-heading")
    assert "2026-12-12 12:00 KST (Asia/Seoul)" in table and "still ill" in table and "<td>–</td>" in table

    submit_at = DUE + HOUR  # within the extension: counted in full
    with clock.travel(submit_at):
        sent = ada.post(f"{url}/submissions", data={"source": GOOD, "csrf_token": token(ada, url)},
                        content_type="multipart/form-data")
    assert sent.status_code == 303
    with db.transaction(database_url) as s:
        row = s.query(Submission).one()
        row.status, row.score, row.max_score = "graded", 6.0, 6.0
    with clock.travel(DUE + 2 * DAY):
        assert "6 / 6" in ada.get(url).get_data(as_text=True)
    standing_changes(redis)

    revoked = _post(prof, url, f"/extensions/{ada_id}/revoke")
    assert revoked.status_code == 303 and revoked.headers["Location"].endswith("#extensions-heading")
    assert "No student has an extension." in prof.get(url).get_data(as_text=True)
    assert [args[:2] for args in standing_changes(redis)] == [[int(url.rsplit("/", 1)[1]), int(ada_id)]]
    with clock.travel(DUE + 2 * DAY):
        mine = ada.get(url).get_data(as_text=True)
    assert "4.8 / 6" in mine and "late: 20% taken off (from 6)" in mine and "Your extension" not in mine

    again = _post(prof, url, f"/extensions/{ada_id}/revoke")
    assert again.status_code == 404
    assert "This student has no extension on this assignment (any more)." in again.get_data(as_text=True)


def test_staff_list_change_and_revoke_scores_set_by_hand_on_the_assignments_page(page, ada, redis):
    prof, url, ada_id = page
    assert "No score is set by hand." in prof.get(url).get_data(as_text=True)
    assert _post(prof, url, "/overrides", student=ada_id, score="5", reason="partial credit").status_code == 303
    table = _table(prof.get(url).get_data(as_text=True), "overrides-heading")
    assert "ada (ada@example.org)" in table and "<td>5</td><td>partial credit</td><td>prof@example.org</td>" in table
    refused = _post(prof, url, "/overrides", student=ada_id, score="7", reason="too much")
    assert refused.status_code == 422 and "the score must be a number from 0 to 6" in refused.get_data(as_text=True)
    assert _post(prof, url, "/overrides", student=ada_id, score="5.5", reason="a second look").status_code == 303
    table = _table(prof.get(url).get_data(as_text=True), "overrides-heading")
    assert "<td>5.5</td><td>a second look</td>" in table and "partial credit" not in table
    assert "5.5 / 6" in ada.get(url).get_data(as_text=True)
    standing_changes(redis)

    assert _post(prof, url, f"/overrides/{ada_id}/revoke").status_code == 303
    assert "No score is set by hand." in prof.get(url).get_data(as_text=True)
    assert "5.5" not in ada.get(url).get_data(as_text=True) and "set by hand" not in ada.get(url).get_data(as_text=True)
    assert len(standing_changes(redis)) == 1
    assert _post(prof, url, f"/overrides/{ada_id}/revoke").status_code == 404


def test_revoked_extensions_and_scores_leave_the_listings_and_are_kept_with_who_and_when(page, ada, database_url,
                                                                                         redis):
    prof, url, ada_id = page
    assert "Nothing has been revoked." in prof.get(url).get_data(as_text=True)
    with clock.travel(DUE - DAY):
        assert _post(prof, url, "/extensions", student=ada_id, due_at="2026-12-11T23:59", extra_attempts="2",
                     reason="ill").status_code == 303
        assert _post(prof, url, "/overrides", student=ada_id, score="5", reason="oral exam").status_code == 303
    with clock.travel(DUE + HOUR):  # within her extension
        sent = ada.post(f"{url}/submissions", data={"source": GOOD, "csrf_token": token(ada, url)},
                        content_type="multipart/form-data")
    assert sent.status_code == 303
    with db.transaction(database_url) as s:
        row = s.query(Submission).one()
        row.status, row.score, row.max_score = "graded", 6.0, 6.0
    with clock.travel(DUE + 2 * DAY):
        assert "5 / 6" in ada.get(url).get_data(as_text=True)  # the score set by hand counts

    with clock.travel(DUE + 2 * HOUR):
        assert _post(prof, url, f"/overrides/{ada_id}/revoke").status_code == 303
    with clock.travel(DUE + 3 * HOUR):
        assert _post(prof, url, f"/extensions/{ada_id}/revoke").status_code == 303
    html = prof.get(url).get_data(as_text=True)
    assert "No student has an extension." in html and "No score is set by hand." in html
    history = _table(html, "revoked-heading")
    extension, override = re.findall(r"<tr><td>ada \(ada@example.org\)</td>.*?</tr>", history)  # latest first
    assert ("<td>extension: due 2026-12-11 23:59 KST (Asia/Seoul); 2 extra attempts</td><td>ill</td>"
            "<td>prof@example.org</td><td>2026-12-09 23:59 KST (Asia/Seoul)</td>"
            "<td>prof@example.org</td><td>2026-12-11 02:59 KST (Asia/Seoul)</td>") in extension
    assert ("<td>score 5</td><td>oral exam</td><td>prof@example.org</td><td>2026-12-09 23:59 KST (Asia/Seoul)</td>"
            "<td>prof@example.org</td><td>2026-12-11 01:59 KST (Asia/Seoul)</td>") in override
    assert len(standing_changes(redis)) >= 2
    # Her standing is counted again without either: an hour late, 20% off.
    with clock.travel(DUE + 2 * DAY):
        mine = ada.get(url).get_data(as_text=True)
    assert "4.8 / 6" in mine and "late: 20% taken off (from 6)" in mine
    assert "Your extension" not in mine and "revoked-heading" not in mine  # the history is the staff's
    # Granted again, it is live again; the history keeps the revoked one.
    assert _post(prof, url, "/overrides", student=ada_id, score="4", reason="second look").status_code == 303
    html = prof.get(url).get_data(as_text=True)
    assert "second look" in _table(html, "overrides-heading") and "oral exam" in _table(html, "revoked-heading")
