"""Personal tokens: a student makes one on their own page and the notebook client submits
with it, as them. It must never be more than the student is on the site: their own work
only, hidden tests held as the site holds them, one rate limit, revoked when they say."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import select

from grader import db
from grader.accounts import keys
from grader.accounts.models import User
from grader import courses
from grader.submissions.models import Submission
from tests.test_api import GOOD_SOURCE, assert_error, make_key  # noqa: F401  (fixtures)
from tests.forms import sign_in, token
from tests.test_web import ada, site, store_grade  # noqa: F401  (fixtures too)
from tests.test_web import submit as submit_on_site


def make_token(client, name: str = "Colab"):
    return client.post("/account/tokens", data={"name": name, "csrf_token": token(client, "/account/tokens")})


def new_token(client, name: str = "Colab") -> str:
    page = make_token(client, name)
    assert page.status_code == 201, page.get_data(as_text=True)
    return re.search(r"<code>(gk_[0-9a-f]{12}_[A-Za-z0-9_-]{43})</code>", page.get_data(as_text=True)).group(1)


def bearer(key: str) -> dict:
    return {"Authorization": f"Bearer {key}"}


def submit_with(client, key: str, **fields):
    body = {"exercise": "autograd-basics", "source": GOOD_SOURCE, **fields}
    return client.post("/api/v1/submissions", json=body, headers=bearer(key))


def user_id(database_url, email: str) -> int:
    with db.transaction(database_url) as session:
        return session.scalar(select(User.id).where(User.email == email))


# ------------------------------------------------------------------ the page

def test_a_token_is_shown_once_with_how_to_use_it(ada):
    page = make_token(ada)
    text = page.get_data(as_text=True)
    assert page.status_code == 201 and page.headers["Cache-Control"] == "no-store"
    key = re.search(r"gk_[0-9a-f]{12}_[A-Za-z0-9_-]{43}", text).group(0)
    assert f'token="{key}"' in text and "/client/grader_client-" in text  # the notebook lines, ready to paste
    listed = ada.get("/account/tokens").get_data(as_text=True)
    assert "Colab" in listed and key.split("_")[1] in listed and key not in listed  # never again


def test_a_token_needs_a_name_and_there_is_a_limit(ada):
    assert make_token(ada, "  ").status_code == 422
    assert "Name the token" in make_token(ada, "").get_data(as_text=True)
    assert make_token(ada, "x" * 101).status_code == 422
    for n in range(keys.PERSONAL_LIMIT):
        assert make_token(ada, f"machine {n}").status_code == 201
    refused = make_token(ada, "one more")
    assert refused.status_code == 422 and "revoke one" in refused.get_data(as_text=True)


def test_a_revoked_token_no_longer_works(site, ada):
    key = new_token(ada)
    api = site.test_client()
    assert submit_with(api, key).status_code == 202
    prefix = key.split("_")[1]
    done = ada.post(f"/account/tokens/{prefix}/revoke", data={"csrf_token": token(ada, "/account/tokens")})
    assert done.status_code == 303 and "Token revoked" in ada.get(done.location).get_data(as_text=True)
    assert_error(submit_with(api, key), 401, "api_key_revoked")


def test_nobody_revokes_anothers_token(site, ada):
    prefix = new_token(ada).split("_")[1]
    bob = site.test_client()
    sign_in(bob, "bob@example.org")
    refused = bob.post(f"/account/tokens/{prefix}/revoke", data={"csrf_token": token(bob, "/account/tokens")})
    assert refused.status_code == 404 and prefix in ada.get("/account/tokens").get_data(as_text=True)
    assert ada.post(f"/account/tokens/{prefix}/revoke").status_code == 400  # no CSRF token, no revoking


def test_the_tokens_page_is_for_signed_in_users(site):
    assert site.test_client().get("/account/tokens").status_code in (302, 401)


# ------------------------------------------------------------------ what a token may do

def test_a_token_submits_as_its_owner_and_reads_only_their_work(site, ada, database_url):
    key = new_token(ada)
    api = site.test_client()
    made = submit_with(api, key)
    assert made.status_code == 202
    with db.transaction(database_url) as session:
        row = session.get(Submission, made.get_json()["id"])
        assert row.user.email == "ada@example.org"  # the site's own account, not an API user
    # Her submission on the site is hers through the token too; Bob's is not.
    on_site = submit_on_site(ada).location.rsplit("/", 1)[1]
    assert api.get(f"/api/v1/submissions/{on_site}", headers=bearer(key)).status_code == 200
    bob = site.test_client()
    sign_in(bob, "bob@example.org")
    bobs = submit_on_site(bob).location.rsplit("/", 1)[1]
    assert_error(api.get(f"/api/v1/submissions/{bobs}", headers=bearer(key)), 404, "submission_not_found")


def test_a_token_names_no_other_user_and_reaches_nothing_else(site, ada, make_key):
    key = new_token(ada)
    api = site.test_client()
    assert_error(submit_with(api, key, user="bob"), 422, "invalid_body")
    assert_error(api.post("/api/v1/webhooks", json={"url": "https://example.org/h"}, headers=bearer(key)),
                 403, "insufficient_scope")
    assert_error(api.get("/api/v1/courses/1/gradebook", headers=bearer(key)), 403, "insufficient_scope")
    assert_error(api.post("/api/v1/exercises/autograd-basics/release", headers=bearer(key)), 403,
                 "insufficient_scope")
    assert_error(api.post("/api/v1/courses", json={"title": "x", "code": "x"}, headers=bearer(key)),
                 403, "insufficient_scope")
    # A service key's submission is not the student's to read, even of the same exercise.
    service = make_key("submissions:read", "submissions:write")
    theirs = submit_with(api, service, user="ada").get_json()["id"]
    assert_error(api.get(f"/api/v1/submissions/{theirs}", headers=bearer(key)), 404, "submission_not_found")


def test_no_one_makes_a_personal_token_with_more_scopes(database_url, site):
    with db.transaction(database_url) as session, pytest.raises(ValueError):
        keys.create(session, ["submissions:write", "grades:write"], user_id=1)


def test_a_token_submits_to_an_assignment_of_its_owners_course_only(site, ada, database_url):
    with db.transaction(database_url) as session:
        student = session.scalar(select(User).where(User.email == "ada@example.org"))
        mine = courses.create_course(session, title="Mine", code="M1")
        courses.import_roster(session, mine, [{"email": student.email, "role": "student"}])
        other = courses.create_course(session, title="Other", code="O1")
        ids = [courses.create_assignment(session, c, exercise="autograd-basics", due_at="2099-01-01T00:00+00:00").id
               for c in (mine, other)]
    key = new_token(ada)
    api = site.test_client()
    made = api.post("/api/v1/submissions", json={"assignment": ids[0], "source": GOOD_SOURCE}, headers=bearer(key))
    assert made.status_code == 202
    refused = api.post("/api/v1/submissions", json={"assignment": ids[1], "source": GOOD_SOURCE},
                       headers=bearer(key))
    assert_error(refused, 404, "assignment_not_found")


def test_a_token_reads_what_the_site_shows_hidden_tests_held_until_the_due_date(site, ada, database_url):
    with db.transaction(database_url) as session:
        student = session.scalar(select(User).where(User.email == "ada@example.org"))
        course = courses.create_course(session, title="Held", code="H1")
        courses.import_roster(session, course, [{"email": student.email, "role": "student"}])
        assignment = courses.create_assignment(session, course, exercise="autograd-basics",
                                               due_at="2099-01-01T00:00+00:00", feedback="after_due").id
    key = new_token(ada)
    api = site.test_client()
    made = api.post("/api/v1/submissions", json={"assignment": assignment, "source": GOOD_SOURCE},
                    headers=bearer(key)).get_json()
    store_grade(database_url, made["id"], GOOD_SOURCE)
    shown = api.get(made["url"], headers=bearer(key)).get_json()
    assert shown["status"] == "graded" and shown["score"] is None and shown["max_score"] is None
    assert shown["feedback_held_until"].startswith("2099-01-01")
    assert shown["report"]["tests"] and all(t["visible"] for t in shown["report"]["tests"])
    assert shown["report"]["score"] is None


def test_a_tokens_submissions_share_the_students_rate_limit(site, ada):
    site.config.update(SUBMISSION_RATE_LIMIT="2 per minute")
    api = site.test_client()
    first, second = new_token(ada, "laptop"), new_token(ada, "Colab")
    assert submit_on_site(ada).status_code == 303
    assert submit_with(api, first).status_code == 202
    assert_error(submit_with(api, second), 429, "rate_limited")  # a new token is no new allowance
    assert submit_on_site(ada).status_code == 429


def test_the_client_wheel_is_served_and_holds_the_module(site):
    import io
    import zipfile

    client = site.test_client()
    latest = client.get("/client/")
    assert latest.status_code == 302
    wheel = client.get(latest.location)
    assert wheel.status_code == 200 and latest.location.endswith("-py3-none-any.whl")
    names = zipfile.ZipFile(io.BytesIO(wheel.data)).namelist()
    assert "grader_client.py" in names and any(n.endswith(".dist-info/RECORD") for n in names)
    assert client.get("/client/grader_client-9.9.9-py3-none-any.whl").status_code == 404


def test_a_new_password_ends_every_token_too(site, ada, database_url):
    """An account taken over and given back a new password keeps none of the taker's tokens."""
    from grader.accounts import users

    key = new_token(ada)
    with db.transaction(database_url) as session:
        users.set_password(session, "ada@example.org", "a new correct horse")
    assert_error(submit_with(site.test_client(), key), 401, "api_key_revoked")
