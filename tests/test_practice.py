"""Practice runs: a source run against the exercise's visible tests alone, through the same
queue and sandbox as a submission, reported the same way and counted for nothing."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from sqlalchemy import func, select, update

from grader import db
from grader.accounts.models import User
from grader import courses
from grader.db import now
from grader.engine import grade
from grader.submissions import SubmissionError
from grader.submissions import practice as runs
from grader.submissions.models import PracticeRun, Submission
from tests.live import shared_worker, stop
from tests.test_api import GOOD_SOURCE, assert_error, auth, make_key, queued_messages  # noqa: F401  (fixtures)
from tests.forms import sign_in, token
from tests.test_web import ada, site  # noqa: F401  (fixtures too)
from tests.test_web import submit as submit_on_site

WRONG = "def grad_2xtx(x):\n    return 2 * x\n"


def practise(client, auth, source=GOOD_SOURCE, user="ada", **fields):
    body = {"exercise": "autograd-basics", "source": source, "user": user, "practice": True, **fields}
    return client.post("/api/v1/submissions", json=body, headers=auth)


def count(database_url, model) -> int:
    with db.transaction(database_url) as session:
        return session.scalar(select(func.count()).select_from(model))


def test_a_practice_run_is_queued_apart_from_submissions(client, auth, basics, database_url, redis):
    started = practise(client, auth)
    assert started.status_code == 202, started.get_json()
    body = started.get_json()
    assert body["practice"] is True and body["status"] == "queued"
    assert body["url"].endswith(f"/api/v1/practice-runs/{body['id']}") and started.headers["Location"] == body["url"]
    assert count(database_url, Submission) == 0 and count(database_url, PracticeRun) == 1
    [message] = queued_messages(redis)
    assert message["headers"]["task"] == runs.PRACTICE_TASK and body["id"] in message["headers"]["argsrepr"]
    shown = client.get(body["url"], headers=auth).get_json()
    assert (shown["practice"], shown["status"], shown["user"], shown["exercise"]) == (True, "queued", "ada",
                                                                                        "autograd-basics")


def test_a_practice_run_is_refused_like_a_submission(client, auth, basics, database_url, redis):
    assert_error(practise(client, auth, source=" \n"), 422, "source_empty")
    assert_error(practise(client, auth, practice="yes"), 422, "wrong_type")
    assert_error(client.post("/api/v1/submissions", headers=auth, json={
        "exercise": "nope", "source": GOOD_SOURCE, "user": "ada", "practice": True}), 422, "unknown_exercise")
    assert count(database_url, PracticeRun) == 0 and redis.llen("cpu") == 0


def test_practice_runs_are_limited_apart_from_submissions(app, client, auth, basics):
    app.config.update(SUBMISSION_RATE_LIMIT="1 per minute", PRACTICE_RATE_LIMIT="2 per minute")
    submission = {"exercise": "autograd-basics", "source": GOOD_SOURCE, "user": "ada"}
    assert client.post("/api/v1/submissions", json=submission, headers=auth).status_code == 202
    assert_error(client.post("/api/v1/submissions", json=submission, headers=auth), 429, "rate_limited")
    # The submissions used up do not stop practising, and practising has its own count.
    assert [practise(client, auth).status_code for _ in range(2)] == [202, 202]
    limited = practise(client, auth)
    assert_error(limited, 429, "rate_limited")
    assert int(limited.headers["Retry-After"]) > 0


def test_another_keys_practice_run_is_not_found(client, auth, basics, make_key):
    url = practise(client, auth).get_json()["url"]
    other = {"Authorization": f"Bearer {make_key('submissions:read', 'submissions:write')}"}
    assert_error(client.get(url, headers=other), 404, "practice_run_not_found")
    assert_error(client.get("/api/v1/practice-runs/" + "0" * 32, headers=auth), 404, "practice_run_not_found")


def test_a_run_the_workers_never_took_is_shown_failed_at_its_deadline(client, auth, basics, database_url,
                                                                     monkeypatch):
    monkeypatch.setenv("GRADER_DATABASE_URL", database_url)  # where the task looks
    body = practise(client, auth).get_json()
    with db.transaction(database_url) as session:
        session.execute(update(PracticeRun).values(deadline=now() - timedelta(seconds=1)))
    assert client.get(body["url"], headers=auth).get_json()["status"] == "failed"
    from grader.submissions.tasks import run_practice

    assert run_practice.run(body["id"]) == "not queued"  # a late message runs nothing


def test_a_students_latest_runs_are_kept_and_older_ones_go(basics, database_url):
    with db.transaction(database_url) as session:
        user = User(email="ada@example.org", name="Ada", role="student")
        session.add(user)
        session.flush()
        made = []
        for _ in range(runs.KEPT_PER_USER + 3):
            made.append(runs.start(session, user=user, exercise_slug="autograd-basics", source=GOOD_SOURCE).id)
    with db.transaction(database_url) as session:
        kept = set(session.scalars(select(PracticeRun.id)))
    assert kept == set(made[-runs.KEPT_PER_USER:])


def test_a_practice_run_for_an_assignment_uses_no_attempt_and_needs_membership(basics, database_url):
    with db.transaction(database_url) as session:
        ada, bo = User(email="ada@example.org", name="Ada", role="student"), User(email="bo@x.org", name="Bo",
                                                                                 role="student")
        session.add_all([ada, bo])
        session.flush()
        course = courses.create_course(session, title="DL", code="DL1")
        courses.import_roster(session, course, [{"email": "ada@example.org", "role": "student"}])
        assignment = courses.create_assignment(session, course, exercise="autograd-basics",
                                               due_at="2099-01-01T00:00+00:00", attempts=1)
        courses.submit(session, user=ada, assignment=assignment, source=GOOD_SOURCE)  # the one attempt
        run = courses.practice(session, user=ada, assignment=assignment, source=WRONG)
        assert run.assignment_id == assignment.id and run.exercise_version == assignment.exercise_version
        with pytest.raises(SubmissionError) as refused:
            courses.practice(session, user=bo, assignment=assignment, source=WRONG)
        assert refused.value.code == "not_a_member"
        assert courses.standing(session, assignment, ada).attempts_used == 1


# ------------------------------------------------------------------ with a real worker

@pytest.fixture
def worker(database_url, redis, tmp_path, monkeypatch):
    monkeypatch.setenv("GRADER_DATABASE_URL", database_url)
    process = shared_worker(tmp_path)
    yield process
    stop(process)


def followed(client, auth, url: str, seconds: float = 120) -> dict:
    deadline = time.monotonic() + seconds
    while True:
        body = client.get(url, headers=auth).get_json()
        if body["status"] in ("graded", "failed"):
            return body
        assert time.monotonic() < deadline, body
        time.sleep(0.2)


def test_a_worker_runs_the_visible_tests_alone_and_nothing_counts(client, auth, basics, database_url, redis,
                                                                  worker):
    right = followed(client, auth, practise(client, auth).get_json()["url"])
    assert right["status"] == "graded" and right["report"]["tests"]
    assert all(t["visible"] for t in right["report"]["tests"])
    assert right["score"] == right["max_score"] == sum(t["max_points"] for t in right["report"]["tests"]) < 6
    assert right["progress"] == {"done": len(right["report"]["tests"]), "total": len(right["report"]["tests"])}
    wrong = followed(client, auth, practise(client, auth, source=WRONG).get_json()["url"])
    assert wrong["status"] == "graded" and wrong["score"] == 0
    assert any(t["hint"] for t in wrong["report"]["tests"])  # reported as a submission would be
    # No trace where anything counts: no submission, nothing sent on to LMSs or webhooks.
    assert count(database_url, Submission) == 0 and redis.llen("cpu") == 0


# ------------------------------------------------------------------ on the site

def practise_on_site(client, source: str = GOOD_SOURCE, slug: str = "autograd-basics"):
    return client.post(f"/exercises/{slug}/practice",
                       data={"source": source, "csrf_token": token(client, f"/exercises/{slug}")})


def graded_by_the_engine(database_url: str, run_id: str, source: str) -> None:
    """The run as a worker leaves it (the engine, run here; no worker in these tests)."""
    report = grade("autograd-basics", source, visible_only=True)
    with db.transaction(database_url) as session:
        run = session.get(PracticeRun, run_id)
        run.status, run.score, run.max_score, run.report = "graded", report.score, report.max_score, report.to_dict()


def test_the_exercise_page_offers_a_practice_run_beside_submit(ada):
    page = ada.get("/exercises/autograd-basics").get_data(as_text=True)
    assert 'formaction="/exercises/autograd-basics/practice"' in page and "Run visible tests" in page


def test_a_practice_run_from_the_site_shows_the_visible_tests_and_counts_for_nothing(site, ada, database_url):
    started = practise_on_site(ada, WRONG)
    assert started.status_code == 303 and started.location.startswith("/practice/")
    pending = ada.get(started.location).get_data(as_text=True)
    assert "Visible tests of your code" in pending and "counts for nothing" in pending
    graded_by_the_engine(database_url, started.location.rsplit("/", 1)[1], WRONG)
    page = ada.get(started.location).get_data(as_text=True)
    assert "Visible tests: 0 / 2" in page and "(hidden)" not in page and 'class="hint"' in page
    assert count(database_url, Submission) == 0
    assert "Your best" not in ada.get("/exercises/autograd-basics").get_data(as_text=True)
    status = ada.get(started.location + "/status").get_json()
    assert status["status"] == "graded" and status["max_score"] == 2


def test_a_practice_run_is_its_students_alone(site, ada):
    location = practise_on_site(ada).location
    bob = site.test_client()
    sign_in(bob, "bob@example.org")
    assert bob.get(location).status_code == 404 and bob.get(location + "/status").status_code == 404


def test_practising_on_the_site_is_limited_apart_from_submitting(site, database_url):
    site.config.update(SUBMISSION_RATE_LIMIT="1 per minute", PRACTICE_RATE_LIMIT="1 per minute")
    client = site.test_client()
    sign_in(client, "ada@example.org")
    assert submit_on_site(client).status_code == 303 and submit_on_site(client).status_code == 429
    assert practise_on_site(client).status_code == 303
    refused = practise_on_site(client)
    assert refused.status_code == 429 and int(refused.headers["Retry-After"]) > 0


def test_a_refused_practice_run_keeps_the_code_typed(ada, database_url):
    page = practise_on_site(ada, "x = '\x00'  # <mine>\n")
    assert page.status_code == 422 and "# &lt;mine&gt;" in page.get_data(as_text=True)
    assert count(database_url, PracticeRun) == 0


def test_a_practice_run_that_does_not_parse_says_where_and_stores_nothing(client, auth, basics, database_url,
                                                                          redis):
    refused = practise(client, auth, source="x = 1\r\ny = (\r\n")
    assert_error(refused, 422, "syntax_error")
    assert (refused.get_json()["error"]["line"], refused.get_json()["error"]["column"]) == (2, 5)
    assert count(database_url, PracticeRun) == 0 and count(database_url, User) == 0 and redis.llen("cpu") == 0


def test_a_practice_run_from_the_site_is_stored_and_shown_with_lf_and_a_syntax_error_runs_nothing(
        ada, database_url):
    started = practise_on_site(ada, WRONG.replace("\n", "\r\n"))
    assert started.status_code == 303
    with db.transaction(database_url) as session:
        assert session.scalars(select(PracticeRun.source)).one() == WRONG
    graded_by_the_engine(database_url, started.location.rsplit("/", 1)[1], WRONG)
    page = ada.get(started.location).get_data(as_text=True)
    assert "\\x0d" not in page and "&#13;" not in page and "\r" not in page
    refused = practise_on_site(ada, "def grad_2xtx(x):  # <mine>\r\n    return x +\r\n")
    assert refused.status_code == 422
    assert "Your code has a syntax error on line 2: invalid syntax." in refused.get_data(as_text=True)
    assert "# &lt;mine&gt;" in refused.get_data(as_text=True) and count(database_url, PracticeRun) == 1
