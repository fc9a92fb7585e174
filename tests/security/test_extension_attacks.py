"""Attacks on the extensions and scores set by hand of a course, through the pages and the
API alone: staff of another course, a student of the course itself and a student elsewhere
try to read, change or revoke them; a forged form tries to revoke them; an API key of
another tenant, and a personal token of the course's own instructor, try the API. Every
refused attempt leaves what was granted as it was.

Course A (DL101): Ada and Bob students, Tess its TA, Ivy its instructor; Ada has an
extension and a score set by hand on its assignment. Course B (ML201): Carl a student,
Tom its TA, Olga its instructor."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from sqlalchemy import select

from grader import courses, db
from grader.accounts import keys, users
from grader.accounts.models import User
from grader.courses.models import Assignment, Extension, ScoreOverride
from tests.forms import PASSWORD, csrf_in, sign_in
from tests.test_api import make_key  # noqa: F401  (a fixture: make_key(*scopes) -> a key)
from tests.test_api_courses import SCOPES
from tests.test_web import site  # noqa: F401  (a fixture)

DUE = datetime(2099, 1, 1, tzinfo=timezone.utc)
EMAILS = {"ada": "ada@example.org", "bob": "bob@example.org", "carl": "carl@example.org", "tess": "tess@uni.edu",
          "ivy": "ivy@uni.edu", "tom": "tom@uni.edu", "olga": "olga@uni.edu"}


def bearer(key: str) -> dict:
    return {"Authorization": f"Bearer {key}"}


def granted(database_url: str, assignment_id: int) -> tuple[list, list]:
    """What stands on the assignment: (student, new due date, extra attempts, reason, by) of
    each extension and (student, score, reason, by) of each score set by hand."""
    with db.transaction(database_url) as s:
        extensions = [(e.user_id, e.due_at, e.extra_attempts, e.reason, e.granted_by) for e in s.scalars(
            select(Extension).where(Extension.assignment_id == assignment_id))]
        overrides = [(o.user_id, o.score, o.reason, o.set_by) for o in s.scalars(
            select(ScoreOverride).where(ScoreOverride.assignment_id == assignment_id))]
    return extensions, overrides


@pytest.fixture
def world(site, database_url):
    with db.transaction(database_url) as s:
        for name in ("carl", "tess", "ivy", "tom", "olga"):
            users.create_user(s, email=EMAILS[name], password=PASSWORD, name=name,
                              role="student" if name == "carl" else "instructor")
        s.flush()
        user = {name: s.scalar(select(User).where(User.email == email)) for name, email in EMAILS.items()}
        a = courses.create_course(s, title="Deep learning", code="DL101", time_zone="Asia/Seoul")
        for name, role in (("ada", "student"), ("bob", "student"), ("tess", "ta"), ("ivy", "instructor")):
            courses.set_role(s, a.id, user[name].id, role)
        b = courses.create_course(s, title="Machine learning", code="ML201")
        for name, role in (("carl", "student"), ("tom", "ta"), ("olga", "instructor")):
            courses.set_role(s, b.id, user[name].id, role)
        assignment = courses.create_assignment(s, a, exercise="autograd-basics", due_at=DUE.isoformat())
        courses.grant_extension(s, assignment, user["ada"], due_at="2099-01-03T00:00+00:00", extra_attempts=1,
                                reason="ill", by=EMAILS["ivy"])
        courses.set_override(s, assignment, user["ada"], score=5, reason="partial credit", by=EMAILS["ivy"])
        ivy_token = keys.create(s, keys.PERSONAL_SCOPES, name="laptop", user_id=user["ivy"].id)[1]
        ids = {"assignment": assignment.id, "b": b.id, **{name: u.id for name, u in user.items()}}
    clients = {}
    for name, email in EMAILS.items():
        clients[name] = site.test_client()
        assert sign_in(clients[name], email).status_code == 302
    return {"ids": ids, "clients": clients, "ivy_token": ivy_token, "app": site}


def _own_token(client) -> str:
    """The CSRF token of the client's own session, from a page every signed-in user sees."""
    return csrf_in(client.get("/account/tokens").get_data(as_text=True))


def test_staff_of_another_course_and_students_neither_see_nor_change_nor_revoke_them(world, database_url):
    ids = world["ids"]
    path = f"/assignments/{ids['assignment']}"
    before = granted(database_url, ids["assignment"])
    assert len(before[0]) == len(before[1]) == 1
    for viewer, refused in (("olga", 404), ("tom", 404), ("carl", 404), ("bob", 403), ("ada", 403)):
        client = world["clients"][viewer]
        page = client.get(path)
        if refused == 404:
            assert page.status_code == 404, viewer
        else:  # the course's students see the assignment, and no list of what staff set for students
            text = page.get_data(as_text=True)
            assert page.status_code == 200 and "Revoke" not in text and "Granted by" not in text, viewer
            assert 'id="extensions-heading"' not in text and 'id="overrides-heading"' not in text, viewer
            if viewer == "bob":  # a classmate learns nothing of Ada's
                assert "partial credit" not in text and "ada@example.org" not in text
        token = _own_token(client)
        for action, data in ((f"extensions/{ids['ada']}/revoke", {}), (f"overrides/{ids['ada']}/revoke", {}),
                             ("extensions", {"student": str(ids["ada"]), "extra_attempts": "9", "reason": "mine"}),
                             ("overrides", {"student": str(ids["ada"]), "score": "6", "reason": "mine"})):
            answer = client.post(f"{path}/{action}", data={**data, "csrf_token": token})
            assert answer.status_code == refused, (viewer, action, answer.status_code)
    assert granted(database_url, ids["assignment"]) == before

    # The course's TA may, as a TA may grant them.
    tess = world["clients"]["tess"]
    for action in (f"extensions/{ids['ada']}/revoke", f"overrides/{ids['ada']}/revoke"):
        assert tess.post(f"{path}/{action}", data={"csrf_token": _own_token(tess)}).status_code == 303, action
    assert granted(database_url, ids["assignment"]) == ([], [])


def test_a_revoke_without_the_sessions_own_csrf_token_revokes_nothing(world, database_url):
    ids, ivy = world["ids"], world["clients"]["ivy"]
    path = f"/assignments/{ids['assignment']}"
    before = granted(database_url, ids["assignment"])
    for forged in ({}, {"csrf_token": "forged"}, {"csrf_token": _own_token(world["clients"]["bob"])}):
        for action in (f"extensions/{ids['ada']}/revoke", f"overrides/{ids['ada']}/revoke"):
            assert ivy.post(f"{path}/{action}", data=forged).status_code == 400, (forged, action)
    assert granted(database_url, ids["assignment"]) == before
    assert ivy.get(f"/assignments/{ids['assignment']}/extensions/{ids['ada']}/revoke").status_code == 405


def test_a_revoke_for_a_student_of_another_assignment_is_not_found_and_touches_nothing(world, database_url):
    """Ivy names Ada's user id on an assignment of her own that Ada has nothing on."""
    ids, ivy = world["ids"], world["clients"]["ivy"]
    with db.transaction(database_url) as s:
        other = courses.create_assignment(s, courses.course_of(s, s.get(Assignment, ids["assignment"])),
                                          exercise="autograd-basics", due_at=DUE.isoformat(), title="Second")
        other_id = other.id
    before = granted(database_url, ids["assignment"])
    for action in ("extensions", "overrides"):
        answer = ivy.post(f"/assignments/{other_id}/{action}/{ids['ada']}/revoke",
                          data={"csrf_token": _own_token(ivy)})
        assert answer.status_code == 404, action
    assert granted(database_url, ids["assignment"]) == before


def test_an_api_key_of_another_tenant_neither_lists_nor_revokes_them(world, database_url, make_key):
    api = world["app"].test_client()
    mine, theirs = bearer(make_key(*SCOPES)), bearer(make_key(*SCOPES))
    course = api.post("/api/v1/courses", json={"title": "Mine", "code": "K1"}, headers=mine).get_json()["id"]
    api.put(f"/api/v1/courses/{course}/members", json={"members": [{"user": "ada", "role": "student"}]}, headers=mine)
    assignment = api.post(f"/api/v1/courses/{course}/assignments", headers=mine, json={
        "exercise": "autograd-basics", "due_at": DUE.isoformat()}).get_json()["id"]
    api.post(f"/api/v1/assignments/{assignment}/extensions", json={"user": "ada", "extra_attempts": 2,
                                                                   "reason": "ill"}, headers=mine)
    api.post(f"/api/v1/assignments/{assignment}/overrides", json={"user": "ada", "score": 4, "reason": "x"},
             headers=mine)
    [listed] = api.get(f"/api/v1/assignments/{assignment}/extensions", headers=mine).get_json()["extensions"]
    before = granted(database_url, assignment)

    # The other tenant's own assignment, to name the student on.
    their_course = api.post("/api/v1/courses", json={"title": "Theirs", "code": "K2"}, headers=theirs).get_json()["id"]
    their_assignment = api.post(f"/api/v1/courses/{their_course}/assignments", headers=theirs, json={
        "exercise": "autograd-basics", "due_at": DUE.isoformat()}).get_json()["id"]
    for kind in ("extensions", "overrides"):
        for method, url in (("GET", f"/api/v1/assignments/{assignment}/{kind}"),
                            ("DELETE", f"/api/v1/assignments/{assignment}/{kind}/{listed['user_id']}")):
            answer = api.open(url, method=method, headers=theirs)
            assert answer.status_code == 404 and answer.get_json()["error"]["code"] == "assignment_not_found", url
        answer = api.delete(f"/api/v1/assignments/{their_assignment}/{kind}/{listed['user_id']}", headers=theirs)
        assert answer.status_code == 404 and answer.get_json()["error"]["code"] == f"{kind[:-1]}_not_found"
        # Nor does a key reach a course of the site, nor a personal token (even its instructor's) the grades.
        site_assignment = f"/api/v1/assignments/{world['ids']['assignment']}/{kind}"
        for method, url in (("GET", site_assignment), ("DELETE", f"{site_assignment}/{world['ids']['ada']}")):
            answer = api.open(url, method=method, headers=mine)
            assert answer.status_code == 404 and answer.get_json()["error"]["code"] == "assignment_not_found"
            answer = api.open(url, method=method, headers=bearer(world["ivy_token"]))
            assert answer.status_code == 403 and answer.get_json()["error"]["code"] == "insufficient_scope"
    assert granted(database_url, assignment) == before
    assert len(granted(database_url, world["ids"]["assignment"])[0]) == 1
    reader = bearer(make_key("grades:read"))  # reading is not revoking
    assert api.delete(f"/api/v1/assignments/{assignment}/extensions/{listed['user_id']}",
                      headers=reader).status_code == 403
