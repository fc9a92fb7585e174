"""The service under stress, all parts real: a Redis restarted under the queue, and a burst
of API submissions shared by two workers. Nothing may be lost, and nothing graded twice.

Each test runs its own redis-server on a free port (the shared one at 6379 is flushed by
other tests, and these restart theirs), keeping every write in its append-only file, as
docker-compose's Redis does.
"""

from __future__ import annotations

import http.client
import json
import shutil
import socket
import subprocess
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from sqlalchemy import func, select

from grader import catalog, db, submissions
from grader.api import keys
from grader.models import Exercise, Submission, User
from tests.live import serve, start_worker, stop

ROOT = Path(__file__).resolve().parent.parent
BASICS = ROOT / "exercises" / "autograd-basics"
RIGHT = (BASICS / "solution.py").read_text()
WRONG = (BASICS / "mutants" / "backward_twice.py").read_text()
# About half a second a call, so that a grade is still running when Redis goes away.
SLOW_RIGHT = RIGHT.replace("    y.backward()", "    __import__('time').sleep(0.5)\n    y.backward()")

pytestmark = pytest.mark.slow


class PrivateRedis:
    """A redis-server of the test's own that can be restarted on the same port and data."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.directory.mkdir()
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        import redis as redis_py

        server = shutil.which("redis-server")
        if server is None:
            pytest.skip("redis-server is not installed")
        # fsync on every write: a task acknowledged to the sender is on disk.
        self.process = subprocess.Popen(
            [server, "--port", str(self.port), "--bind", "127.0.0.1", "--appendonly", "yes",
             "--appendfsync", "always", "--save", "", "--dir", str(self.directory), "--daemonize", "no"],
            stdout=open(self.directory / "redis.log", "a"), stderr=subprocess.STDOUT)
        client = redis_py.Redis.from_url(self.url, socket_connect_timeout=1)
        deadline = time.monotonic() + 30
        while True:
            try:
                client.ping()
                break
            except redis_py.ConnectionError:
                assert self.process.poll() is None and time.monotonic() < deadline, \
                    (self.directory / "redis.log").read_text()[-2000:]
                time.sleep(0.05)
            finally:
                client.close()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()  # SIGTERM: Redis flushes its append-only file and exits
            self.process.wait(30)
        self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def queued(self, queue: str = "cpu") -> int:
        """Messages waiting in a queue (Celery's Redis transport keeps a list per queue)."""
        import redis as redis_py

        with redis_py.Redis.from_url(self.url) as client:
            return client.llen(queue)


@pytest.fixture
def broker(tmp_path, monkeypatch):
    """The private Redis, which the Celery app of this process and the workers send to."""
    from worker import app as worker_app

    server = PrivateRedis(tmp_path / "redis")
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
    exercise = catalog.find("autograd-basics")
    with db.transaction(database_url) as session:
        session.add(Exercise(slug=exercise.slug, version=exercise.version, title=exercise.title,
                             device=exercise.device, max_score=6, functions=list(exercise.functions)))
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


def wait_until_all_done(database: str, ids: list[str], seconds: float = 120) -> list[Submission]:
    deadline = time.monotonic() + seconds
    while True:
        with db.transaction(database) as session:
            rows = session.scalars(select(Submission).where(Submission.id.in_(ids))).all()
        if len(rows) == len(ids) and all(row.status in ("graded", "failed") for row in rows):
            return rows
        assert time.monotonic() < deadline, f"after {seconds} s: {Counter(row.status for row in rows)}"
        time.sleep(0.5)


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
        rows = wait_until_all_done(service, ids)
    finally:
        stop(worker)
    assert_graded_once_with_full_marks(rows)
    assert broker.queued() == 0


def test_a_running_worker_rides_out_a_redis_restart_mid_grade(service, broker, tmp_path):
    worker = start_worker(tmp_path, "worker", env=worker_env(service, broker))
    try:
        in_flight = submit(service, SLOW_RIGHT)
        deadline = time.monotonic() + 60
        while True:
            with db.transaction(service) as session:
                row = session.get(Submission, in_flight)
                if row.status == "running" and row.progress_done >= 1:
                    break
            assert time.monotonic() < deadline, "the grade never started"
            time.sleep(0.05)
        broker.restart()
        # Sent after the restart: this process and the worker must both have reconnected.
        after = [submit(service, RIGHT) for _ in range(5)]
        rows = wait_until_all_done(service, [in_flight, *after])
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
    app = create_app({"TESTING": True, "DATABASE_URL": service, "SUBMISSION_RATE_LIMIT": "1000 per minute"})
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
        rows = wait_until_all_done(service, ids, seconds=600)
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
