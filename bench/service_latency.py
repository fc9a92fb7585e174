"""Service latency: a submission through the whole service over HTTP, against the engine alone.

Everything runs for real, in a temporary directory: a redis-server of its own on a free
port, a migrated SQLite database with autograd-basics published, an API key, the web app
under gunicorn (as ``grader up`` runs it) and Celery worker processes. A client submits
autograd-basics' solution with POST /api/v1/submissions and polls
GET /api/v1/submissions/<id> until the report is there: every 10 ms for the latency of
one submission at a time; for a burst's throughput, as the service's own pages and client
do (after 0.3 s, then each time 1.2 times later; a client asking every 10 ms took a fifth of
the two CPUs the burst needs), its time then read from the reports' own finish times.

    .venv/bin/python bench/service_latency.py [--n 30] [--burst 40] [--workers 2]

Prints the submit-to-report latency (p50/p95/max) of sequential submissions with one
worker; the throughput of a burst with 1..--workers workers and its ratio to one worker;
and the service's overhead: its p50 over the p50 of grader.engine.grade() of the same
source in this process, with the same idle time before each submission.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader import catalog, db  # noqa: E402
from grader.accounts import keys  # noqa: E402
from grader.engine import grade  # noqa: E402
from grader.engine.grading import shutdown  # noqa: E402
from grader.catalog.publishing import publish  # noqa: E402
from grader.submissions.models import Submission  # noqa: E402
from grader.up import _gunicorn_extras  # noqa: E402

POLL_S = 0.010
# As the service's pages poll (grader/static/submission.js): after 0.3 s, each pause 1.2 times the last, at most 2 s.
PAGE_POLL_S, PAGE_POLL_GROWTH, PAGE_POLL_MAX_S = 0.3, 1.2, 2.0
START_TIMEOUT_S = 180  # a worker's first start imports torch; slow on a busy machine
SUCCEEDED = re.compile(r"Task grader\.grade_submission\[[^]]+\] succeeded")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Service:
    """The processes this benchmark started; close() stops every one of them."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.children: list[tuple[str, subprocess.Popen, Path]] = []
        self.redis_url = f"redis://127.0.0.1:{free_port()}/0"
        self.database_url = f"sqlite:///{workdir / 'grader.db'}"
        self.env = {**os.environ, "GRADER_DATABASE_URL": self.database_url, "GRADER_REDIS_URL": self.redis_url,
                    "GRADER_SECRET_KEY": secrets.token_hex(32),  # else the web app writes ./instance/
                    "GRADER_SUBMISSION_RATE_LIMIT": "1000000 per minute",  # the benchmark is one user
                    "GRADER_GPU_QUEUE": "0", "PYTHONUNBUFFERED": "1"}

    def start(self, name: str, argv: list[str]) -> tuple[subprocess.Popen, Path]:
        log = self.workdir / f"{name}.log"
        # A session of its own: Ctrl-C reaches only this script, which then stops the
        # child's whole group (gunicorn's and Celery's own children with it).
        process = subprocess.Popen(argv, cwd=ROOT, env=self.env, stdin=subprocess.DEVNULL,
                                   stdout=open(log, "wb"), stderr=subprocess.STDOUT, start_new_session=True)
        self.children.append((name, process, log))
        return process, log

    def wait_for(self, name: str, process: subprocess.Popen, log: Path, ready) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not ready():
            if process.poll() is not None or time.monotonic() > deadline:
                tail = log.read_text(errors="replace")[-3000:]
                raise SystemExit(f"{name} did not start; the end of its log:\n{tail}")
            time.sleep(0.1)

    def start_redis(self) -> None:
        port = self.redis_url.rsplit(":", 1)[1].split("/")[0]
        process, log = self.start("redis", [shutil.which("redis-server") or "redis-server", "--port", port,
                                            "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                                            "--dir", str(self.workdir)])
        self.wait_for("redis-server", process, log, lambda: listens(int(port)))

    def start_web(self) -> str:
        port = free_port()
        process, log = self.start("web", [
            sys.executable, "-m", "gunicorn", "--bind", f"127.0.0.1:{port}", "--workers", "1",
            "--worker-class", "gthread", "--threads", "8", "--graceful-timeout", "5",
            "--access-logfile", "-", "--error-logfile", "-", *_gunicorn_extras(), "grader.app:create_app()"])
        self.wait_for("gunicorn", process, log, lambda: Api(port, "").status("/api/v1/openapi.json") == 200)
        return port

    def start_worker(self, number: int, queues: str = "cpu,cpu-regrade") -> Path:
        # As `grader up` runs its worker: the prefork pool with one grading process.
        process, log = self.start(f"worker{number}", [
            sys.executable, "-m", "celery", "-A", "grader.tasks:celery", "worker", "-Q", queues,
            "--concurrency", "1", "-n", f"bench{number}@%h", "--without-gossip", "--without-mingle",
            "-l", "info"])
        self.wait_for(f"worker {number}", process, log, lambda: " ready." in log.read_text(errors="replace"))
        return log

    def close(self) -> None:
        # Web and workers first; Redis last, so that a worker can hand back a task.
        for group in ([c for c in self.children if c[0] != "redis"], [c for c in self.children if c[0] == "redis"]):
            for _, process, _ in group:
                signal_group(process, signal.SIGTERM)
            for _, process, _ in group:
                try:
                    process.wait(10)
                except subprocess.TimeoutExpired:
                    pass
                signal_group(process, signal.SIGKILL)  # whatever of its group is left
                process.wait()
        self.children.clear()


def signal_group(process: subprocess.Popen, signum: int) -> None:
    try:
        os.killpg(process.pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def listens(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


class Api:
    """A client of /api/v1 on one kept-alive connection (http.client: no proxy applies)."""

    def __init__(self, port: int, key: str):
        self.port, self.headers = port, {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        self.connection: http.client.HTTPConnection | None = None

    def request(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        for attempt in (1, 2):  # gunicorn closes idle kept-alive connections: reconnect once
            if self.connection is None:
                self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            try:
                self.connection.request(method, path, body=None if body is None else json.dumps(body),
                                        headers=self.headers)
                response = self.connection.getresponse()
                data = response.read()
                return response.status, (json.loads(data) if data else {})
            except (OSError, http.client.HTTPException):
                self.connection.close()
                self.connection = None
                if attempt == 2:
                    raise

    def status(self, path: str) -> int | None:
        try:
            return self.request("GET", path)[0]
        except (OSError, http.client.HTTPException):
            return None

    def submit(self, source: str) -> str:
        status, data = self.request("POST", "/api/v1/submissions",
                                    {"exercise": "autograd-basics", "source": source, "user": "bench"})
        if status != 202:
            raise SystemExit(f"POST /api/v1/submissions answered {status}: {data}")
        return data["id"]

    def wait(self, submission_id: str, pause: float = POLL_S, growth: float = 1.0) -> dict:
        while True:
            status, data = self.request("GET", f"/api/v1/submissions/{submission_id}")
            if status != 200:
                raise SystemExit(f"GET /api/v1/submissions/{submission_id} answered {status}: {data}")
            if data["status"] in ("graded", "failed"):
                if data["status"] != "graded" or data["score"] != data["max_score"]:
                    raise SystemExit(f"the solution was not given full marks: {data}")
                return data
            time.sleep(pause)
            pause = min(pause * growth, PAGE_POLL_MAX_S)


def sequential(api: Api, source: str, n: int, gap_s: float) -> list[float]:
    times = []
    for _ in range(n):
        time.sleep(gap_s)
        start = time.perf_counter()
        api.wait(api.submit(source))
        times.append((time.perf_counter() - start) * 1000)
    return times


def burst(api: Api, source: str, size: int, database_url: str) -> float:
    """Submissions graded per second, from the first POST to the last report's finish time
    as the worker stored it (the polls, as a page makes them, may come later)."""
    start = datetime.now(timezone.utc)
    ids = [api.submit(source) for _ in range(size)]
    for submission_id in ids:  # oldest first, one at a time: as one page each would, more sparingly
        api.wait(submission_id, PAGE_POLL_S, PAGE_POLL_GROWTH)
    with db.transaction(database_url) as session:
        last = max(session.get(Submission, submission_id).finished_at for submission_id in ids)
    if last.tzinfo is None:  # SQLite keeps no offset: the worker stored UTC
        last = last.replace(tzinfo=timezone.utc)
    return size / (last - start).total_seconds()


def direct(exercise: catalog.Bundle, source: str, n: int, gap_s: float) -> list[float]:
    times = []
    for _ in range(n):
        time.sleep(gap_s)
        start = time.perf_counter()
        report = grade(exercise, source)
        times.append((time.perf_counter() - start) * 1000)
        if report.status != "graded" or report.score != report.max_score:
            raise SystemExit(f"the solution was not given full marks in-process: {report.status} {report.message}")
    return times


def graded_by(logs: list[Path]) -> list[int]:
    return [len(SUCCEEDED.findall(log.read_text(errors="replace"))) for log in logs]


def run(args: argparse.Namespace, service: Service) -> None:
    gap_s = args.gap_ms / 1000
    exercise = catalog.find("autograd-basics")
    source = exercise.file("solution.py").read_text(encoding="utf-8")

    service.start_redis()
    db.upgrade(service.database_url)
    if publish([exercise], service.database_url):  # grades the solution here: warms this process's sandbox
        raise SystemExit("autograd-basics could not be published")
    with db.transaction(service.database_url) as session:
        key = keys.create(session, ["submissions:write", "submissions:read"], name="bench")[1]
    db.engine_for(service.database_url).dispose()

    # The baseline first, while nothing else runs; then this process's sandbox is let go.
    direct(exercise, source, args.warmup, gap_s)
    direct_ms = direct(exercise, source, args.n, gap_s)
    shutdown()

    port = service.start_web()
    logs = [service.start_worker(1)]
    api = Api(port, key)
    sequential(api, source, args.warmup, gap_s)  # the worker's first grade starts its sandbox
    service_ms = sequential(api, source, args.n, gap_s)

    throughput = {}
    for workers in range(1, args.workers + 1):
        while len(logs) < workers:
            logs.append(service.start_worker(len(logs) + 1))
            burst(api, source, 2 * workers, service.database_url)  # the new worker takes one and starts its sandbox
        before = graded_by(logs)
        throughput[workers] = burst(api, source, args.burst, service.database_url)
        shares = [after - b for after, b in zip(graded_by(logs), before)]
        print(f"  burst of {args.burst} with {workers} worker(s): graded per worker {shares}", file=sys.stderr)

    print(f"autograd-basics solution, {args.gap_ms} ms idle before each sequential submission, "
          f"poll every {POLL_S * 1000:g} ms (a burst: as a page polls); {os.cpu_count()} CPUs")
    print(f"{'submit to report':<44}{'n':>5}{'p50 ms':>10}{'p95 ms':>10}{'max ms':>10}{'mean ms':>10}")
    for label, ms in (("service over HTTP, 1 worker", service_ms), ("grader.engine.grade() in-process", direct_ms)):
        print(f"{label:<44}{len(ms):>5}{percentile(ms, .5):>10.1f}{percentile(ms, .95):>10.1f}"
              f"{max(ms):>10.1f}{statistics.mean(ms):>10.1f}")
    print(f"service overhead at p50: {percentile(service_ms, .5) / percentile(direct_ms, .5):.2f}x the engine alone")
    for workers, rate in throughput.items():
        print(f"throughput, burst of {args.burst}, {workers} worker(s): {rate:.1f} graded/s"
              + ("" if workers == 1 else f"  ({rate / throughput[1]:.2f}x one worker)"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=30, help="sequential submissions measured")
    parser.add_argument("--warmup", type=int, default=3, help="sequential submissions before measuring")
    parser.add_argument("--burst", type=int, default=40, help="submissions in each throughput burst")
    parser.add_argument("--workers", type=int, default=2, help="throughput with 1 up to this many workers")
    parser.add_argument("--gap-ms", type=int, default=50, help="idle time before each sequential submission")
    args = parser.parse_args()
    if shutil.which("redis-server") is None:
        raise SystemExit("redis-server is not installed")

    with_service(run, args)


def with_service(run, args: argparse.Namespace) -> None:
    """``run(args, service)`` in a temporary directory; every process it started is
    stopped however it ends."""
    # All of these end the run through the cleanup below; SIGINT too, which a shell
    # leaves ignored for a job it started in the background.
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.default_int_handler)
    with tempfile.TemporaryDirectory(prefix="grader-bench-") as tmp:
        service = Service(Path(tmp))
        try:
            run(args, service)
        except KeyboardInterrupt:
            print("interrupted; stopping what was started", file=sys.stderr)
            sys.exit(130)
        finally:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut the cleanup short
            service.close()
            shutdown()


if __name__ == "__main__":
    main()
