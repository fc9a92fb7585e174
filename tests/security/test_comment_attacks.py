"""Attacks on comments on a submission, through the pages and the API alone: a TA of another
course, the student who made it, a classmate, an administrator who is no staff of the course,
an API key of another tenant and a key without grades:write try to comment on Ada's work or
take a comment back; a forged form tries too. Every refused attempt stores nothing and
leaves what was said as it was.

Course A (DL101): Ada and Bob students, Tess its TA. Course B (ML201): Tom its TA."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from sqlalchemy import select

from grader import courses, db
from grader.accounts import keys, users
from grader.accounts.models import User
from grader.courses.models import SubmissionComment
from tests.forms import PASSWORD, csrf_in, sign_in
from tests.test_api import make_key  # noqa: F401  (a fixture: make_key(*scopes) -> a key)
from tests.test_web import GOOD, site  # noqa: F401  (a fixture)

DUE = datetime(2099, 1, 1, tzinfo=timezone.utc)
EMAILS = {"ada": "ada@example.org", "bob": "bob@example.org", "tess": "tess@uni.edu", "tom": "tom@uni.edu",
          "ines": "ines@example.org"}


def bearer(key: str) -> dict:
    return {"Authorization": f"Bearer {key}"}


def said(database_url: str) -> list[tuple]:
    with db.transaction(database_url) as s:
        return [(c.id, c.line, c.body, c.author_id) for c in s.scalars(select(SubmissionComment)
                                                                        .order_by(SubmissionComment.id))]


@pytest.fixture
def world(site, database_url):
    with db.transaction(database_url) as s:
        for name in ("tess", "tom"):
            users.create_user(s, email=EMAILS[name], password=PASSWORD, name=name, role="instructor")
        s.flush()
        user = {name: s.scalar(select(User).where(User.email == email)) for name, email in EMAILS.items()}
        a = courses.create_course(s, title="Deep learning", code="DL101")
        for name, role in (("ada", "student"), ("bob", "student"), ("tess", "ta")):
            courses.set_role(s, a.id, user[name].id, role)
        b = courses.create_course(s, title="Machine learning", code="ML201")
        courses.set_role(s, b.id, user["tom"].id, "ta")
        assignment = courses.create_assignment(s, a, exercise="autograd-basics", due_at=DUE.isoformat())
        tokens = {name: keys.create(s, keys.PERSONAL_SCOPES, name="laptop", user_id=u.id)[1]
                  for name, u in user.items()}
        assignment_id = assignment.id
    clients = {}
    for name, email in EMAILS.items():
        clients[name] = site.test_client()
        assert sign_in(clients[name], email).status_code == 302
    ada, page = clients["ada"], f"/assignments/{assignment_id}"
    made = ada.post(f"{page}/submissions", data={"source": GOOD, "csrf_token": csrf_in(ada.get(page).text)})
    assert made.status_code == 303
    submission_id = made.headers["Location"].rsplit("/", 1)[1]
    tess, path = clients["tess"], f"/submissions/{submission_id}"
    said_ = tess.post(f"{path}/comments", data={"body": "Tess's word", "csrf_token": csrf_in(tess.get(path).text)})
    assert said_.status_code == 303
    return {"submission": submission_id, "clients": clients, "tokens": tokens, "app": site}


def _own_token(client) -> str:
    """The CSRF token of the client's own session, from a page every signed-in user sees."""
    return csrf_in(client.get("/account/tokens").get_data(as_text=True))


def test_only_staff_of_the_submissions_course_comment_on_its_page(world, database_url):
    path = f"/submissions/{world['submission']}"
    before = said(database_url)
    [(comment_id, *_rest)] = before
    # Whoever cannot see the work is told nothing exists; its student and an administrator
    # see it, and are refused: they are no staff of the course.
    for viewer, refused in (("tom", 404), ("bob", 404), ("ada", 403), ("ines", 403)):
        client = world["clients"][viewer]
        page = client.get(path)
        if refused == 403:
            assert 'id="comment-overall"' not in page.get_data(as_text=True), viewer  # no form offered
        token = _own_token(client)
        for data in ({"body": "mine"}, {"body": "mine", "line": "1"}):
            answer = client.post(f"{path}/comments", data={**data, "csrf_token": token})
            assert answer.status_code == refused, (viewer, data, answer.status_code)
        answer = client.post(f"{path}/comments/{comment_id}/delete", data={"csrf_token": token})
        assert answer.status_code == refused, (viewer, answer.status_code)
    assert said(database_url) == before


def test_a_comment_form_without_the_sessions_own_csrf_token_stores_nothing(world, database_url):
    path, tess = f"/submissions/{world['submission']}", world["clients"]["tess"]
    before = said(database_url)
    for forged in ({}, {"csrf_token": "forged"}, {"csrf_token": _own_token(world["clients"]["bob"])}):
        assert tess.post(f"{path}/comments", data={"body": "forged", **forged}).status_code == 400
        assert tess.post(f"{path}/comments/{before[0][0]}/delete", data=forged).status_code == 400
    assert said(database_url) == before
    assert tess.get(f"{path}/comments").status_code == 405


def test_a_token_of_another_courses_ta_or_of_a_student_cannot_comment(world, database_url):
    api, url = world["app"].test_client(), f"/api/v1/submissions/{world['submission']}/comments"
    before = said(database_url)
    for viewer, status, code in (("tom", 404, "submission_not_found"), ("bob", 404, "submission_not_found"),
                                 ("ada", 403, "not_course_staff"), ("ines", 403, "not_course_staff")):
        answer = api.post(url, json={"body": "mine", "line": 1}, headers=bearer(world["tokens"][viewer]))
        assert answer.status_code == status and answer.get_json()["error"]["code"] == code, viewer
        assert "Tess's word" not in answer.get_data(as_text=True)
    assert said(database_url) == before
    mine = api.post(url, json={"body": "from the TA's laptop"}, headers=bearer(world["tokens"]["tess"]))
    assert mine.status_code == 201


def test_another_tenants_key_and_a_key_without_grades_write_cannot_comment(world, database_url, make_key):
    api = world["app"].test_client()
    owner = bearer(make_key("courses:write", "grades:write", "submissions:write", "submissions:read"))
    course = api.post("/api/v1/courses", json={"title": "Mine", "code": "K1"}, headers=owner).get_json()["id"]
    api.put(f"/api/v1/courses/{course}/members", json={"members": [{"user": "ada", "role": "student"}]},
            headers=owner)
    assignment = api.post(f"/api/v1/courses/{course}/assignments", headers=owner, json={
        "exercise": "autograd-basics", "due_at": DUE.isoformat()}).get_json()["id"]
    keyed = api.post("/api/v1/submissions", headers=owner,
                     json={"assignment": assignment, "source": GOOD, "user": "ada"}).get_json()["id"]
    before = said(database_url)
    other_tenant = bearer(make_key("courses:write", "grades:write", "submissions:write", "submissions:read"))
    for submission_id in (keyed, world["submission"]):  # the key's neighbour's course, and a course of the site
        answer = api.post(f"/api/v1/submissions/{submission_id}/comments", json={"body": "x"}, headers=other_tenant)
        assert answer.status_code == 404 and answer.get_json()["error"]["code"] == "submission_not_found"
    answer = api.post(f"/api/v1/submissions/{world['submission']}/comments", json={"body": "x"}, headers=owner)
    assert answer.status_code == 404  # nor the owner a course that is not its own
    reader = bearer(make_key("courses:write", "grades:read", "submissions:write", "submissions:read"))
    answer = api.post(f"/api/v1/submissions/{keyed}/comments", json={"body": "x"}, headers=reader)
    assert answer.status_code == 403 and answer.get_json()["error"]["code"] == "insufficient_scope"
    read_only_token = None
    with db.transaction(database_url) as s:
        tess = s.scalar(select(User).where(User.email == EMAILS["tess"]))
        read_only_token = keys.create(s, ["submissions:read"], name="reader", user_id=tess.id)[1]
    answer = api.post(f"/api/v1/submissions/{world['submission']}/comments", json={"body": "x"},
                      headers=bearer(read_only_token))
    assert answer.status_code == 403 and answer.get_json()["error"]["code"] == "insufficient_scope"
    assert said(database_url) == before
