"""What running the hidden tests in the exercise sandbox costs, against running them in
the worker's own process (how the grader ran them before; unsafe, and kept here only as
the baseline), in the same process and interleaved, so that both see the same machine.

    .venv/bin/python bench/exercise_sandbox_cost.py [--n 40] [--exercise autograd-basics]

Both grade the same batch (the reference and its mutants) with the same warm student
sandbox. Prints p50/p95 of each, the ratio of the medians, and per grade the calls made
(each of which crosses the worker twice more in the sandboxed path).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader import catalog  # noqa: E402
from grader.engine import grading  # noqa: E402
from grader.testing import harness  # noqa: E402


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class Counting(grading._Channel):
    calls = 0

    def call(self, *args, **kwargs):
        Counting.calls += 1
        return super().call(*args, **kwargs)


def in_process(exercise: catalog.Bundle, source: str) -> None:
    """The suite in this process, as before the exercise sandbox existed."""
    sandbox = grading.sandbox_for(False)
    with sandbox.lock:
        sandbox.start()
        channel = Counting(sandbox, exercise, {"submission.py": source}, "cpu",
                           deadline=time.monotonic() + exercise.limits.submission_seconds)
        before = set(sys.modules)
        try:
            run = harness.run_suite(exercise.path, channel)
        finally:
            sandbox.reset()
            for name in set(sys.modules) - before:  # the next run imports the tests afresh
                if (getattr(sys.modules[name], "__file__", None) or "").startswith(str(exercise.path)) \
                        or name.split(".")[0] == "tests":
                    sys.modules.pop(name, None)
    assert run.results and run.error is None, run.error


def sandboxed(exercise: catalog.Bundle, source: str) -> None:
    report = grading.grade(exercise, source)
    assert report.status == "graded", report.message


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=40, help="grades of each kind")
    parser.add_argument("--exercise", default="autograd-basics")
    parser.add_argument("--gap-ms", type=int, default=0,
                        help="idle time before each grade (a worker between tasks: the exercise "
                             "sandbox forks its next child then)")
    args = parser.parse_args()
    exercise = catalog.find(args.exercise)
    files = [exercise.file("solution.py")] + sorted((exercise.path / "mutants").glob("*.py"))
    batch = [f.read_text() for f in files]
    sandboxed(exercise, batch[0])  # both sandboxes warm, as in a worker that has graded once
    in_process(exercise, batch[0])
    Counting.calls = 0
    times: dict[str, list[float]] = {"in the worker's process (before)": [], "in the exercise sandbox": []}
    for i in range(args.n):
        source = batch[i % len(batch)]
        for label, run in zip(times, (in_process, sandboxed)):
            time.sleep(args.gap_ms / 1000)
            started = time.perf_counter()
            run(exercise, source)
            times[label].append((time.perf_counter() - started) * 1000)
    print(f"exercise {exercise.slug}: {len(batch)} distinct submissions, {Counting.calls / args.n:.1f} calls a grade, "
          f"{args.gap_ms} ms idle before each")
    print(f"{'hidden tests run':<36}{'n':>5}{'p50 ms':>10}{'p95 ms':>10}{'mean ms':>10}")
    for label, ms in times.items():
        print(f"{label:<36}{len(ms):>5}{percentile(ms, .5):>10.1f}{percentile(ms, .95):>10.1f}"
              f"{statistics.mean(ms):>10.1f}")
    before, after = (percentile(ms, .5) for ms in times.values())
    print(f"ratio of the medians, sandboxed / before: {after / before:.2f} ({after - before:+.1f} ms a grade)")
    grading.shutdown()


if __name__ == "__main__":
    main()
