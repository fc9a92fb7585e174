"""Similar submissions, on a real database: an instructor opens an assignment's pairs of
students' final submissions, most similar first, and two of them side by side with the
shared code marked; the same pairs through /api/v1. A renamed copy with its comments
rewritten ranks first; code that came with the exercise's starter file is never shared
code; hostile source is shown as text; students, staff of other courses and keys without
grades:read are refused. Graded submissions are stored as rows: nothing is graded here."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import select

from grader import db
from grader.accounts import users
from grader.accounts.models import User
from grader import courses
from grader.courses import similarity
from grader.courses.models import Assignment
from grader.submissions.models import Submission, SubmissionStatus
from tests.test_api import assert_error, make_key  # noqa: F401  (fixtures too)
from tests.forms import sign_in
from tests.test_web import ROOT, site  # noqa: F401  (fixtures too)

DUE = datetime(2026, 12, 10, 14, 59, tzinfo=timezone.utc)
HOUR = timedelta(hours=1)
STARTER = (ROOT / "exercises" / "autograd-basics" / "starter.py").read_text(encoding="utf-8")
SIGNATURE = STARTER.split("    raise NotImplementedError")[0]  # the import, the def line and the docstring

ORIGINAL = SIGNATURE + '''\
    # work on a fresh leaf so that the caller's tensor keeps no graph
    leaf = x.detach().clone().requires_grad_(True)
    squares = torch.dot(leaf, leaf)
    total = 2 * squares
    total.backward()
    gradient = leaf.grad
    if gradient is None:
        raise RuntimeError("backward() left no gradient")
    return gradient.detach()
'''
RENAMED = SIGNATURE + '''\
    # copy x: we must not touch the input
    t = x.detach().clone().requires_grad_(True)
    s = torch.dot(t, t)
    y = 2 * s
    y.backward()  # fills t.grad
    g = t.grad
    if g is None:
        raise RuntimeError("no grad?")
    return g.detach()
'''
OWN_WAY = SIGNATURE + '''\
    y = (2 * x * x).sum()
    y.backward()
    return x.grad
'''
ANOTHER_WAY = SIGNATURE + '''\
    x.requires_grad_()
    for _ in range(1):
        out = 2 * (x @ x)
    out.backward(torch.ones(()))
    return x.grad.clone()
'''


def graded(database_url, assignment_id: int, email: str, source: str, score: float = 6.0,
           at: datetime = DUE - HOUR) -> str:
    """A graded submission, stored as the worker would leave it."""
    with db.transaction(database_url) as s:
        user = s.scalar(select(User).where(User.email == email))
        row = Submission(user_id=user.id, exercise_slug="autograd-basics", exercise_version=1,
                         assignment_id=assignment_id, source=source, status=SubmissionStatus.GRADED, score=score,
                         max_score=6.0, created_at=at, finished_at=at)
        s.add(row)
        s.flush()
        return row.id


@pytest.fixture
def assignment(site, database_url):
    """Prof teaches DL101 to Ada, Bo, Cy, Dee, Eun and Fay; one assignment of autograd-basics.
    Ines teaches another course."""
    with db.transaction(database_url) as s:
        prof = users.create_user(s, email="prof@example.org", password="correct horse", role="instructor", name="Prof")
        course = courses.create_course(s, title="Deep learning", code="DL101", instructor=prof)
        courses.import_roster(s, course, [{"email": f"{name}@example.org", "name": name.title(), "role": "student"}
                                          for name in ("ada", "bo", "cy", "dee", "eun", "fay")])
        other = users.create_user(s, email="other@example.org", password="correct horse", role="instructor",
                                  name="Other")
        courses.create_course(s, title="Vision", code="CV201", instructor=other)
        return courses.create_assignment(s, course, exercise="autograd-basics", due_at=DUE).id


def client_of(site, email: str):
    client = site.test_client()
    assert sign_in(client, email).status_code == 302
    return client


@pytest.fixture
def prof(site, assignment):
    return client_of(site, "prof@example.org")


@pytest.fixture
def classroom(assignment, database_url):
    """Bo handed in Ada's code with the names changed and the comments rewritten; Cy and Dee
    wrote their own; Eun and Fay handed in the starter as it came."""
    ids = {name: graded(database_url, assignment, f"{name}@example.org", source) for name, source in (
        ("ada", ORIGINAL), ("bo", RENAMED), ("cy", OWN_WAY), ("dee", ANOTHER_WAY), ("eun", STARTER), ("fay", STARTER))}
    return assignment, ids


def pairs_of(database_url, assignment_id: int) -> list[tuple[set[str], float]]:
    """The ranked pairs: the two students (by e-mail, without the domain) and the similarity."""
    with db.transaction(database_url) as s:
        found = similarity.similar(s, s.get(Assignment, assignment_id))
    return [({found.finals[side.key].user.email.split("@")[0] for side in (p.a, p.b)}, p.similarity)
            for p in found.pairs]


# ------------------------------------------------------------------ what ranks first

def test_a_renamed_copy_ranks_first_and_the_page_lists_it_so(classroom, prof, database_url):
    assignment_id, _ = classroom
    ranked = pairs_of(database_url, assignment_id)
    assert ranked[0][0] == {"ada", "bo"} and ranked[0][1] > 0.8
    assert all(share < 0.5 for _, share in ranked[1:]), ranked
    assert "Similar submissions" in prof.get(f"/assignments/{assignment_id}").get_data(as_text=True)
    page = prof.get(f"/assignments/{assignment_id}/similarity")
    assert page.status_code == 200
    text = page.get_data(as_text=True)
    assert "never changes a score" in text and "Students compared: 6. Pairs that share code: 1." in text
    first = re.search(r"<tbody>\s*<tr>(.*?)</tr>", text, re.S).group(1)
    assert "ada@example.org" in first and "bo@example.org" in first and f"{ranked[0][1] * 100:.0f}%" in first


def test_code_that_came_with_the_starter_is_not_shared_code(classroom, database_url):
    assignment_id, _ = classroom
    ranked = pairs_of(database_url, assignment_id)
    assert {"eun", "fay"} not in [students for students, _ in ranked]  # the same untouched starter: nothing shared
    assert {"cy", "dee"} not in [students for students, _ in ranked]  # the same signature and docstring, own bodies
    # What the starter's exclusion prevents: counted, the untouched starter is a perfect match.
    [naive] = similarity.rank("", [("eun", STARTER), ("fay", STARTER)])
    assert naive.similarity == 1.0
    [pair] = similarity.rank(STARTER, [("ada", ORIGINAL), ("bo", RENAMED)])
    assert all(region.start >= len(SIGNATURE) for side in (pair.a, pair.b) for region in side.regions)


def test_each_students_final_submission_is_compared_and_staff_are_not(assignment, database_url):
    graded(database_url, assignment, "ada@example.org", RENAMED, score=1.0, at=DUE - 3 * HOUR)  # not her best
    graded(database_url, assignment, "ada@example.org", ORIGINAL, score=6.0)
    graded(database_url, assignment, "bo@example.org", OWN_WAY)
    graded(database_url, assignment, "prof@example.org", RENAMED)  # staff trying it: not a student
    with db.transaction(database_url) as s:
        found = similarity.similar(s, s.get(Assignment, assignment))
    assert {f.user.email: f.source for f in found.finals.values()} == {"ada@example.org": ORIGINAL,
                                                                       "bo@example.org": OWN_WAY}


# ------------------------------------------------------------------ side by side

def test_side_by_side_marks_the_shared_code_and_shows_hostile_source_as_text(classroom, prof, database_url):
    assignment_id, ids = classroom
    hostile = RENAMED.replace("# copy x: we must not touch the input",
                              "# </code></pre><script>alert(1)</script> \u202e<mark>")
    with db.transaction(database_url) as s:
        s.get(Submission, ids["bo"]).score = 5.0
    bo = graded(database_url, assignment_id, "bo@example.org", hostile, at=DUE - HOUR / 2)  # his best: it counts
    page = prof.get(f"/assignments/{assignment_id}/similarity").get_data(as_text=True)
    [link] = re.findall(rf"/assignments/{assignment_id}/similarity/(?:{ids['ada']}/{bo}|{bo}/{ids['ada']})", page)
    response = prof.get(link)
    assert response.status_code == 200
    text = response.get_data(as_text=True)
    assert "<script>alert" not in text and "&lt;/code&gt;&lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "\u202e" not in text and "\\u202e" in text and "&lt;mark&gt;" in text
    assert text.count("<mark><span class=\"visually-hidden\">") == 2  # one shared run in each source
    assert "never changes a score" in text and "shared code begins" in text


def test_a_pair_outside_the_assignment_is_not_found(classroom, prof, database_url):
    assignment_id, ids = classroom
    with db.transaction(database_url) as s:
        course = courses.course_of(s, s.get(Assignment, assignment_id))
        later = courses.create_assignment(s, course, exercise="autograd-basics", due_at=DUE + 24 * HOUR).id
    elsewhere = graded(database_url, later, "cy@example.org", ORIGINAL)
    base = f"/assignments/{assignment_id}/similarity"
    assert prof.get(f"{base}/{ids['ada']}/{elsewhere}").status_code == 404
    assert prof.get(f"{base}/{ids['ada']}/{ids['ada']}").status_code == 404
    assert prof.get(f"{base}/{ids['ada']}/not-an-id").status_code == 404


# ------------------------------------------------------------------ who may see it

def test_students_and_staff_of_another_course_are_refused(classroom, site):
    assignment_id, ids = classroom
    pages = [f"/assignments/{assignment_id}/similarity",
             f"/assignments/{assignment_id}/similarity/{ids['ada']}/{ids['bo']}"]
    ada, other = client_of(site, "ada@example.org"), client_of(site, "other@example.org")
    assert [ada.get(page).status_code for page in pages] == [403, 403]
    assert [other.get(page).status_code for page in pages] == [404, 404]
    assert "Similar submissions" not in ada.get(f"/assignments/{assignment_id}").get_data(as_text=True)


def test_too_many_students_or_too_much_code_is_refused_with_the_reason(classroom, prof, monkeypatch):
    assignment_id, _ = classroom
    monkeypatch.setattr(similarity, "MAX_STUDENTS", 5)
    response = prof.get(f"/assignments/{assignment_id}/similarity")
    assert response.status_code == 422
    assert "compared for at most 5 students at a time" in response.get_data(as_text=True)
    monkeypatch.setattr(similarity, "MAX_STUDENTS", 6)
    monkeypatch.setattr(similarity, "MAX_CHARACTERS", 1000)
    response = prof.get(f"/assignments/{assignment_id}/similarity")
    assert response.status_code == 422 and "more than 1,000 characters" in response.get_data(as_text=True)


# ------------------------------------------------------------------ the API

@pytest.fixture
def api_class(client, make_key, basics, database_url):
    """A key's course of Ada, Bo and Cy: Bo handed in Ada's code renamed, Cy wrote her own."""
    key = {"Authorization": f"Bearer {make_key('courses:write', 'submissions:write', 'grades:read')}"}
    course = client.post("/api/v1/courses", json={"title": "Deep learning", "code": "DL101"}, headers=key).get_json()
    client.put(f"/api/v1/courses/{course['id']}/members", headers={**key, "Content-Type": "text/csv"},
               data="user,name,role\nada,Ada,student\nbo,Bo,student\ncy,Cy,student\n")
    assignment = client.post(f"/api/v1/courses/{course['id']}/assignments", headers=key, json={
        "exercise": "autograd-basics", "due_at": "2026-12-10T23:59+09:00"}).get_json()["id"]
    with db.transaction(database_url) as s:
        for user, source in (("ada", ORIGINAL), ("bo", RENAMED), ("cy", OWN_WAY)):
            owner = s.scalar(select(User).where(User.external_id.like(f"api:%:{user}")))
            s.add(Submission(user_id=owner.id, exercise_slug="autograd-basics", exercise_version=1,
                             assignment_id=assignment, source=source, status=SubmissionStatus.GRADED, score=6.0,
                             max_score=6.0, created_at=DUE - HOUR))
    return key, assignment


def test_the_api_ranks_the_pairs_with_their_regions(client, api_class):
    key, assignment = api_class
    response = client.get(f"/api/v1/assignments/{assignment}/similarity", headers=key)
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    first = body["pairs"][0]
    assert body["students"] == 3 and (first["a"]["student"], first["b"]["student"]) == ("ada", "bo")
    assert first["similarity"] > 0.8 and first["a"]["share"] > 0.8 and first["b"]["share"] > 0.8
    region = first["b"]["regions"][0]
    shared = RENAMED[region["start"]:region["end"]]
    assert shared.startswith("t = x.detach()") and shared.endswith("return g.detach()")  # the body, not the starter
    assert region["first_line"] == RENAMED[:region["start"]].count("\n") + 1
    assert len(client.get(f"/api/v1/assignments/{assignment}/similarity?limit=1", headers=key).get_json()["pairs"]) == 1
    assert_error(client.get(f"/api/v1/assignments/{assignment}/similarity?limit=0", headers=key), 400, "bad_request")


def test_the_api_needs_grades_read_the_keys_own_course_and_a_class_it_can_compare(client, api_class, make_key,
                                                                                   monkeypatch):
    key, assignment = api_class
    without = {"Authorization": f"Bearer {make_key('courses:read', 'courses:write', 'grades:write')}"}
    assert_error(client.get(f"/api/v1/assignments/{assignment}/similarity", headers=without), 403, "insufficient_scope")
    another = {"Authorization": f"Bearer {make_key('grades:read')}"}
    assert_error(client.get(f"/api/v1/assignments/{assignment}/similarity", headers=another), 404,
                 "assignment_not_found")
    monkeypatch.setattr(similarity, "MAX_STUDENTS", 2)
    assert_error(client.get(f"/api/v1/assignments/{assignment}/similarity", headers=key), 422, "too_many_students")
