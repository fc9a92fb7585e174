"""Live parts the service tests start for real: a Celery worker process and the web app
served over HTTP, each stopped when the test is done."""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
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


# ------------------------------------------------------------------ workers lent from test to test

# A worker costs about six seconds of CPU to start (Celery, torch, two warm sandboxes), and
# most worker tests start one alike: the same queues, the same environment. Such a worker
# is started once per test process and lent to each test that asks for the same one. Between
# tests it is stopped (SIGSTOP) with no task of its own left, so it takes nothing of the
# tests in between, and says nothing in Redis; each test still gets an empty database and
# Redis. A worker that was not given back idle (a test failed, a task still ran) is ended.

@dataclasses.dataclass
class _Shared:
    process: subprocess.Popen
    log: Path
    hostname: str
    redis_url: str
    queues: tuple[str, ...]
    lent_at: int = 0  # where the log stood when the worker was last lent
    lent: bool = True
    settled: bool = False  # done starting its sandboxes (see _settled)
    # The queues' bindings to their exchanges, as the worker left them: it declared each
    # once and routes the tasks it sends by them, and each test's Redis starts empty.
    bindings: dict[bytes, set[bytes]] = dataclasses.field(default_factory=dict)


_shared: dict[tuple, _Shared] = {}
_IDLE_KEPT = 4  # workers kept stopped per test process; the least recently lent goes first
_TASK_EVENT = re.compile(r"Task [\w.]+\[([0-9a-f-]{36})\] (\w+)")


def shared_worker(tmp_path: Path, name: str = "worker", *, queues: str = "cpu",
                  env: dict | None = None) -> subprocess.Popen:
    """A ready worker as `start_worker` gives, lent by this test process to each test that
    asks for one with the same name, queues and environment; `stop` gives it back. Its log
    is `tmp_path`/name.log too (a link to the worker's one log). Its clock is the real time
    until `move_worker_clock` moves it (unless `env` sets GRADER_NOW)."""
    clock_file = worker_clock(tmp_path)
    clock_file.write_text("")
    deployment = {name: value for name, value in lent_settings(tmp_path).items() if name not in os.environ}
    env = {"GRADER_NOW": f"@{clock_file}", **deployment, **(env or {})}
    environment = {**os.environ, **env}
    redis_url = environment.get("GRADER_REDIS_URL", "")
    key = (name, queues, tuple(sorted((k, v) for k, v in environment.items() if not k.startswith("PYTEST_"))))
    if not redis_url or environment.get("GRADER_LOG_FORMAT") == "json":  # its log is read as text
        return start_worker(tmp_path, name, queues=queues, env=env)
    shared = _shared.get(key)
    if shared is not None and shared.lent:  # a second one at once: the test's own
        return start_worker(tmp_path, name, queues=queues, env=env)
    if shared is not None and shared.process.poll() is not None:
        _end(key)
        shared = None
    link = tmp_path / f"{name}.log"
    link.unlink(missing_ok=True)
    if shared is None:
        # Its log outlives the test's folder: in the test process's own, beside the tests' folders.
        folder = Path(tempfile.mkdtemp(prefix="kept-worker-", dir=tmp_path.parent))
        process = start_worker(folder, name, queues=queues, env=env)
        _shared[key] = _Shared(process, folder / f"{name}.log", f"{name}@{socket.gethostname()}", redis_url,
                               tuple(queues.split(",")))
        link.symlink_to(folder / f"{name}.log")
        return process
    _shared[key] = _shared.pop(key)  # the most recently lent last
    link.symlink_to(shared.log)
    shared.lent_at, shared.lent = shared.log.stat().st_size, True
    _woken(shared)
    return shared.process


def lent_settings(tmp_path: Path) -> dict[str, str]:
    """What every lent worker runs with where the test's environment does not say: the
    tests' deployment, whose LMSs and webhook receivers listen on 127.0.0.1 over plain http
    and whose failed deliveries are retried within a second, and one bundle cache per test
    process (its folders are named by the bundle's hash). Tests that differ only in these
    then share a worker; a test of a refusal says so (a flag set to "0")."""
    return {"GRADER_RETRY_BASE_S": "0.5", "GRADER_LTI_ALLOW_HTTP": "1", "GRADER_OUTBOUND_ALLOW_PRIVATE": "1",
            "GRADER_WEBHOOK_ALLOW_PRIVATE": "1", "GRADER_BUNDLE_CACHE": str(tmp_path.parent / "bundle-cache")}


def worker_clock(tmp_path: Path) -> Path:
    """The file the clocks of this test process's lent workers read (GRADER_NOW=@file, see
    grader/clock.py): moving it moves the time of a running worker, which is then lent on
    rather than started again for another time."""
    return tmp_path.parent / "worker-clock"


def move_worker_clock(tmp_path: Path, moment: datetime) -> None:
    """The lent workers' time is ``moment`` from now on, until a worker is lent again
    (`shared_worker` sets it back to the real time)."""
    worker_clock(tmp_path).write_text(moment.isoformat())


def _woken(shared: _Shared) -> None:
    """The worker going on, with its bindings back, once it says in Redis again that it is
    up (as a new one has once ready): its heartbeat thread, woken, says so at once."""
    import redis as redis_py

    from grader.tasks import _WORKERS  # where each worker says it is up

    with redis_py.Redis.from_url(shared.redis_url) as client:
        for key, members in shared.bindings.items():
            client.sadd(key, *members)
        shared.process.send_signal(signal.SIGCONT)
        deadline = time.monotonic() + 30
        while not client.hexists(_WORKERS, shared.hostname):
            assert shared.process.poll() is None and time.monotonic() < deadline, \
                shared.log.read_text()[-3000:]
            time.sleep(0.01)


def _settled(shared: _Shared) -> bool:
    """Whether the worker is done starting its sandboxes ahead of the first grade: stopped
    halfway, its wait for them would run out while it is stopped."""
    shared.settled = shared.settled or "ahead of the first grade" in shared.log.read_text(errors="replace")
    return shared.settled


def _pending_tasks(shared: _Shared) -> set[str]:
    """The tasks the worker received since it was lent and has not finished (held for a
    countdown, or running)."""
    with open(shared.log, "rb") as log:
        log.seek(shared.lent_at)
        text = log.read().decode(errors="replace")
    pending = set()
    for task_id, event in _TASK_EVENT.findall(text):
        (pending.add if event == "received" else pending.discard)(task_id)
    return pending


def _give_back(key: tuple, shared: _Shared) -> None:
    """Once every task the worker received has finished (as a warm shutdown waits for
    them) and its queues are empty, stop it until the next test's; a worker that does not
    come to rest within 20 s is stopped for good."""
    import redis as redis_py

    from grader.tasks import _WORKERS

    with redis_py.Redis.from_url(shared.redis_url) as client:
        deadline, quiet = time.monotonic() + 20, 0
        while quiet < 2:  # twice in a row: a task popped as we looked is seen the next time
            idle = _settled(shared) and not _pending_tasks(shared) and not any(client.llen(q) for q in shared.queues)
            quiet = quiet + 1 if idle else 0
            if time.monotonic() > deadline or shared.process.poll() is not None:
                _end(key)
                return
            time.sleep(0.05)
        shared.process.send_signal(signal.SIGSTOP)
        while _state(shared.process) not in ("T", "Z", None):  # stopped, or died meanwhile
            time.sleep(0.005)
        # A BRPOP it sent before it stopped would take the next test's task into a stopped
        # process: the server ends each at once, as if it had timed out.
        unblocked = 1
        while unblocked:
            time.sleep(0.02)  # a command still on its way to the server
            unblocked = 0
            for line in client.client_list():
                if "b" in line.get("flags", "") and line.get("cmd") == "brpop":
                    unblocked += client.client_unblock(line["id"])
        client.hdel(_WORKERS, shared.hostname)
        shared.bindings = {name: client.smembers(name) for name in client.scan_iter(b"_kombu.binding.*")}
    shared.lent = False


def _state(process: subprocess.Popen) -> str | None:
    """The process's state as the kernel says (R, S, T for stopped, Z for dead...); None once
    it is gone."""
    try:
        return Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def _end(key: tuple) -> None:
    """End the worker: one lent and never given back at once (its test failed mid-way,
    as one a test started and did not stop is), a stopped one as a warm shutdown does."""
    shared = _shared.pop(key)
    if shared.process.poll() is None:
        if shared.lent:
            shared.process.kill()
            shared.process.wait()
        else:
            shared.process.send_signal(signal.SIGCONT)
            _stop_for_good(shared.process)


def end_shared_workers(*, all_of_them: bool) -> None:
    """Between tests: end the workers lent and never given back (their test failed), and,
    with `all_of_them`, every other."""
    for key in [key for key, shared in _shared.items() if shared.lent or all_of_them]:
        _end(key)


def _fewer_kept() -> None:
    """Past the number kept, end the stopped workers lent least recently."""
    kept = [key for key, shared in _shared.items() if not shared.lent]
    for key in kept[:max(0, len(kept) - _IDLE_KEPT)]:
        _end(key)


def is_kept(process: subprocess.Popen) -> bool:
    """Whether the process is a worker kept stopped between tests."""
    return any(shared.process is process and not shared.lent for shared in _shared.values())


def stop(process: subprocess.Popen) -> None:
    """Stop a worker as a warm shutdown does; one lent by `shared_worker` is given back."""
    key = next((key for key, shared in _shared.items() if shared.process is process), None)
    if key is None:
        _stop_for_good(process)
    elif _shared[key].lent:  # stopping one already given back changes nothing
        _give_back(key, _shared[key])
        _fewer_kept()


def _stop_for_good(process: subprocess.Popen) -> None:
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
