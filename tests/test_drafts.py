"""An exercise's life: published through an upload it is a draft, seen by its author, the
administrators and the staff of the courses whose assignments use it (a course's students
reach it through those assignments alone), until its owner releases it to the catalogue.
On the pages, the API with a personal token or a service's key, and the command line;
the check's warnings of a bundle still the template and of a title another exercise has."""

from __future__ import annotations

import io
import shutil
from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import select

from grader import courses, db
from grader.accounts import keys, users
from grader.accounts.models import User
from grader.authoring.new import copy_template
from grader.authoring.warnings import warnings
from grader.catalog import find, load
from grader.catalog.models import Exercise
from grader.courses.models import Assignment
from grader.submissions.models import Submission
from tests.forms import sign_in, token
from tests.live import publish_basics, publish_draft

DRAFT = "ines-draft"
SOURCE = "def grad_2xtx(x):\n    return 4 * x\n"
DUE = (datetime.now(timezone.utc) + timedelta(days=30)).isoformat(timespec="seconds")


def bearer(key: str) -> dict:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture
def people(app, database_url):
    """autograd-basics in the catalogue; Ines (administrator) uploaded a draft; Prof and
    Other (instructors), Ada and Bob (students) with personal tokens; DL101 (Prof teaches,
    Ada studies) places the draft in an assignment; Bob is in no course."""
    publish_basics(database_url)
    with db.transaction(database_url) as s:
        made = {name: users.create_user(s, email=f"{name}@example.org", password="correct horse", role=role,
                                        name=name).id
                for name, role in (("ines", "admin"), ("prof", "instructor"), ("other", "instructor"),
                                   ("ada", "student"), ("bob", "student"))}
    publish_draft(database_url, DRAFT, uploaded_by=made["ines"])
    with db.transaction(database_url) as s:
        course = courses.create_course(s, title="Deep learning", code="DL101")
        courses.set_role(s, course.id, made["prof"], "instructor")
        courses.set_role(s, course.id, made["ada"], "student")
        assignment = courses.create_assignment(s, course, exercise=DRAFT, due_at=DUE,
                                               by=s.get(User, made["ines"]))
        tokens = {name: keys.personal(s, made[name], "laptop")[1] for name in ("ada", "bob", "prof")}
        return {"ids": made, "tokens": tokens, "assignment": assignment.id, "course": course.id}


def browser(app, name: str):
    client = app.test_client()
    assert sign_in(client, f"{name}@example.org").status_code == 302
    return client


def listed_on_page(client) -> bool:
    return f"/exercises/{DRAFT}" in client.get("/exercises").get_data(as_text=True)


def listed_in_api(client, key: str) -> list[str]:
    answer = client.get("/api/v1/exercises", headers=bearer(key))
    assert answer.status_code == 200
    return [e["slug"] for e in answer.get_json()["exercises"]]


def submit(client, slug: str = DRAFT, what: str = "submissions"):
    return client.post(f"/exercises/{slug}/{what}", data={"source": SOURCE, "csrf_token": token(client, "/exercises")},
                       content_type="multipart/form-data")


def test_a_draft_is_hidden_from_students_until_it_is_released(app, people, database_url):
    bob = browser(app, "bob")
    assert not listed_on_page(bob) and bob.get(f"/exercises/{DRAFT}").status_code == 404
    assert listed_in_api(bob, people["tokens"]["bob"]) == ["autograd-basics"]
    assert bob.get(f"/api/v1/exercises/{DRAFT}", headers=bearer(people["tokens"]["bob"])).status_code == 404

    ines = browser(app, "ines")
    page = ines.get(f"/exercises/{DRAFT}").get_data(as_text=True)
    assert "Draft" in page and "Release to the catalogue" in page
    released = ines.post(f"/exercises/{DRAFT}/release", data={"csrf_token": token(ines, f"/exercises/{DRAFT}")})
    assert released.status_code == 303
    assert "Release to the catalogue" not in ines.get(f"/exercises/{DRAFT}").get_data(as_text=True)

    assert listed_on_page(bob) and bob.get(f"/exercises/{DRAFT}").status_code == 200
    assert listed_in_api(bob, people["tokens"]["bob"]) == ["autograd-basics", DRAFT]
    shown = bob.get(f"/api/v1/exercises/{DRAFT}", headers=bearer(people["tokens"]["bob"])).get_json()
    assert shown["released"] is True and shown["statement"]["en"]
    assert submit(bob).status_code == 303

    # A new version of a released exercise stays released.
    publish_draft(database_url, DRAFT, version=2, uploaded_by=people["ids"]["ines"])
    with db.transaction(database_url) as s:
        row = s.get(Exercise, DRAFT)
        assert row.version == 2 and row.released


def test_its_author_and_a_courses_staff_see_it_and_try_it(app, people, database_url):
    for name in ("ines", "prof"):
        client = browser(app, name)
        assert listed_on_page(client) and client.get(f"/exercises/{DRAFT}").status_code == 200
        assert submit(client).status_code == 303
        assert submit(client, what="practice").status_code == 303
    prof_key = people["tokens"]["prof"]
    assert DRAFT in listed_in_api(app.test_client(), prof_key)
    through_api = app.test_client().post("/api/v1/submissions", headers=bearer(prof_key),
                                         json={"exercise": DRAFT, "source": SOURCE})
    assert through_api.status_code == 202, through_api.get_data(as_text=True)
    with db.transaction(database_url) as s:
        by = {s.get(User, row.user_id).name for row in s.scalars(select(Submission).where(
            Submission.exercise_slug == DRAFT))}
    assert by == {"ines", "prof"}
    # Prof sees it, but it is not Prof's to release; nor is it offered to place in another course's
    # assignment by an instructor who does not see it.
    assert "Release to the catalogue" not in browser(app, "prof").get(f"/exercises/{DRAFT}").get_data(as_text=True)
    other = browser(app, "other")
    assert not listed_on_page(other) and other.get(f"/exercises/{DRAFT}").status_code == 404


def test_a_student_of_a_course_where_it_is_assigned_sees_it_there_and_nowhere_else(app, people, database_url):
    ada = browser(app, "ada")
    page = ada.get(f"/assignments/{people['assignment']}")
    assert page.status_code == 200 and "Gradients of Ines" in page.get_data(as_text=True)
    sent = ada.post(f"/assignments/{people['assignment']}/submissions",
                    data={"source": SOURCE, "csrf_token": token(ada, f"/assignments/{people['assignment']}")},
                    content_type="multipart/form-data")
    assert sent.status_code == 303
    assert not listed_on_page(ada) and ada.get(f"/exercises/{DRAFT}").status_code == 404
    assert submit(ada).status_code == 404
    assert DRAFT not in listed_in_api(ada, people["tokens"]["ada"])
    by_token = ada.post("/api/v1/submissions", headers=bearer(people["tokens"]["ada"]),
                        json={"assignment": people["assignment"], "source": SOURCE})
    assert by_token.status_code == 202, by_token.get_data(as_text=True)
    bob = browser(app, "bob")
    assert bob.get(f"/assignments/{people['assignment']}").status_code in (403, 404)


def test_another_instructor_or_key_cannot_release_it(app, people, database_url):
    with db.transaction(database_url) as s:
        owner_id, owner = keys.create(s, ["exercises:read", "exercises:write", "courses:write"], name="repo")
        owner_id = owner_id.id
        stranger = keys.create(s, ["exercises:read", "exercises:write"], name="another")[1]
    publish_draft(database_url, "keys-draft", title="A key's own draft", api_key_id=owner_id)
    client = app.test_client()
    # Prof sees the administrators' draft through the course, but it is not theirs to release.
    prof = browser(app, "prof")
    assert prof.post(f"/exercises/{DRAFT}/release",
                     data={"csrf_token": token(prof, f"/exercises/{DRAFT}")}).status_code == 403
    # Another key sees no draft of another: not told apart from nothing. An administrator may
    # release it (not done here).
    refused = client.post("/api/v1/exercises/keys-draft/release", headers=bearer(stranger))
    assert refused.status_code == 404 and refused.get_json()["error"]["code"] == "exercise_not_found"
    assert "Release to the catalogue" in browser(app, "ines").get("/exercises/keys-draft").get_data(as_text=True)
    # The owner key sees the administrators' draft no more than the stranger does: it places it nowhere.
    course = client.post("/api/v1/courses", headers=bearer(owner), json={"title": "Keys", "code": "K1"}).get_json()
    placed = client.post(f"/api/v1/courses/{course['id']}/assignments", headers=bearer(owner),
                         json={"exercise": DRAFT, "due_at": DUE})
    assert placed.status_code == 422  # a key places only what it sees
    with db.transaction(database_url) as s:
        assert s.get(Exercise, "keys-draft").released is False and s.get(Exercise, DRAFT).released is False
    # The key that published it releases it; again, nothing changes.
    for _ in range(2):
        answer = client.post("/api/v1/exercises/keys-draft/release", headers=bearer(owner))
        assert answer.status_code == 200 and answer.get_json()["released"] is True
    assert "keys-draft" in listed_in_api(client, people["tokens"]["bob"])


def test_a_key_sees_its_own_drafts_and_those_its_courses_place(app, people, database_url):
    with db.transaction(database_url) as s:
        row, owner = keys.create(s, ["exercises:read", "exercises:write", "courses:write", "submissions:write"],
                                 name="repo")
        reader = keys.create(s, ["exercises:read"], name="reader")[1]
    publish_draft(database_url, "keys-draft", title="A key's own draft", api_key_id=row.id)
    client = app.test_client()
    assert "keys-draft" in listed_in_api(client, owner) and "keys-draft" not in listed_in_api(client, reader)
    assert client.get("/api/v1/exercises/keys-draft", headers=bearer(owner)).get_json()["released"] is False
    assert client.get("/api/v1/exercises/keys-draft/versions", headers=bearer(reader)).status_code == 404
    tried = client.post("/api/v1/submissions", headers=bearer(owner),
                        json={"exercise": "keys-draft", "source": SOURCE, "user": "ines"})
    assert tried.status_code == 202, tried.get_data(as_text=True)
    course = client.post("/api/v1/courses", headers=bearer(owner), json={"title": "Keys", "code": "K1"}).get_json()
    placed = client.post(f"/api/v1/courses/{course['id']}/assignments", headers=bearer(owner),
                         json={"exercise": "keys-draft", "due_at": DUE})
    assert placed.status_code == 201, placed.get_data(as_text=True)
    with db.transaction(database_url) as s:
        assert s.scalar(select(Assignment.exercise_slug).where(Assignment.course_id == course["id"])) == "keys-draft"


def test_the_catalogue_folders_exercises_are_released(database_url):
    publish_basics(database_url)
    with db.transaction(database_url) as s:
        assert s.get(Exercise, "autograd-basics").released is True


# ------------------------------------------------------------------ the check's warnings

def test_the_check_warns_of_a_bundle_still_the_template(tmp_path):
    bundle = load(copy_template(tmp_path / "fresh", "fresh-exercise"))
    assert warnings(bundle) == ["the bundle is grader new's template, unchanged: no file of it was edited; "
                                "make the exercise your own before students see it"]
    (bundle.path / "solution.py").write_text("def grad_of_cubes(x):\n    return 3 * x ** 2\n")
    toml = bundle.path / "exercise.toml"
    toml.write_text(toml.read_text().replace("The gradient of a sum of cubes", "Cubes, summed"))
    (found,) = warnings(load(bundle.path))
    assert found.startswith("still grader new's template, unchanged: ") and "starter.py" in found
    assert "solution.py" not in found and "exercise.toml" not in found


def test_the_check_warns_of_a_title_another_exercise_has(tmp_path):
    folder = tmp_path / "mine"
    shutil.copytree(find("autograd-basics").path, folder, ignore=shutil.ignore_patterns("__pycache__"))
    toml = folder / "exercise.toml"
    toml.write_text(toml.read_text().replace('slug = "autograd-basics"', 'slug = "mine"')
                    .replace("Your first gradient with backward()", "your FIRST  gradient with backward()"))
    titles = {"autograd-basics": find("autograd-basics").title, "detach": find("detach").title}
    (found,) = warnings(load(folder), titles)
    assert found == ("its title 'Your first gradient with backward()' is the title of the exercise "
                     "'autograd-basics' already; students would not tell them apart")
    assert warnings(find("autograd-basics"), titles) == []  # its own title is no clash


def test_grader_check_compares_titles_with_the_catalogue_folder(tmp_path):
    from grader.cli.check import bundle_warnings

    folder = tmp_path / "copy"
    shutil.copytree(find("detach").path, folder, ignore=shutil.ignore_patterns("__pycache__"))
    toml = folder / "exercise.toml"
    toml.write_text(toml.read_text().replace('slug = "detach"', 'slug = "copy"'))
    found = bundle_warnings([load(folder), find("autograd-basics")])
    assert list(found) == ["copy"] and "'detach' already" in found["copy"][0]
