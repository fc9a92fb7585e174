"""Live parts the service tests start for real: a Celery worker process and the web app
served over HTTP, each stopped when the test is done."""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


# Every worker a test started, killed when the test run ends: a test that fails before
# its own cleanup must not leave a worker consuming some later run's tasks.
_workers: list[subprocess.Popen] = []
atexit.register(lambda: [p.kill() for p in _workers if p.poll() is None])


def start_worker(tmp_path: Path, name: str, *, queues: str = "cpu", env: dict | None = None,
                 pool: str = "solo") -> subprocess.Popen:
    """A real worker process consuming `queues`, once it says it is ready (pool "prefork":
    two child processes grade, as in production)."""
    log = tmp_path / f"{name}.log"
    process = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "grader.tasks:celery", "worker", "-Q", queues, "--pool", pool,
         *(["--concurrency", "2"] if pool == "prefork" else []),
         "-n", f"{name}@%h", "--without-gossip", "--without-mingle", "--without-heartbeat", "-l", "info"],
        cwd=ROOT, env={**os.environ, **(env or {})}, stdout=open(log, "w"), stderr=subprocess.STDOUT)
    _workers.append(process)
    deadline = time.monotonic() + 60
    while "ready" not in log.read_text():
        assert process.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.2)
    return process


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@contextlib.contextmanager
def serve(app):
    """The app on a free local port, served by threads (as a browser needs: pages, polls
    and static files at once); yields its base URL."""
    from werkzeug.serving import make_server

    server = make_server("127.0.0.1", 0, app, threaded=True)
    # A short poll: shutdown() waits for the serving loop's next look (half a second by default).
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(10)


# ------------------------------------------------------------------ the database's side

def publish_basics(database_url: str, **extra) -> None:
    """autograd-basics published from the catalogue, worth 6 points, as `grader exercise sync`
    would leave it (without grading its solution first)."""
    from grader import catalog, db
    from grader.catalog.models import Exercise

    exercise = catalog.find("autograd-basics")
    with db.transaction(database_url) as session:
        session.add(Exercise(slug=exercise.slug, version=exercise.version, title=exercise.title,
                             device=exercise.device, max_score=6, functions=list(exercise.functions), **extra))


def wait_until_done(database_url: str, ids: list[str], seconds: float = 120) -> list:
    """The submissions, once every one is graded or failed (in the order of `ids`)."""
    from collections import Counter

    from sqlalchemy import select

    from grader import db
    from grader.submissions.models import Submission

    deadline = time.monotonic() + seconds
    while True:
        with db.transaction(database_url) as session:
            rows = {row.id: row for row in session.scalars(select(Submission).where(Submission.id.in_(ids)))}
        if len(rows) == len(set(ids)) and all(row.status in ("graded", "failed") for row in rows.values()):
            return [rows[i] for i in ids]
        assert time.monotonic() < deadline, f"after {seconds} s: {Counter(r.status for r in rows.values())}"
        time.sleep(0.2)


def wait_until_grading(database_url: str, submission_id: str, seconds: float = 60) -> None:
    """Until a worker is in the middle of the submission's grade (a test has passed)."""
    from grader import db
    from grader.submissions.models import Submission

    deadline = time.monotonic() + seconds
    while True:
        with db.transaction(database_url) as session:
            row = session.get(Submission, submission_id)
            if row.status == "running" and row.progress_done >= 1:
                return
        assert time.monotonic() < deadline, "the grade never started"
        time.sleep(0.05)


# ------------------------------------------------------------------ Redis

class PrivateRedis:
    """A redis-server of the test's own that can be restarted on the same port and data."""

    def __init__(self, directory: Path, *, fsync_always: bool = False):
        self.directory, self.fsync = directory, "always" if fsync_always else "everysec"
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
        # fsync_always: a task acknowledged to the sender is on disk, whatever happens next.
        self.process = subprocess.Popen(
            [server, "--port", str(self.port), "--bind", "127.0.0.1", "--appendonly", "yes",
             "--appendfsync", self.fsync, "--save", "", "--dir", str(self.directory), "--daemonize", "no"],
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


def publish_draft(database_url: str, slug: str = "ines-draft", *, title: str = "Gradients of Ines's own",
                  version: int = 1, uploaded_by: int | None = None, api_key_id: int | None = None) -> str:
    """autograd-basics under ``slug``, sent as an upload (by the user ``uploaded_by``, or the
    API key ``api_key_id``) and published as a worker does once every check holds (without
    grading it here): a new exercise is a draft. Its slug."""
    import tempfile

    from grader import catalog, db
    from grader.catalog import uploads
    from grader.catalog.models import Exercise, UploadStatus

    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch) / slug
        shutil.copytree(catalog.find("autograd-basics").path, folder, ignore=shutil.ignore_patterns("__pycache__"))
        toml = folder / "exercise.toml"
        text = toml.read_text().replace('slug = "autograd-basics"', f'slug = "{slug}"')
        text = text.replace("version = 1", f"version = {version}")
        text = text.replace('en = "Your first gradient with backward()"', f"en = {title!r}")
        toml.write_text(text.replace('ko = "backward()로 구하는 첫 번째 기울기"', f"ko = {title!r}"))
        archive = uploads.pack(folder)
        bundle = catalog.load(folder)
        with db.transaction(database_url) as session:
            upload = uploads.receive(session, archive, uploaded_by=uploaded_by, api_key_id=api_key_id)
            row = session.get(Exercise, slug) or Exercise(slug=slug)
            row.publish(bundle, 6.0, upload_id=upload.id)
            session.add(row)
            upload.status = UploadStatus.PUBLISHED
    return slug
