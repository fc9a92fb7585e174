"""Grading latency: the warm engine against a naive grader, in the same run.

The naive grader is what most graders do: per submission, a fresh
``python -m pytest`` in the same bubblewrap sandbox, with the student's module
imported into the test process (so it also lacks our isolation). Both grade
the same batch of autograd-basics submissions (the reference and its mutants).

    .venv/bin/python bench/engine_latency.py [--n 60] [--baseline-n 12] [--exercise SLUG]

The warm engine is measured twice: with a short idle time before each submission
(a worker that is not saturated, which forks its next children while idle) and
back to back (saturated: every fork is on the path). Prints p50/p95 of each,
the back-to-back throughput, the CPU per grade over every process of the machine
in a back-to-back pass of its own (run it on an otherwise idle machine), and the
ratios of the medians to the naive p50.
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

from grader import catalog  # noqa: E402
from grader.engine import grade  # noqa: E402
from grader.engine.bwrap import bwrap_command  # noqa: E402
from grader.settings import settings  # noqa: E402

# The naive grader's student fixture: calls the submission in the test's own process.
NAIVE_CONFTEST = '''
import pytest, submission
from grader.inside import wire
from grader.testing import Call, StudentError

class InProcessStudent:
    def call(self, function, *args, **kwargs):
        args, kwargs = wire.to_sandbox(list(args)), wire.to_sandbox(dict(kwargs))
        try:
            value = getattr(submission, function)(*args, **kwargs)
        except Exception as exc:
            raise StudentError("exception", function, str(exc))
        tree, blob = wire.encode({"value": value, "args": args, "kwargs": kwargs})
        out = wire.decode(tree, blob)
        return Call(out["value"], out["args"], out["kwargs"])

@pytest.fixture
def student():
    return InProcessStudent()
'''


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def submissions(exercise: catalog.Bundle) -> list[tuple[str, str]]:
    files = [exercise.file("solution.py")] + sorted((exercise.path / "mutants").glob("*.py"))
    return [(f.stem, f.read_text()) for f in files]


def warm(exercise, batch: list[tuple[str, str]], n: int, gap_s: float = 0.0) -> list[float]:
    """gap_s: idle time before each submission (a worker that is not saturated)."""
    grade(exercise, batch[0][1])  # start the sandbox: a worker does this once
    times = []
    for i in range(n):
        time.sleep(gap_s)
        start = time.perf_counter()
        grade(exercise, batch[i % len(batch)][1])
        times.append((time.perf_counter() - start) * 1000)
    return times


def machine_busy_s() -> float:
    """CPU seconds the whole machine has spent on anything but idling (/proc/stat): the
    grades' CPU over every process (this one, both sandboxes' warm processes and all they
    fork), on a machine otherwise idle."""
    with open("/proc/stat") as stat:
        ticks = [int(v) for v in stat.readline().split()[1:]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")  # less idle and iowait


def naive(exercise, batch: list[tuple[str, str]], n: int) -> list[float]:
    times = []
    uid = settings().sandbox_uid
    for i in range(n):
        name, source = batch[i % len(batch)]
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            shutil.copytree(exercise.tests_dir, work / "tests")
            (work / "tests" / "conftest.py").write_text(NAIVE_CONFTEST)
            (work / "submission.py").write_text(source)
            cmd = bwrap_command(cuda=False, uid=uid,
                                # The naive grader runs the hidden tests in the sandbox, so it
                                # needs the whole package (the real one mounts only inside/).
                                extra=["--ro-bind", str(work), "/opt/naive",
                                       "--perms", "0755", "--dir", "/opt/naive-grader",
                                       "--ro-bind", str(ROOT / "grader"), "/opt/naive-grader/grader",
                                       "--setenv", "PYTHONPATH", "/opt/naive-grader:/opt/naive"],
                                argv=["-m", "pytest", "-q", "-p", "no:cacheprovider",
                                      "-p", "grader.testing", "/opt/naive/tests"])
            start = time.perf_counter()
            run = subprocess.run(cmd, capture_output=True, text=True)
            times.append((time.perf_counter() - start) * 1000)
            if "passed" not in run.stdout and "failed" not in run.stdout:
                raise SystemExit(f"the naive grader did not run: {run.stdout[-800:]}{run.stderr[-800:]}")
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=60, help="submissions graded by the warm engine")
    parser.add_argument("--baseline-n", type=int, default=12, help="submissions graded by the naive grader")
    parser.add_argument("--exercise", default="autograd-basics")
    parser.add_argument("--gap-ms", type=int, default=200,
                        help="idle time before each submission in the unsaturated run")
    args = parser.parse_args()

    exercise = catalog.find(args.exercise)
    batch = submissions(exercise)
    started = time.perf_counter()
    saturated_ms = warm(exercise, batch, args.n)
    throughput = args.n / (time.perf_counter() - started)
    idle_ms = warm(exercise, batch, args.n, gap_s=args.gap_ms / 1000)
    # CPU in a pass of its own, back to back, once the warm processes have folded their heaps
    # (which they do while idle, in the runs above): no idle gap adds the machine's own noise.
    busy = machine_busy_s()
    warm(exercise, batch, args.n)
    cpu_ms = (machine_busy_s() - busy) * 1000 / (args.n + 1)  # warm() grades once more first
    naive_ms = naive(exercise, batch, args.baseline_n)
    print(f"exercise {exercise.slug}: {len(batch)} distinct submissions (reference + mutants)")
    print(f"{'grader':<40}{'n':>5}{'p50 ms':>10}{'p95 ms':>10}{'mean ms':>10}")
    rows = ((f"warm engine, {args.gap_ms} ms idle before each", idle_ms),
            ("warm engine, back to back", saturated_ms),
            ("naive pytest per submission", naive_ms))
    for label, ms in rows:
        print(f"{label:<40}{len(ms):>5}{percentile(ms, .5):>10.1f}{percentile(ms, .95):>10.1f}"
              f"{statistics.mean(ms):>10.1f}")
    print(f"throughput back to back: {throughput:.1f} submissions/s (one worker)")
    print(f"CPU per grade, every process on the machine (back to back, after the runs above): {cpu_ms:.0f} ms")
    for label, ms in rows[:2]:
        print(f"speed-up at p50, {label}: {percentile(naive_ms, .5) / percentile(ms, .5):.1f}x")


if __name__ == "__main__":
    main()
