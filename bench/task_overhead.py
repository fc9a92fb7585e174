"""What the grading task adds to a grade: its database work, Redis, logs and metrics.

In this process, against a SQLite database and a redis-server of its own in a temporary
directory: autograd-basics' solution graded ``--n`` times through the worker's task
(``grader.submissions.tasks.grade_submission``, called as a Celery worker calls it, with
no broker in between) and ``--n`` times through ``grader.engine.grade()`` alone, alternating
in rounds. Prints each one's CPU and wall time per grade, and what the task adds.

    .venv/bin/python bench/task_overhead.py [--n 40] [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from service_latency import free_port, listens  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=40, help="grades each way per round")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    if shutil.which("redis-server") is None:
        raise SystemExit("redis-server is not installed")
    with tempfile.TemporaryDirectory(prefix="grader-bench-") as tmp:
        port = free_port()
        redis = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                  "--appendonly", "no", "--dir", tmp], stdout=subprocess.DEVNULL)
        try:
            while not listens(port):
                time.sleep(0.05)
            os.environ.update(GRADER_DATABASE_URL=f"sqlite:///{tmp}/grader.db",
                              GRADER_REDIS_URL=f"redis://127.0.0.1:{port}/0", GRADER_SECRET_KEY="b" * 64)
            measure(args.n, args.rounds)
        finally:
            redis.terminate()
            redis.wait()


def measure(n: int, rounds: int) -> None:
    from grader import catalog, db, submissions
    from grader.accounts.models import User
    from grader.catalog.publishing import publish
    from grader.engine import grade
    from grader.engine.grading import shutdown
    from grader.submissions.tasks import grade_submission

    url = os.environ["GRADER_DATABASE_URL"]
    db.upgrade(url)
    exercise = catalog.find("autograd-basics")
    if publish([exercise], url):
        raise SystemExit("autograd-basics could not be published")
    with db.transaction(url) as session:
        session.add(User(email="bench@example.org", name="Bench", role="student"))
    source = exercise.file("solution.py").read_text()

    def submitted() -> str:
        with db.transaction(url) as session:
            user = session.query(User).filter_by(email="bench@example.org").one()
            return submissions.create(session, user=user, exercise_slug="autograd-basics", source=source).id

    def task(submission_id: str) -> None:
        if grade_submission(submission_id) != "graded":
            raise SystemExit("the task did not grade the solution")

    def alone(_) -> None:
        grade(exercise, source)

    try:
        for _ in range(5):  # the sandboxes start, and fork ahead
            task(submitted())
        figures: dict[str, list[tuple[float, float]]] = {"the task": [], "grade() alone": []}
        for _ in range(rounds):
            for name, one in (("the task", task), ("grade() alone", alone)):
                ids = [submitted() for _ in range(n)]  # as the web made them, outside the measure
                cpu, wall = time.process_time(), time.perf_counter()
                for submission_id in ids:
                    one(submission_id)
                figures[name].append(((time.process_time() - cpu) * 1000 / n, (time.perf_counter() - wall) * 1000 / n))
    finally:
        shutdown()
    print(f"autograd-basics solution, {n} grades each way in each of {rounds} rounds; SQLite; "
          "CPU of this process (the worker's side: the sandboxes' is not in it)")
    medians = {name: (statistics.median(c for c, _ in rows), statistics.median(w for _, w in rows))
               for name, rows in figures.items()}
    for name, (cpu, wall) in medians.items():
        print(f"  {name:<16}{cpu:>8.1f} ms CPU{wall:>10.1f} ms wall  per grade")
    (task_cpu, task_wall), (alone_cpu, alone_wall) = medians["the task"], medians["grade() alone"]
    print(f"  the task adds   {task_cpu - alone_cpu:>8.1f} ms CPU{task_wall - alone_wall:>10.1f} ms wall  per grade")


if __name__ == "__main__":
    main()
