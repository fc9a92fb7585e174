"""Regrades: how fast a worker grades an assignment again, and what a regrade in progress
costs the live submissions meanwhile (its queue is taken only when no live submission waits).

The whole service for real, as bench/service_latency.py runs it (a redis-server of its own,
SQLite, gunicorn, Celery workers with -Q cpu,cpu-regrade). An assignment of autograd-basics
holds --n graded sources (the reference and its mutants, stored as graded); a regrade of them
all is started through the API.

    .venv/bin/python bench/regrade_throughput.py [--n 500] [--live 20] [--workers 2]

Prints the regrade's throughput with 1..--workers workers (sources per second, and the ratio to
one worker), and the submit-to-report latency p50/p95 of --live sequential live submissions
with no regrade and while a regrade of --n runs, with their ratio.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from service_latency import Api, Service, percentile, with_service  # noqa: E402

from grader import catalog, db  # noqa: E402
from grader.accounts import keys  # noqa: E402
from grader.accounts.models import User  # noqa: E402
from grader.catalog.publishing import publish  # noqa: E402
from grader.courses import assignments as courses  # noqa: E402
from grader.engine import grade  # noqa: E402
from grader.engine.grading import shutdown  # noqa: E402
from grader.submissions.models import SubmissionStatus  # noqa: E402


def class_of(service: Service, n: int) -> tuple[int, str]:
    """An assignment with n graded sources (stored as the engine graded each kind once)."""
    exercise = catalog.find("autograd-basics")
    sources = [exercise.file("solution.py").read_text()] + [
        p.read_text() for p in sorted((exercise.path / "mutants").glob("*.py"))]
    reports = [grade(exercise, source) for source in sources]
    shutdown()
    with db.transaction(service.database_url) as s:
        row, key = keys.create(s, ["grades:read", "grades:write", "submissions:write", "submissions:read"],
                               name="bench")
        course = courses.create_course(s, title="Bench", code="BENCH", api_key_id=row.id)
        students = [User(email=f"s{i}@bench", name=f"s{i}", role="student") for i in range(n)]
        s.add_all(students)
        s.flush()
        courses.import_roster(s, course, [{"email": u.email, "role": "student"} for u in students])
        assignment = courses.create_assignment(s, course, exercise="autograd-basics", due_at="2099-01-01T00:00+00:00")
        for i, user in enumerate(students):
            row = courses.submit(s, user=user, assignment=assignment, source=sources[i % len(sources)])
            report = reports[i % len(sources)]
            row.status, row.score, row.max_score, row.report = (SubmissionStatus.GRADED, report.score,
                                                                 report.max_score, report.to_dict())
        return assignment.id, key


def regrade(api: Api, assignment_id: int) -> tuple[int, float]:
    status, data = api.request("POST", f"/api/v1/assignments/{assignment_id}/regrades")
    if status != 202:
        raise SystemExit(f"POST regrades answered {status}: {data}")
    return data["id"], time.perf_counter()


def wait_ready(api: Api, regrade_id: int) -> dict:
    while True:
        status, data = api.request("GET", f"/api/v1/regrades/{regrade_id}")
        if data["status"] != "running":
            return data
        time.sleep(0.2)


def discard(api: Api, regrade_id: int) -> None:
    api.request("POST", f"/api/v1/regrades/{regrade_id}/discard")


def live(api: Api, source: str, k: int) -> list[float]:
    times = []
    for _ in range(k):
        time.sleep(0.05)
        started = time.perf_counter()
        api.wait(api.submit(source))
        times.append((time.perf_counter() - started) * 1000)
    return times


def run(args, service: Service) -> None:
    service.start_redis()
    db.upgrade(service.database_url)
    exercise = catalog.find("autograd-basics")
    if publish([exercise], service.database_url):
        raise SystemExit("autograd-basics could not be published")
    assignment_id, key = class_of(service, args.n)
    db.engine_for(service.database_url).dispose()
    source = exercise.file("solution.py").read_text()
    api = Api(service.start_web(), key)
    workers = [service.start_worker(1)]
    live(api, source, 3)  # the worker's first grade starts its sandboxes

    throughput = {}
    for count in range(1, args.workers + 1):
        while len(workers) < count:
            workers.append(service.start_worker(len(workers) + 1))
            live(api, source, 2 * count)
        regrade_id, started = regrade(api, assignment_id)
        data = wait_ready(api, regrade_id)
        throughput[count] = data["progress"]["total"] / (time.perf_counter() - started)
        discard(api, regrade_id)
        print(f"  {count} worker(s): {data['progress']['total']} sources regraded", file=sys.stderr)

    quiet = live(api, source, args.live)
    regrade_id, _ = regrade(api, assignment_id)
    busy = live(api, source, args.live)
    status, data = api.request("GET", f"/api/v1/regrades/{regrade_id}")
    behind = data["progress"]
    discard(api, regrade_id)

    print(f"a regrade of {args.n} autograd-basics sources (the reference and its mutants)")
    for count, rate in throughput.items():
        print(f"regrade throughput, {count} worker(s): {rate:.1f} sources/s"
              + ("" if count == 1 else f"  ({rate / throughput[1]:.2f}x one worker)"))
    print(f"{'live submit to report, ' + str(len(workers)) + ' worker(s)':<44}{'n':>5}{'p50 ms':>10}{'p95 ms':>10}")
    for label, ms in (("no regrade running", quiet), (f"a regrade of {args.n} running", busy)):
        print(f"{label:<44}{len(ms):>5}{percentile(ms, .5):>10.1f}{percentile(ms, .95):>10.1f}")
    print(f"while the live ones ran the regrade got {behind['done']} of {behind['total']} done; "
          f"p50 ratio busy/quiet: {percentile(busy, .5) / percentile(quiet, .5):.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=500, help="sources the regrade grades again")
    parser.add_argument("--live", type=int, default=20, help="live submissions measured each way")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    if shutil.which("redis-server") is None:
        raise SystemExit("redis-server is not installed")
    with_service(run, args)


if __name__ == "__main__":
    main()
