"""Attacks on personal tokens (grader.accounts.keys, grader.web.tokens, grader.api): a token
made on /account/tokens must act as its owner alone, with submissions:read/write only, see
what the site would show its owner (hidden tests held), share the owner's one rate limit,
and be made, listed and revoked by its owner alone. Each test passes while that holds."""

from __future__ import annotations

import json
import logging
import re
import threading
import time

import pytest
from sqlalchemy import delete, func, select

from grader import db
from grader.accounts import keys
from grader.accounts.models import ApiKey, User
from grader import courses
from grader.db import now
from grader.submissions.models import PracticeRun, Submission
from tests.test_api import GOOD_SOURCE, assert_error, make_key  # noqa: F401  (fixtures)
from tests.test_tokens import bearer, make_token, new_token, submit_with, user_id
from tests.forms import sign_in, token
from tests.test_web import ada, site  # noqa: F401  (fixtures too)
from tests.test_web import submit as submit_on_site

KEY = re.compile(r"gk_[0-9a-f]{12}_[A-Za-z0-9_-]{43}")
SECRET_NAMES = ("SECRET-hidden-name-1", "SECRET-hidden-name-2")


# ------------------------------------------------------------------ helpers

def signed_in(site, email: str):
    client = site.test_client()
    assert sign_in(client, email).status_code == 302
    return client


def live_tokens(database_url, email: str) -> list[ApiKey]:
    with db.transaction(database_url) as session:
        return keys.personal_tokens(session, user_id(database_url, email))


def course_with(database_url, members: list[tuple[str, str]], **assignment) -> int:
    """A course with these (email, role) members and one assignment of autograd-basics; its id."""
    with db.transaction(database_url) as session:
        course = courses.create_course(session, title="C", code=f"C{time.monotonic_ns()}")
        if members:
            courses.import_roster(session, course, [{"email": e, "role": r} for e, r in members])
        rules = {"due_at": "2099-01-01T00:00+00:00", **assignment}
        return courses.create_assignment(session, course, exercise="autograd-basics", **rules).id


def fake_grade(database_url, submission_id: str) -> None:
    """As a worker leaves it: one visible test and two hidden ones whose names are secrets."""
    tests = [dict(id="t::visible", name="visible one", visible=True, passed=True, points=1.0, max_points=1.0,
                  message=None, hint=None, duration_ms=100.0, i18n={})]
    tests += [dict(id=f"t::{name}", name=name, visible=False, passed=False, points=0.0, max_points=2.0,
                   message=f"{name} expected 42", hint=f"{name} hint", duration_ms=900.0, i18n={})
              for name in SECRET_NAMES]
    report = dict(exercise="autograd-basics", version=1, status="graded", score=1.0, max_score=5.0,
                  duration_ms=2000.0, tests=tests, output="", output_truncated=False, message=None,
                  sandbox="bubblewrap", device="cpu", warnings=[])
    with db.transaction(database_url) as session:
        row = session.get(Submission, submission_id)
        row.status, row.finished_at, row.score, row.max_score, row.report = "graded", now(), 1.0, 5.0, report
        row.progress_done = row.progress_total = 3


def race(n: int, work) -> list:
    """Run work(i) in n threads at once; their results in order."""
    results: list = [None] * n

    def run(i):
        try:
            results[i] = work(i)
        except Exception as exc:  # noqa: BLE001  (reported by the caller's assertions)
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,), name=f"race-{i}") for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return results


def stall_first_call(monkeypatch, module, name: str, barrier: threading.Barrier) -> None:
    """module.name waits at ``barrier`` the first time each racing thread calls it (after
    the real call), so the racing requests are all past that point together."""
    real, seen = getattr(module, name), set()

    def stalled(*args, **kwargs):
        result = real(*args, **kwargs)
        me = threading.current_thread().name
        if me.startswith("race-") and me not in seen:
            seen.add(me)
            try:
                barrier.wait()
            except threading.BrokenBarrierError:
                pass  # the requests were serialised elsewhere: fine, they just did not overlap
        return result

    monkeypatch.setattr(module, name, stalled)


# ------------------------------------------------------------------ making, listing, revoking

def test_no_token_is_made_without_the_owners_csrf_token(site, ada, database_url):
    assert ada.post("/account/tokens", data={"name": "x"}).status_code == 400
    assert ada.post("/account/tokens", data={"name": "x", "csrf_token": "forged"}).status_code == 400
    bob = signed_in(site, "bob@example.org")
    bobs_csrf = token(bob, "/account/tokens")
    assert ada.post("/account/tokens", data={"name": "x", "csrf_token": bobs_csrf}).status_code == 400
    # JSON instead of a form: still a POST of the site, still checked.
    assert ada.post("/account/tokens", json={"name": "x"}).status_code == 400
    assert live_tokens(database_url, "ada@example.org") == []


def test_the_form_cannot_ask_for_more_scopes_or_another_owner(site, ada, database_url):
    bob_id = user_id(database_url, "bob@example.org")
    page = ada.post("/account/tokens", data={
        "name": "laptop", "csrf_token": token(ada, "/account/tokens"), "scopes": "grades:write",
        "scope": "courses:write", "user_id": str(bob_id), "user": "bob@example.org"})
    assert page.status_code == 201
    key = KEY.search(page.get_data(as_text=True)).group(0)
    (row,) = live_tokens(database_url, "ada@example.org")
    assert sorted(row.scopes) == sorted(keys.PERSONAL_SCOPES) and row.user_id != bob_id
    assert live_tokens(database_url, "bob@example.org") == []
    assert_error(site.test_client().get("/api/v1/courses/1/gradebook", headers=bearer(key)), 403,
                 "insufficient_scope")


def test_a_personal_token_row_can_never_hold_more_scopes(database_url, site):
    with db.transaction(database_url) as session:
        uid = session.scalar(select(User.id).where(User.email == "ada@example.org"))
        for scope in keys.SCOPES:
            if scope not in keys.PERSONAL_SCOPES:
                with pytest.raises(ValueError):
                    keys.create(session, ["submissions:read", scope], user_id=uid)


@pytest.mark.slow  # takes seconds: left out of the fast loop
def test_the_limit_holds_against_racing_requests(site, database_url, monkeypatch):
    """Two tabs post the form at the same moment with nine tokens live: one more, not two."""
    first, second = signed_in(site, "ada@example.org"), signed_in(site, "ada@example.org")
    for n in range(keys.PERSONAL_LIMIT - 1):
        assert make_token(first, f"machine {n}").status_code == 201
    csrf = [token(first, "/account/tokens"), token(second, "/account/tokens")]
    # The row lock holds the second tab before this call, so the first one waits out the
    # barrier every run: unlocked, both tabs would reach it within milliseconds of each other.
    stall_first_call(monkeypatch, keys, "personal_tokens", threading.Barrier(2, timeout=1.5))
    clients = (first, second)
    statuses = race(2, lambda i: clients[i].post("/account/tokens", data={"name": f"tab {i}",
                                                                         "csrf_token": csrf[i]}).status_code)
    live = len(live_tokens(database_url, "ada@example.org"))
    assert live <= keys.PERSONAL_LIMIT, f"{live} live tokens (limit {keys.PERSONAL_LIMIT}); answers {statuses}"


def test_revoking_frees_a_place_and_nothing_else_does(site, ada, database_url):
    made = [new_token(ada, f"m{n}") for n in range(keys.PERSONAL_LIMIT)]
    assert make_token(ada, "one more").status_code == 422
    # A revoke of a token that is not hers (Bob's, a service key's, a made-up one) frees nothing.
    bob = signed_in(site, "bob@example.org")
    bobs = new_token(bob).split("_")[1]
    csrf = token(ada, "/account/tokens")
    # A prefix of hers in capitals is another prefix only where it has a letter: pick one that
    # does (a prefix of twelve digits alone, one time in 300, was read back as itself).
    lettered = next(p for p in (m.split("_")[1] for m in made) if not p.isdigit())
    for prefix in (bobs, "000000000000", "%", lettered.upper()):
        assert ada.post(f"/account/tokens/{prefix}/revoke", data={"csrf_token": csrf}).status_code == 404
    assert make_token(ada, "one more").status_code == 422
    # Revoking the same one twice frees one place, not two.
    prefix = made[0].split("_")[1]
    assert ada.post(f"/account/tokens/{prefix}/revoke", data={"csrf_token": csrf}).status_code == 303
    assert ada.post(f"/account/tokens/{prefix}/revoke", data={"csrf_token": csrf}).status_code == 404
    assert make_token(ada, "replacement").status_code == 201
    assert make_token(ada, "and another").status_code == 422
    assert len(live_tokens(database_url, "ada@example.org")) == keys.PERSONAL_LIMIT


def test_nobody_lists_or_revokes_anothers_token_not_even_an_admin(site, ada, database_url, make_key):
    key = new_token(ada, "ada-secret-laptop")
    prefix = key.split("_")[1]
    for email in ("bob@example.org", "ines@example.org"):  # a student, an administrator
        other = signed_in(site, email)
        page = other.get("/account/tokens").get_data(as_text=True)
        assert "ada-secret-laptop" not in page and prefix not in page
        refused = other.post(f"/account/tokens/{prefix}/revoke", data={"csrf_token": token(other, "/account/tokens")})
        assert refused.status_code == 404
    assert submit_with(site.test_client(), key).status_code == 202
    # Nor does a student revoke a service key by its prefix from her page.
    service = make_key("submissions:read", "submissions:write")
    done = ada.post(f"/account/tokens/{service.split('_')[1]}/revoke", data={"csrf_token": token(ada, "/account/tokens")})
    assert done.status_code == 404
    assert submit_with(site.test_client(), service, user="x").status_code == 202


def test_revoking_takes_a_post_with_csrf(site, ada):
    prefix = new_token(ada).split("_")[1]
    assert ada.get(f"/account/tokens/{prefix}/revoke").status_code == 405
    assert ada.post(f"/account/tokens/{prefix}/revoke").status_code == 400
    bob = signed_in(site, "bob@example.org")
    assert ada.post(f"/account/tokens/{prefix}/revoke",
                    data={"csrf_token": token(bob, "/account/tokens")}).status_code == 400
    assert prefix in ada.get("/account/tokens").get_data(as_text=True)


def test_a_token_is_never_shown_again_nor_kept_anywhere(site, ada, caplog):
    caplog.set_level(logging.DEBUG)
    made = make_token(ada, "once")
    key = KEY.search(made.get_data(as_text=True)).group(0)
    assert made.headers["Cache-Control"] == "no-store"
    assert all(key not in value for _name, value in made.headers.items())
    # Not in the session cookie (Flask's is signed, not encrypted: anyone holding it reads it).
    with ada.session_transaction() as session:
        assert key not in json.dumps(dict(session), default=str)
    for path in ("/account/tokens", "/account/tokens?revoked=1", "/exercises", "/submissions"):
        page = ada.get(path)
        assert key not in page.get_data(as_text=True) and key.split("_", 2)[2] not in page.get_data(as_text=True)
    for page in (ada.get("/account/tokens"), make_token(ada, "")):  # the list and a refusal
        assert page.headers.get("Cache-Control") == "no-store"
    api = site.test_client()
    assert submit_with(api, key).status_code == 202
    assert key.split("_", 2)[2] not in caplog.text


def test_a_tokens_name_is_shown_as_text(ada):
    assert make_token(ada, "<script>alert(1)</script>").status_code == 201
    page = ada.get("/account/tokens").get_data(as_text=True)
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;" in page


def test_a_stolen_cookie_of_a_signed_out_user_makes_no_token(site, ada, database_url):
    csrf = token(ada, "/account/tokens")
    cookie = ada.get_cookie("session").value
    assert ada.post("/logout", data={"csrf_token": token(ada, "/exercises")}).status_code == 302
    thief = site.test_client()
    thief.set_cookie("session", cookie)
    answer = thief.post("/account/tokens", data={"name": "stolen", "csrf_token": csrf})
    assert answer.status_code in (302, 400) and not KEY.search(answer.get_data(as_text=True))
    assert live_tokens(database_url, "ada@example.org") == []


def test_a_token_opens_no_page_of_the_site(site, ada):
    key = new_token(ada)
    mine = submit_on_site(ada).location.rsplit("/", 1)[1]
    browser = site.test_client()  # no cookie: only the token
    for path in ("/account/tokens", "/exercises", f"/submissions/{mine}", f"/submissions/{mine}/status",
                 "/submissions", "/admin"):
        answer = browser.get(path, headers=bearer(key))
        assert answer.status_code in (302, 401, 404), (path, answer.status_code)
        assert answer.status_code != 200
    answer = browser.post("/account/tokens", data={"name": "via api"}, headers=bearer(key))
    assert answer.status_code in (302, 400) and not KEY.search(answer.get_data(as_text=True))


# ------------------------------------------------------------------ what a token reaches

PERSONAL_ROUTES = {"api.create_submission", "api.get_submission", "api.get_practice_run",
                   "api.list_assignments", "api.create_webhook", "api.delete_webhook",
                   # a TA's or instructor's token comments on their course's work; anyone else's is
                   # refused by the course core (tests/security/test_comment_attacks.py)
                   "api.create_comment",
                   # what its owner sees on the site: a draft only where it is theirs to see
                   # (tests/security/test_draft_attacks.py)
                   "api.list_exercises", "api.get_exercise", "api.exercise_versions"}


def _routes(app):
    from werkzeug.routing import IntegerConverter

    for rule in app.url_map.iter_rules():
        if not rule.rule.startswith("/api/"):
            continue
        args = {name: 1 if isinstance(conv, IntegerConverter) else "autograd-basics"
                for name, conv in rule._converters.items()}
        with app.test_request_context():
            from flask import url_for
            url = url_for(rule.endpoint, **args)
        for method in sorted(rule.methods - {"HEAD", "OPTIONS"}):
            view = app.view_functions[rule.endpoint]
            # the scope a personal token needs there, where it differs from a key's
            yield rule.endpoint, method, url, getattr(view, "personal_scope", None) or getattr(view, "scope", None)


@pytest.mark.parametrize("email", ["ada@example.org", "ines@example.org"])  # a student, an administrator
def test_a_token_reaches_no_route_but_its_own_submissions(site, database_url, email):
    key = new_token(signed_in(site, email))
    api = site.test_client()
    personal = set()
    for endpoint, method, url, scope in _routes(site):
        if scope is None:  # the OpenAPI document: public
            continue
        if scope in keys.PERSONAL_SCOPES:
            personal.add(endpoint)
            continue
        answer = api.open(url, method=method, json={}, headers=bearer(key))
        assert answer.status_code == 403, (method, url, answer.status_code, answer.get_data(as_text=True)[:300])
        assert answer.get_json()["error"]["code"] == "insufficient_scope"
    # A new route a token can reach needs looking at here: it must keep to the owner's own work.
    assert personal == PERSONAL_ROUTES


def test_a_token_registers_no_webhook_and_deletes_none(site, ada, make_key):
    key = new_token(ada)
    api = site.test_client()
    for body in ({"url": "https://example.org/h"}, {}, {"url": "https://example.org/h", "x": 1}):
        assert_error(api.post("/api/v1/webhooks", json=body, headers=bearer(key)), 403, "insufficient_scope")
    service = make_key("submissions:read", "submissions:write")
    hook = api.post("/api/v1/webhooks", json={"url": "https://example.org/h"}, headers=bearer(service))
    if hook.status_code == 201:  # where the test's network lets it be registered
        hook_id = hook.get_json()["id"]
        assert_error(api.delete(f"/api/v1/webhooks/{hook_id}", headers=bearer(key)), 404, "webhook_not_found")
    assert_error(api.delete("/api/v1/webhooks/1", headers=bearer(key)), 404, "webhook_not_found")


def test_a_token_names_no_other_user_in_any_form(site, ada, database_url):
    key = new_token(ada)
    api = site.test_client()
    for user in ("bob", "bob@example.org", "", None, 2, {"id": 2}):
        assert_error(submit_with(api, key, user=user), 422, "invalid_body")
        assert_error(submit_with(api, key, user=user, practice=True), 422, "invalid_body")
    for field in ("User", "user_id", "owner", "as"):
        assert_error(submit_with(api, key, **{field: "bob"}), 422, "unknown_field")
    with db.transaction(database_url) as session:
        assert session.scalar(select(func.count()).select_from(Submission)) == 0
        assert session.scalar(select(func.count()).select_from(PracticeRun)) == 0


def test_what_a_token_submits_is_its_owners_alone(site, ada, database_url, make_key):
    key = new_token(ada)
    api = site.test_client()
    made = submit_with(api, key).get_json()["id"]
    run = submit_with(api, key, practice=True).get_json()["id"]
    with db.transaction(database_url) as session:
        assert session.get(Submission, made).user.email == "ada@example.org"
        assert session.get(PracticeRun, run).user.email == "ada@example.org"
    # Bob's token and a service key read neither.
    bobs = new_token(signed_in(site, "bob@example.org"))
    service = make_key("submissions:read", "submissions:write")
    for other in (bobs, service):
        assert_error(api.get(f"/api/v1/submissions/{made}", headers=bearer(other)), 404, "submission_not_found")
        assert_error(api.get(f"/api/v1/practice-runs/{run}", headers=bearer(other)), 404, "practice_run_not_found")


def test_a_token_reads_no_one_elses_practice_run(site, ada, database_url, make_key):
    key = new_token(ada)
    api = site.test_client()
    bob = signed_in(site, "bob@example.org")
    bobs_run = bob.post("/exercises/autograd-basics/practice",
                        data={"source": GOOD_SOURCE, "csrf_token": token(bob, "/exercises/autograd-basics")})
    assert bobs_run.status_code == 303
    bobs_run = bobs_run.location.rsplit("/", 1)[1]
    service = make_key("submissions:read", "submissions:write")
    theirs = submit_with(api, service, user="ada", practice=True).get_json()["id"]  # an API user called "ada"
    for run in (bobs_run, theirs, bobs_run.upper(), bobs_run + "0", "0" * 32):
        assert_error(api.get(f"/api/v1/practice-runs/{run}", headers=bearer(key)), 404, "practice_run_not_found")
    # Hers, started on the site, is hers through the token.
    mine = ada.post("/exercises/autograd-basics/practice",
                    data={"source": GOOD_SOURCE, "csrf_token": token(ada, "/exercises/autograd-basics")})
    assert api.get(f"/api/v1/practice-runs/{mine.location.rsplit('/', 1)[1]}", headers=bearer(key)).status_code == 200


def test_a_staff_or_admin_token_reads_only_its_owners_work(site, database_url):
    with db.transaction(database_url) as session:
        from grader.accounts import users
        users.create_user(session, email="ira@example.org", password="correct horse", role="instructor")
    assignment = course_with(database_url, [("ada@example.org", "student"), ("ira@example.org", "instructor"),
                                            ("bob@example.org", "ta")])
    ada = signed_in(site, "ada@example.org")
    student_key = new_token(ada)
    api = site.test_client()
    hers = api.post("/api/v1/submissions", json={"assignment": assignment, "source": GOOD_SOURCE},
                    headers=bearer(student_key)).get_json()["id"]
    on_site = submit_on_site(ada).location.rsplit("/", 1)[1]
    run = submit_with(api, student_key, practice=True).get_json()["id"]
    for email in ("ira@example.org", "bob@example.org", "ines@example.org"):  # instructor, ta, admin
        key = new_token(signed_in(site, email))
        for submission in (hers, on_site):
            assert_error(api.get(f"/api/v1/submissions/{submission}", headers=bearer(key)), 404,
                         "submission_not_found")
        assert_error(api.get(f"/api/v1/practice-runs/{run}", headers=bearer(key)), 404, "practice_run_not_found")
        assert_error(api.get("/api/v1/courses/1/gradebook", headers=bearer(key)), 403, "insufficient_scope")
        assert_error(api.post(f"/api/v1/assignments/{assignment}/regrades", json={}, headers=bearer(key)), 403,
                     "insufficient_scope")
        assert_error(submit_with(api, key, user="ada@example.org"), 422, "invalid_body")


def test_a_token_submits_and_practises_only_in_its_owners_courses(site, ada, database_url, make_key):
    mine = course_with(database_url, [("ada@example.org", "student")])
    others = course_with(database_url, [("bob@example.org", "student")])
    empty = course_with(database_url, [])
    with db.transaction(database_url) as session:  # a course an LMS or script made through its key
        row, _key = keys.create(session, ["courses:write"])
        course = courses.create_course(session, title="API", code="API1", api_key_id=row.id)
        api_course = courses.create_assignment(session, course, exercise="autograd-basics",
                                               due_at="2099-01-01T00:00+00:00").id
    key = new_token(ada)
    api = site.test_client()
    for practice in (False, True):
        extra = {"practice": True} if practice else {}
        ok = api.post("/api/v1/submissions", json={"assignment": mine, "source": GOOD_SOURCE, **extra},
                      headers=bearer(key))
        assert ok.status_code == 202, ok.get_data(as_text=True)
        for assignment in (others, empty, api_course, 0, -1, 2**31, 2**63, mine + 1000):
            refused = api.post("/api/v1/submissions", json={"assignment": assignment, "source": GOOD_SOURCE, **extra},
                               headers=bearer(key))
            assert_error(refused, 404, "assignment_not_found")
        for assignment in (str(others), float(others), True):
            refused = api.post("/api/v1/submissions", json={"assignment": assignment, "source": GOOD_SOURCE, **extra},
                               headers=bearer(key))
            assert refused.status_code == 422
        both = api.post("/api/v1/submissions", json={"assignment": others, "exercise": "autograd-basics",
                                                     "source": GOOD_SOURCE, **extra}, headers=bearer(key))
        assert both.status_code == 422
    with db.transaction(database_url) as session:
        assert {r.assignment_id for r in session.scalars(select(Submission))} == {mine}
        assert {r.assignment_id for r in session.scalars(select(PracticeRun))} == {mine}


# ------------------------------------------------------------------ hidden tests held

def _held_body_leaks_nothing(text: str) -> None:
    for name in SECRET_NAMES:
        assert name not in text, text[:2000]


def test_hidden_results_are_held_on_every_route_until_the_due_date(site, ada, database_url):
    assignment = course_with(database_url, [("ada@example.org", "student")], feedback="after_due")
    key = new_token(ada)
    api = site.test_client()
    by_token = api.post("/api/v1/submissions", json={"assignment": assignment, "source": GOOD_SOURCE},
                        headers=bearer(key)).get_json()["id"]
    by_site = ada.post(f"/assignments/{assignment}/submissions",
                       data={"source": GOOD_SOURCE, "csrf_token": token(ada, f"/assignments/{assignment}")})
    assert by_site.status_code == 303, by_site.get_data(as_text=True)[:500]
    by_site = by_site.location.rsplit("/", 1)[1]
    for submission in (by_token, by_site):
        fake_grade(database_url, submission)
        shown = api.get(f"/api/v1/submissions/{submission}", headers=bearer(key))
        body = shown.get_json()
        assert body["score"] is None and body["max_score"] is None and body["report"]["score"] is None
        assert body["report"]["max_score"] is None
        assert [t["name"] for t in body["report"]["tests"]] == ["visible one"]
        _held_body_leaks_nothing(shown.get_data(as_text=True))
        status = ada.get(f"/submissions/{submission}/status")
        assert status.get_json()["score"] is None and status.get_json()["max_score"] is None
        _held_body_leaks_nothing(status.get_data(as_text=True))
        page = ada.get(f"/submissions/{submission}").get_data(as_text=True)
        _held_body_leaks_nothing(page)
    # Asking in other ways: a trailing slash, upper case, the practice-run route.
    for path in (f"/api/v1/submissions/{by_token}/", f"/api/v1/submissions/{by_token.upper()}",
                 f"/api/v1/practice-runs/{by_token}"):
        answer = api.get(path, headers=bearer(key))
        assert answer.status_code in (404, 308), (path, answer.status_code)
        _held_body_leaks_nothing(answer.get_data(as_text=True))


def test_a_held_report_carries_no_timing_of_the_hidden_tests(site, ada, database_url):
    """The site shows no durations; the API's held report keeps the whole run's duration_ms,
    which is the hidden tests' time plus the visible ones' (a channel the engine coarsens,
    grader.protocol.report.coarse_ms, but which is released only with the hidden results)."""
    assignment = course_with(database_url, [("ada@example.org", "student")], feedback="after_due")
    key = new_token(ada)
    api = site.test_client()
    made = api.post("/api/v1/submissions", json={"assignment": assignment, "source": GOOD_SOURCE},
                    headers=bearer(key)).get_json()["id"]
    fake_grade(database_url, made)
    report = api.get(f"/api/v1/submissions/{made}", headers=bearer(key)).get_json()["report"]
    visible = sum(t["duration_ms"] for t in report["tests"])
    assert report.get("duration_ms") in (None, visible), report.get("duration_ms")


def test_an_extension_holds_the_results_until_the_students_own_due_date(site, ada, database_url):
    with db.transaction(database_url) as session:
        student = session.scalar(select(User).where(User.email == "ada@example.org"))
        course = courses.create_course(session, title="Ext", code="EXT1")
        courses.import_roster(session, course, [{"email": student.email, "role": "student"}])
        assignment = courses.create_assignment(session, course, exercise="autograd-basics",
                                               due_at="2099-01-01T00:00+00:00", feedback="after_due")
        courses.grant_extension(session, assignment, student, due_at="2099-06-01T00:00+00:00", reason="ill", by="t")
        assignment_id = assignment.id
    key = new_token(ada)
    api = site.test_client()
    made = api.post("/api/v1/submissions", json={"assignment": assignment_id, "source": GOOD_SOURCE},
                    headers=bearer(key)).get_json()["id"]
    fake_grade(database_url, made)
    # The assignment's own due date passes; hers has not.
    with db.transaction(database_url) as session:
        from grader.courses.models import Assignment
        session.get(Assignment, assignment_id).due_at = now().replace(year=2000)
    shown = api.get(f"/api/v1/submissions/{made}", headers=bearer(key))
    assert shown.get_json()["score"] is None and shown.get_json()["feedback_held_until"].startswith("2099-06-01")
    _held_body_leaks_nothing(shown.get_data(as_text=True))


def test_staff_of_another_course_see_nothing_early_of_their_own_student_work(site, ada, database_url):
    """Ada is a TA elsewhere: that does not release her own hidden results here."""
    held = course_with(database_url, [("ada@example.org", "student")], feedback="after_due")
    course_with(database_url, [("ada@example.org", "ta")])
    key = new_token(ada)
    api = site.test_client()
    made = api.post("/api/v1/submissions", json={"assignment": held, "source": GOOD_SOURCE},
                    headers=bearer(key)).get_json()["id"]
    fake_grade(database_url, made)
    shown = api.get(f"/api/v1/submissions/{made}", headers=bearer(key))
    assert shown.get_json()["score"] is None
    _held_body_leaks_nothing(shown.get_data(as_text=True))


# ------------------------------------------------------------------ revoked, deleted, signed out

def test_a_revoked_token_reads_nothing_and_submits_nothing(site, ada, database_url):
    key = new_token(ada)
    api = site.test_client()
    made = submit_with(api, key).get_json()["id"]
    run = submit_with(api, key, practice=True).get_json()["id"]
    prefix = key.split("_")[1]
    assert ada.post(f"/account/tokens/{prefix}/revoke", data={"csrf_token": token(ada, "/account/tokens")}).status_code == 303
    assert_error(api.get(f"/api/v1/submissions/{made}", headers=bearer(key)), 401, "api_key_revoked")
    assert_error(api.get(f"/api/v1/practice-runs/{run}", headers=bearer(key)), 401, "api_key_revoked")
    assert_error(submit_with(api, key, practice=True), 401, "api_key_revoked")
    # Variants of the revoked key are no way back in.
    for variant in (key + " ", " " + key, key.replace("gk_", "GK_"), key + "=", f"{key}\t"):
        answer = api.post("/api/v1/submissions", json={"exercise": "autograd-basics", "source": GOOD_SOURCE},
                          headers={"Authorization": f"Bearer {variant}"})
        assert answer.status_code == 401, variant
    with db.transaction(database_url) as session:
        assert session.scalar(select(func.count()).select_from(Submission)) == 1


def test_a_token_of_a_deleted_account_is_refused(site, database_url):
    with db.transaction(database_url) as session:
        from grader.accounts import users
        users.create_user(session, email="gone@example.org", password="correct horse", role="student")
    key = new_token(signed_in(site, "gone@example.org"))
    with db.transaction(database_url) as session:
        session.execute(delete(User).where(User.email == "gone@example.org"))
    api = site.test_client()
    answer = submit_with(api, key)
    assert answer.status_code == 401, answer.get_data(as_text=True)
    with db.transaction(database_url) as session:
        assert session.scalar(select(func.count()).select_from(Submission)) == 0


def test_a_token_of_an_lms_launched_user_acts_as_that_user_alone(site, database_url):
    with db.transaction(database_url) as session:
        lms_user = User(external_id="lti:https://lms.example|learner-1", name="Learner", role="student")
        session.add(lms_user)
        session.flush()
        lms_id = lms_user.id
    learner = site.test_client()
    with learner.session_transaction() as session:  # what a launch leaves in the session
        session.update(user_id=lms_id, v=0, began=int(time.time()))
    key = new_token(learner)
    api = site.test_client()
    made = submit_with(api, key).get_json()["id"]
    with db.transaction(database_url) as session:
        assert session.get(Submission, made).user_id == lms_id
    ada = signed_in(site, "ada@example.org")
    hers = submit_on_site(ada).location.rsplit("/", 1)[1]
    assert_error(api.get(f"/api/v1/submissions/{hers}", headers=bearer(key)), 404, "submission_not_found")
    assert_error(submit_with(api, key, user="ada@example.org"), 422, "invalid_body")
    assert_error(api.get("/api/v1/courses/1/gradebook", headers=bearer(key)), 403, "insufficient_scope")


def test_a_key_in_the_url_or_a_cookie_is_no_key(site, ada):
    key = new_token(ada)
    api = site.test_client()
    made = submit_with(api, key).get_json()["id"]
    assert_error(api.get(f"/api/v1/submissions/{made}?access_token={key}"), 401, "missing_api_key")
    assert_error(api.get(f"/api/v1/submissions/{made}", headers={"Authorization": f"Basic {key}"}), 401,
                 "missing_api_key")
    api.set_cookie("api_key", key)
    assert_error(api.get(f"/api/v1/submissions/{made}"), 401, "missing_api_key")


# ------------------------------------------------------------------ one rate limit

def test_practice_runs_share_one_limit_across_tokens_and_the_site(site, ada):
    site.config.update(PRACTICE_RATE_LIMIT="2 per minute")
    api = site.test_client()
    first, second = new_token(ada, "laptop"), new_token(ada, "Colab")
    on_site = ada.post("/exercises/autograd-basics/practice",
                       data={"source": GOOD_SOURCE, "csrf_token": token(ada, "/exercises/autograd-basics")})
    assert on_site.status_code == 303
    assert submit_with(api, first, practice=True).status_code == 202
    assert_error(submit_with(api, second, practice=True), 429, "rate_limited")
    again = ada.post("/exercises/autograd-basics/practice",
                     data={"source": GOOD_SOURCE, "csrf_token": token(ada, "/exercises/autograd-basics")})
    assert again.status_code == 429


def test_submissions_to_assignments_share_the_same_limit(site, ada, database_url):
    site.config.update(SUBMISSION_RATE_LIMIT="2 per minute")
    assignment = course_with(database_url, [("ada@example.org", "student")])
    api = site.test_client()
    key = new_token(ada)
    assert ada.post(f"/assignments/{assignment}/submissions",
                    data={"source": GOOD_SOURCE, "csrf_token": token(ada, f"/assignments/{assignment}")}).status_code == 303
    assert api.post("/api/v1/submissions", json={"assignment": assignment, "source": GOOD_SOURCE},
                    headers=bearer(key)).status_code == 202
    assert_error(submit_with(api, key), 429, "rate_limited")
    # A new token, or revoking and making one, is no new allowance.
    prefix = key.split("_")[1]
    ada.post(f"/account/tokens/{prefix}/revoke", data={"csrf_token": token(ada, "/account/tokens")})
    assert_error(submit_with(api, new_token(ada, "fresh")), 429, "rate_limited")


def test_anothers_forged_token_burns_nothing_of_their_allowance(site, ada):
    site.config.update(SUBMISSION_RATE_LIMIT="1 per minute", PRACTICE_RATE_LIMIT="1 per minute")
    key = new_token(ada)
    prefix = key.split("_")[1]
    attacker = site.test_client()
    forged = f"gk_{prefix}_{'A' * 43}"
    for _ in range(5):
        assert_error(submit_with(attacker, forged), 401, "invalid_api_key")
        assert_error(submit_with(attacker, forged, practice=True), 401, "invalid_api_key")
    # Bob's own valid token, whatever else he puts in the header, counts against Bob.
    bobs = new_token(signed_in(site, "bob@example.org"))
    assert submit_with(attacker, bobs).status_code == 202
    assert submit_with(site.test_client(), key).status_code == 202
    assert submit_with(site.test_client(), key, practice=True).status_code == 202


def test_a_forged_token_learns_nothing_of_its_victims_allowance(site, ada):
    """The prefix is not secret; the secret is. A token with another's prefix and a wrong
    secret is refused as invalid whatever the owner's bucket holds, and says nothing of it."""
    site.config.update(SUBMISSION_RATE_LIMIT="1 per minute")
    key = new_token(ada)
    attacker = site.test_client()
    forged = f"gk_{key.split('_')[1]}_{'A' * 43}"
    assert submit_with(site.test_client(), key).status_code == 202  # her allowance is now spent
    answer = submit_with(attacker, forged)
    assert answer.status_code == 401, (answer.status_code, answer.get_data(as_text=True))


def test_a_forged_tokens_answer_carries_no_count_of_the_victims_use(site, ada):
    key = new_token(ada)
    for _ in range(2):
        assert submit_with(site.test_client(), key).status_code == 202
    attacker = site.test_client()
    forged, unknown = f"gk_{key.split('_')[1]}_{'A' * 43}", f"gk_{'0' * 12}_{'A' * 43}"
    answers = [submit_with(attacker, k) for k in (forged, unknown)]
    assert [a.status_code for a in answers] == [401, 401]
    shown = [{h: a.headers.get(h) for h in ("X-RateLimit-Remaining", "Retry-After")} for a in answers]
    assert shown[0] == shown[1], shown


def test_racing_submissions_get_no_more_than_the_limit(site, ada, monkeypatch):
    """Several submissions sent at the same moment (several tokens, or one) are one student's:
    no more are taken than the limit allows."""
    site.config.update(SUBMISSION_RATE_LIMIT="1 per minute")
    tokens = [new_token(ada, f"machine {n}") for n in range(3)]
    stall_first_call(monkeypatch, keys, "verify", threading.Barrier(3, timeout=5))
    statuses = race(3, lambda i: submit_with(site.test_client(), tokens[i]).status_code)
    assert statuses.count(202) <= 1, statuses

