"""Soak: one worker grading thousands of mixed submissions, watched for leaks.

The whole service for real, as bench/service_latency.py runs it (a redis-server of its own,
SQLite, gunicorn, one Celery worker with one grading process), every exercise of the
catalogue published. Submissions go in through the API in a cycle over every exercise's
reference solution and mutants, with a file of tests/attacks/ (sent to autograd-basics) every
--attack-every submissions; at most --window wait at a time.

    .venv/bin/python bench/soak.py [--n 2000] [--every 250] [--window 8] [--attack-every 10]

Every --every submissions, once those waiting are graded, it prints one row: the worker's RSS
(its Celery processes), the two warm sandbox processes' RSS, the worker's open file
descriptors, the processes below the worker, the warm sandbox processes seen so far (a new pid
is a restart) and the sandbox failures its log reports. At the end: the change of each from
the row after warm-up (the second) to the last, and every verdict that was wrong:
  - a reference solution must score full marks;
  - a mutant must fail exactly the tests its mutants.toml declares;
  - an attack must end graded (never "could not grade"), and with the same score each time it
    comes round (most hold a right answer beside their attack: what must not change is the
    verdict, whatever the submissions before it left behind).
Then the service's /metrics (the web app and the worker count into one multiprocess folder).
Exits 1 if a verdict was wrong or anything grew by more than 10 % after warm-up.
"""

from __future__ import annotations

import argparse
import http.client
import os
import shutil
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from service_latency import Api, Service  # noqa: E402

from grader import catalog, db  # noqa: E402
from grader.accounts import keys  # noqa: E402
from grader.catalog.publishing import publish  # noqa: E402
from grader.engine.grading import shutdown  # noqa: E402

ATTACKS = ROOT / "tests" / "attacks"
SANDBOX_UID = 64000  # the worker's sandboxes run as 64000..64003 (see GRADER_SANDBOX_UID)
WARM_UIDS = {"student": SANDBOX_UID, "exercise": SANDBOX_UID + 2}
PAGE = os.sysconf("SC_PAGE_SIZE")
GROWTH_ALLOWED = 0.10
# After a grade the warm processes fork the children that wait for the next calls: counted
# once that is over, the processes below the worker are the same at every idle moment.
SETTLE_S = 2.0


@dataclass(frozen=True)
class Case:
    kind: str          # solution, mutant or attack
    exercise: str
    name: str
    source: str
    fails: frozenset = frozenset()


def cases() -> tuple[list[Case], list[Case]]:
    graded, attacks = [], []
    for bundle in catalog.all_bundles(ROOT / "exercises"):
        graded.append(Case("solution", bundle.slug, "solution", bundle.read("solution.py")))
        declared = tomllib.loads(bundle.read("mutants/mutants.toml"))
        for name, spec in sorted(declared.items()):
            graded.append(Case("mutant", bundle.slug, name, bundle.read(f"mutants/{name}.py"),
                               frozenset(spec.get("fails", []))))
    for path in sorted(ATTACKS.glob("*.py")):
        attacks.append(Case("attack", "autograd-basics", path.stem, path.read_text(encoding="utf-8")))
    return graded, attacks


def wrong(case: Case, data: dict) -> str | None:
    """Why this verdict is wrong, or None."""
    status, score, most = data.get("status"), data.get("score"), data.get("max_score")
    if status != "graded":
        return f"ended {status}: {data.get('failure_reason') or data.get('report', {}).get('message')}"
    if case.kind == "solution" and score != most:
        return f"scored {score} of {most}"
    if case.kind == "mutant":
        failed = {t["id"].rsplit("::", 1)[-1] for t in data["report"]["tests"] if not t["passed"]}
        if failed != case.fails:
            return f"failed {sorted(failed)}, declared {sorted(case.fails)}"
    if case.kind == "attack":
        first = _attack_scores.setdefault(case.name, score)
        if score != first:
            return f"scored {score}, and {first} the first time"
    return None


_attack_scores: dict[str, float] = {}


# ------------------------------------------------------------------ what the worker holds

def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, uid) of a process, or None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[1]), Path(f"/proc/{pid}").stat().st_uid
    except (OSError, IndexError, ValueError):
        return None


def _rss(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE
    except (OSError, IndexError, ValueError):
        return 0


def _fds(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def below(root: int) -> dict[int, int]:
    """Every process below ``root`` (root included): pid -> uid."""
    table = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (stat := _stat(int(entry))) is not None:
            table[int(entry)] = stat
    found, todo = {}, [root]
    while todo:
        pid = todo.pop()
        if pid in table and pid not in found:
            found[pid] = table[pid][1]
            todo.extend(p for p, (parent, _) in table.items() if parent == pid)
    return found


@dataclass
class Watch:
    worker_pid: int
    log: Path
    warm_pids: dict[str, set] = field(default_factory=lambda: {room: set() for room in WARM_UIDS})
    rows: list[dict] = field(default_factory=list)

    def sample(self, done: int, seconds: float) -> dict:
        tree = below(self.worker_pid)
        own = [pid for pid, uid in tree.items() if uid == os.getuid() and _comm(pid) != "bwrap"]
        warm = []
        for room, uid in WARM_UIDS.items():
            mine = [pid for pid, owner in tree.items() if owner == uid]
            if mine:  # the room's oldest process is its warm one; the others are its calls' children
                warm.append(min(mine, key=_started))
                self.warm_pids[room].add(warm[-1])
        row = {"done": done, "seconds": seconds,
               "worker_mb": sum(map(_rss, own)) / 2**20, "sandbox_mb": sum(map(_rss, warm)) / 2**20,
               "fds": sum(map(_fds, own)), "processes": len(tree),
               "warm_seen": sum(len(p) for p in self.warm_pids.values()),
               "sandbox_failures": self.log.read_text(errors="replace").count("sandbox failed")}
        self.rows.append(row)
        return row


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _started(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return 1 << 62


# ------------------------------------------------------------------ the run

COLUMNS = ("done", "seconds", "worker_mb", "sandbox_mb", "fds", "processes", "warm_seen", "sandbox_failures")


def show(row: dict) -> str:
    return "  ".join(f"{row[c]:>{len(c)}.1f}" if isinstance(row[c], float) else f"{row[c]:>{len(c)}}"
                     for c in COLUMNS)


def run(args: argparse.Namespace, service: Service) -> int:
    graded, attacks = cases()
    service.env.update({"GRADER_SANDBOX_UID": str(SANDBOX_UID), "GRADER_API_KEY_RATE_LIMIT": "1000000 per minute",
                        # the web app's and the worker's processes all count into one folder:
                        # the web's /metrics then shows the whole service
                        "PROMETHEUS_MULTIPROC_DIR": str(service.workdir / "metrics")})
    service.start_redis()
    db.upgrade(service.database_url)
    failed = publish(catalog.all_bundles(ROOT / "exercises"), service.database_url)
    shutdown()  # publishing graded in this process: its sandboxes are not the worker's
    if failed:
        raise SystemExit(f"could not publish: {failed}")
    with db.transaction(service.database_url) as session:
        key = keys.create(session, ["submissions:write", "submissions:read"], name="soak")[1]
    db.engine_for(service.database_url).dispose()
    api = Api(service.start_web(), key)
    log = service.start_worker(1, queues="cpu")
    worker = next(p for name, p, _ in service.children if name == "worker1")
    watch = Watch(worker.pid, log)

    plan = []
    for i in range(args.n):
        if args.attack_every and i % args.attack_every == args.attack_every - 1:
            plan.append(attacks[(i // args.attack_every) % len(attacks)])
        else:
            plan.append(graded[i % len(graded)])
    print(f"{args.n} submissions: {len(graded)} references and mutants of {len({c.exercise for c in graded})} "
          f"exercises in turn, an attack of {len(attacks)} every {args.attack_every}; one worker")
    print("  ".join(COLUMNS))
    mistakes, waiting, started = [], [], time.perf_counter()
    for i, case in enumerate(plan):
        status, data = api.request("POST", "/api/v1/submissions",
                                   {"exercise": case.exercise, "source": case.source, "user": "soak"})
        if status != 202:
            raise SystemExit(f"POST /api/v1/submissions answered {status} for {case.kind} {case.name}: {data}")
        waiting.append((case, data["id"]))
        sampling = (i + 1) % args.every == 0 or i == len(plan) - 1
        while len(waiting) >= args.window or (sampling and waiting):  # sampled idle, all graded
            case_done, submission_id = waiting.pop(0)
            result = finished(api, submission_id)
            if (why := wrong(case_done, result)) is not None:
                mistakes.append(f"{case_done.kind} {case_done.exercise}/{case_done.name}: {why}")
        if sampling:
            time.sleep(SETTLE_S)
            print(show(watch.sample(i + 1, time.perf_counter() - started)), flush=True)
    code = report(watch.rows, mistakes)
    print("/metrics after the soak (histogram buckets left out):")
    for line in metrics(api.port).splitlines():
        if line.startswith("grader_") and "_bucket{" not in line:
            print(f"  {line}")
    return code


def metrics(port: int) -> str:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request("GET", "/metrics")
    return connection.getresponse().read().decode()


def finished(api: Api, submission_id: str) -> dict:
    while True:
        status, data = api.request("GET", f"/api/v1/submissions/{submission_id}")
        if status != 200:
            raise SystemExit(f"GET /api/v1/submissions/{submission_id} answered {status}: {data}")
        if data["status"] in ("graded", "failed"):
            return data
        time.sleep(0.02)


def report(rows: list[dict], mistakes: list[str]) -> int:
    grew = []
    if len(rows) >= 3:
        first, last = rows[1], rows[-1]  # the first row is the warm-up
        print(f"after warm-up (from {first['done']} to {last['done']} submissions):")
        for column in ("worker_mb", "sandbox_mb", "fds", "processes"):
            ratio = last[column] / first[column] if first[column] else float("inf") if last[column] else 1.0
            print(f"  {column}: {first[column]:.1f} -> {last[column]:.1f} (ratio {ratio:.3f})")
            if ratio > 1 + GROWTH_ALLOWED:
                grew.append(column)
        print(f"  warm sandbox processes seen: {last['warm_seen']} (2 = never restarted); "
              f"sandbox failures logged: {last['sandbox_failures']}")
    print(f"wrong verdicts: {len(mistakes)}")
    for line in mistakes[:50]:
        print(f"  {line}")
    if grew:
        print(f"grew by more than {GROWTH_ALLOWED:.0%}: {', '.join(grew)}")
    return 1 if mistakes or grew else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--every", type=int, default=250)
    parser.add_argument("--window", type=int, default=8, help="submissions waiting at most at once")
    parser.add_argument("--attack-every", type=int, default=10)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="grader-soak-"))
    service = Service(workdir)
    code = 1
    try:
        code = run(args, service)
    finally:
        service.close()
        shutil.rmtree(workdir, ignore_errors=True)
    sys.exit(code)


if __name__ == "__main__":
    main()
