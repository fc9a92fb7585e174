"""A real Celery worker process on a real Redis, against SQLite and PostgreSQL: the flow of
one submission from a committed row to a stored report."""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path

import pytest

from grader import db, submissions
from grader.accounts.models import User
from grader.db import now
from grader.submissions.models import Submission
from tests.live import publish_basics, shared_worker, start_worker, stop, wait_until_done, wait_until_grading

ROOT = Path(__file__).resolve().parent.parent
BASICS = ROOT / "exercises" / "autograd-basics"


@pytest.fixture
def service(database_url, redis, monkeypatch):
    """The environment a deployment sets, here and in the worker processes (they inherit
    it): the test's database and Redis, a published exercise and a student."""
    monkeypatch.setenv("GRADER_DATABASE_URL", database_url)
    publish_basics(database_url)
    with db.transaction(database_url) as session:
        session.add(User(email="student@example.org", name="Student", role="student"))
    return database_url


@pytest.fixture
def worker(service, tmp_path):
    process = shared_worker(tmp_path)
    yield process
    stop(process)


def submit(database: str, source: str) -> str:
    with db.transaction(database) as session:
        user = session.query(User).filter_by(email="student@example.org").one()
        row = submissions.create(session, user=user, exercise_slug="autograd-basics", source=source)
        submission_id = row.id
    submissions.enqueue(submission_id, "any")  # after the commit
    return submission_id


def finished(database: str, submission_id: str) -> Submission:
    return wait_until_done(database, [submission_id], seconds=90)[0]


def test_a_committed_submission_is_graded_by_a_worker_and_its_report_stored(service, worker):
    right = submit(service, (BASICS / "solution.py").read_text())
    wrong = submit(service, (BASICS / "mutants" / "backward_twice.py").read_text())
    graded = finished(service, right)
    assert graded.status == "graded" and graded.score == graded.max_score == 6
    assert graded.report["exercise"] == "autograd-basics" and graded.exercise_version == 1
    assert graded.progress_done == graded.progress_total == 4
    assert graded.attempts == 1
    mistaken = finished(service, wrong)
    assert mistaken.score == 0 and mistaken.status == "graded"
    assert any("accumulate" in (t["hint"] or "") for t in mistaken.report["tests"])


def test_a_worker_kept_between_tests_takes_no_task_until_it_is_lent_again(service, redis, tmp_path):
    """What the tests' workers lent from test to test (tests/live.py) rest on: one given
    back takes nothing of the tests in between, not even after longer than a BRPOP
    waits, and nothing says it is up; lent again, it grades."""
    worker = shared_worker(tmp_path)
    stop(worker)
    submission_id = submit(service, (BASICS / "solution.py").read_text())
    time.sleep(1.5)
    assert redis.llen("cpu") == 1
    with db.transaction(service) as session:
        row = session.get(Submission, submission_id)
        assert row.status == "queued" and submissions.delayed(row)  # the page: no worker is up
    again = shared_worker(tmp_path)
    try:
        assert again is worker and finished(service, submission_id).score == 6
    finally:
        stop(again)


# ------------------------------------------------------------------ a worker that is not there

def _delayed(database: str, submission_id: str) -> bool:
    with db.transaction(database) as session:
        return submissions.delayed(session.get(Submission, submission_id))


def test_a_waiting_submission_says_so_while_no_worker_is_up_to_grade_it(service, tmp_path):
    from grader.tasks import workers_taking

    waiting = submit(service, (BASICS / "solution.py").read_text())
    assert _delayed(service, waiting) and workers_taking("cpu") == 0
    worker = shared_worker(tmp_path)
    try:
        [row] = wait_until_done(service, [waiting])
        assert row.status == "graded" and not _delayed(service, waiting)
        assert workers_taking("cpu") == 1 and workers_taking("gpu") == 0  # it takes the cpu queue alone
        assert workers_taking(None) == 1  # what a readiness ping waits for, then no longer
        with db.transaction(service) as session:
            user = session.query(User).filter_by(email="student@example.org").one()
            unsent = submissions.create(session, user=user, exercise_slug="autograd-basics",
                                         source=(BASICS / "solution.py").read_text()).id
        assert not _delayed(service, unsent)  # a worker is up: it will come
    finally:
        stop(worker)
    assert workers_taking("cpu") == 0  # a worker that stops (or is given back) takes its word back at once
    assert _delayed(service, unsent)


def test_a_task_delivered_twice_grades_once(service, worker):
    submission_id = submit(service, (BASICS / "solution.py").read_text())
    submissions.enqueue(submission_id, "any")
    first = finished(service, submission_id)
    time.sleep(1.0)  # the second delivery has had its turn
    with db.transaction(service) as session:
        again = session.get(Submission, submission_id)
        assert again.attempts == 1 and again.finished_at == first.finished_at


def test_the_sweeper_resends_a_stuck_submission_and_gives_up_after_the_attempts(service, worker):
    from grader.submissions import tasks

    stuck = submit(service, (BASICS / "solution.py").read_text())
    finished(service, stuck)
    with db.transaction(service) as session:
        session.add(row := Submission(user_id=1, exercise_slug="autograd-basics", exercise_version=1,
                                      source=(BASICS / "solution.py").read_text(), status="running",
                                      progress_done=0, progress_total=0, attempts=1,
                                      deadline=now() - timedelta(minutes=1)))
        session.flush()
        lost = row.id
        session.add(row := Submission(user_id=1, exercise_slug="autograd-basics", exercise_version=1,
                                      source="x = 1\n", status="queued", progress_done=0,
                                      progress_total=0, attempts=tasks.MAX_ATTEMPTS,
                                      deadline=now() - timedelta(minutes=1)))
        session.flush()
        hopeless = row.id
    assert tasks.sweep_stuck() == 1
    assert finished(service, lost).status == "graded"
    with db.transaction(service) as session:
        given_up = session.get(Submission, hopeless)
        assert given_up.status == "failed" and given_up.failure_reason and given_up.score is None


SLOW_SOLUTION = (BASICS / "solution.py").read_text().replace(
    "    y.backward()", "    __import__('time').sleep(0.5)\n    y.backward()")


def test_a_worker_killed_mid_grade_leaves_nothing_stuck(service, tmp_path, monkeypatch):
    from grader.submissions import tasks

    monkeypatch.setenv("GRADER_GRADE_LIMIT_S", "12")  # so that the lost grade is overdue soon
    first = start_worker(tmp_path, "first")
    try:
        submission_id = submit(service, SLOW_SOLUTION)
        wait_until_grading(service, submission_id)
    finally:
        first.kill()  # SIGKILL, mid-grade (and never left running if the grade did not start)
        first.wait()
    second = start_worker(tmp_path, "second")
    try:
        deadline = time.monotonic() + 60
        while True:
            tasks.sweep_stuck()  # what beat runs every 30 s
            with db.transaction(service) as session:
                row = session.get(Submission, submission_id)
                if row.status in ("graded", "failed"):
                    break
            assert time.monotonic() < deadline, f"still {row.status}"
            time.sleep(1)
        assert row.status == "graded" and row.score == row.max_score == 6
        assert row.attempts == 2
        with db.transaction(service) as session:
            assert session.query(Submission).filter(Submission.status.in_(("queued", "running"))).count() == 0
    finally:
        stop(second)


def test_a_grades_progress_is_written_at_most_every_quarter_second(monkeypatch):
    """Each write is a transaction on the grade's path: a grade of a tenth of a second writes
    none (its report says it all), a slow one about four a second."""
    from grader.submissions import tasks

    clock = [100.0]
    monkeypatch.setattr(tasks.time, "monotonic", lambda: clock[0])
    written = []
    progress = tasks._now_and_then(lambda done, total: written.append((done, total)))
    for done, at in ((0, 100.0), (1, 100.05), (2, 100.1)):
        clock[0] = at
        progress(done, 6)
    assert written == []
    for done, at in ((3, 100.3), (4, 100.4), (5, 100.6), (6, 101.9)):
        clock[0] = at
        progress(done, 6)
    assert written == [(3, 6), (5, 6), (6, 6)]
