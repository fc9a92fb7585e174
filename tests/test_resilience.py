"""The service under stress, all parts real: a Redis restarted under the queue, and a burst
of API submissions shared by two workers. Nothing may be lost, and nothing graded twice.

Each test runs its own redis-server on a free port (the suite's is flushed by every test,
and these restart theirs), keeping every write in its append-only file, as
docker-compose's Redis does.
"""

from __future__ import annotations

import http.client
import json
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from sqlalchemy import func, select

from grader import db, submissions
from grader.accounts import keys
from grader.accounts.models import User
from grader.submissions.models import Submission
from tests.live import PrivateRedis, publish_basics, serve, start_worker, stop, wait_until_done, wait_until_grading

ROOT = Path(__file__).resolve().parent.parent
BASICS = ROOT / "exercises" / "autograd-basics"
RIGHT = (BASICS / "solution.py").read_text()
WRONG = (BASICS / "mutants" / "backward_twice.py").read_text()
# About half a second a call, so that a grade is still running when Redis goes away.
SLOW_RIGHT = RIGHT.replace("    y.backward()", "    __import__('time').sleep(0.5)\n    y.backward()")

pytestmark = pytest.mark.slow


@pytest.fixture
def broker(tmp_path, monkeypatch):
    """The private Redis, which the Celery app of this process and the workers send to."""
    from grader import tasks as worker_app

    server = PrivateRedis(tmp_path / "redis", fsync_always=True)
    server.start()
    monkeypatch.setenv("GRADER_REDIS_URL", server.url)
    monkeypatch.delenv("GRADER_GPU_QUEUE", raising=False)  # "any" exercises go to the cpu queue
    celery = worker_app.make_celery()  # it reads GRADER_REDIS_URL when made
    monkeypatch.setattr(worker_app, "celery", celery)
    yield server
    celery.close()
    server.stop()


@pytest.fixture
def service(database_url, broker, monkeypatch):
    """The test's database (also in the workers' environment), autograd-basics published
    and a student."""
    monkeypatch.setenv("GRADER_DATABASE_URL", database_url)
    publish_basics(database_url)
    with db.transaction(database_url) as session:
        session.add(User(email="student@example.org", name="Student", role="student"))
    return database_url


def worker_env(service: str, broker: PrivateRedis) -> dict:
    return {"GRADER_DATABASE_URL": service, "GRADER_REDIS_URL": broker.url}


def submit(database: str, source: str) -> str:
    with db.transaction(database) as session:
        user = session.query(User).filter_by(email="student@example.org").one()
        submission_id = submissions.create(session, user=user, exercise_slug="autograd-basics", source=source).id
    submissions.enqueue(submission_id, "any")  # after the commit
    return submission_id


def statuses(database: str) -> Counter:
    with db.transaction(database) as session:
        return Counter(dict(session.execute(select(Submission.status, func.count()).group_by(Submission.status)).all()))


def assert_graded_once_with_full_marks(rows: list[Submission]) -> None:
    assert [(r.status, r.score, r.max_score, r.attempts) for r in rows] == [("graded", 6, 6, 1)] * len(rows)


# ------------------------------------------------------------------ Redis restarts

def test_submissions_queued_while_redis_restarts_are_all_graded_once(service, broker, tmp_path):
    ids = [submit(service, RIGHT) for _ in range(10)]  # no worker yet: they wait in Redis
    assert broker.queued() == 10
    broker.restart()
    assert broker.queued() == 10  # the append-only file brought them back
    worker = start_worker(tmp_path, "worker", env=worker_env(service, broker))
    try:
        rows = wait_until_done(service, ids)
    finally:
        stop(worker)
    assert_graded_once_with_full_marks(rows)
    assert broker.queued() == 0


def test_a_running_worker_rides_out_a_redis_restart_mid_grade(service, broker, tmp_path):
    worker = start_worker(tmp_path, "worker", env=worker_env(service, broker))
    try:
        in_flight = submit(service, SLOW_RIGHT)
        wait_until_grading(service, in_flight)
        broker.restart()
        # Sent after the restart: this process and the worker must both have reconnected.
        after = [submit(service, RIGHT) for _ in range(5)]
        rows = wait_until_done(service, [in_flight, *after])
        assert worker.poll() is None, "the worker exited instead of reconnecting"
    finally:
        stop(worker)
    assert_graded_once_with_full_marks(rows)


# ------------------------------------------------------------------ a burst through the API

BURST = 200


def post_submission(base_url: str, key: str, body: dict) -> tuple[int, dict]:
    """POST /api/v1/submissions over HTTP (http.client: no proxy from the environment)."""
    parts = urlsplit(base_url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    try:
        connection.request("POST", "/api/v1/submissions", body=json.dumps(body),
                           headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_burst_of_api_submissions_to_two_workers_is_graded_every_one_exactly_once(service, broker, tmp_path):
    from grader.app import create_app

    # Made after `broker` set GRADER_REDIS_URL: the rate limiter counts in the private Redis.
    app = create_app({"TESTING": True, "DATABASE_URL": service, "SUBMISSION_RATE_LIMIT": "1000 per minute",
                      "API_KEY_RATE_LIMIT": "1000 per minute"})
    with db.transaction(service) as session:
        key = keys.create(session, ["submissions:write", "submissions:read"], name="burst")[1]
    # Every third one wrong; ten users, so new users are made while others submit.
    bodies = [{"exercise": "autograd-basics", "source": WRONG if i % 3 == 0 else RIGHT, "user": f"lms-{i % 10}"}
              for i in range(BURST)]
    env = worker_env(service, broker)
    workers = [start_worker(tmp_path, name, env=env) for name in ("first", "second")]
    try:
        started = time.monotonic()
        with serve(app) as url, ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(lambda body: post_submission(url, key, body), bodies))
        assert [status for status, _ in answers] == [202] * BURST, Counter(s for s, _ in answers)
        ids = [data["id"] for _, data in answers]
        assert len(set(ids)) == BURST
        rows = wait_until_done(service, ids, seconds=600)
        print(f"\n{BURST} submissions posted and graded in {time.monotonic() - started:.1f} s")
    finally:
        for worker in workers:
            stop(worker)

    assert statuses(service) == {"graded": BURST}  # nothing queued, running or failed; no extra rows
    by_id = {row.id: row for row in rows}
    for body, submission_id in zip(bodies, ids):
        row = by_id[submission_id]
        expected = 0 if body["source"] == WRONG else 6
        assert (row.source, row.score, row.max_score, row.attempts) == (body["source"], expected, 6, 1)
    assert broker.queued() == 0
