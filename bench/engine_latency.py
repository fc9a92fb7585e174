"""Grading latency: the warm engine against a naive grader, in the same run.

The naive grader is what most graders do: per submission, a fresh
``python -m pytest`` in the same bubblewrap sandbox, with the student's module
imported into the test process (so it also lacks our isolation). Both grade
the same batch of autograd-basics submissions (the reference and its mutants).

    .venv/bin/python bench/engine_latency.py [--n 60] [--baseline-n 12] [--exercise SLUG] [--in-flight 2]

The warm engine is measured twice: with a short idle time before each submission
(a worker that is not saturated, which forks its next children while idle) and
back to back (saturated: every fork is on the path). Prints p50/p95 of each,
the back-to-back throughput, the CPU per grade over every process of the machine
in a back-to-back pass of its own (run it on an otherwise idle machine), and the
ratios of the medians to the naive p50.

Where the idle grades' time goes is printed stage by stage, as the worker sees it (the
frames of the exercise sandbox and the calls of the student one, timed as they pass), in
an idle pass of its own; and the CPU per grade of the worker's side and of each sandbox.

Then several grades in flight: ``--in-flight`` processes, each with sandboxes of its own
(what a Celery worker with that concurrency runs), grade back to back at once, each after
``--in-flight-warm-up`` grades of its own (the throughput a worker sustains through a queue,
not the first seconds of its sandboxes). Printed: their throughput together, p50 per grade,
and the CPU per grade over the machine.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
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
from grader.engine.exercise_sandbox import ExerciseSandbox  # noqa: E402
from grader.engine.sandbox import Sandbox  # noqa: E402
from grader.inside import wire  # noqa: E402
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


class Stages:
    """The worker's view of each grade: when it sends the grade, when each of the suite's
    calls arrives and is answered, when the verdicts come; and each call's time in the
    student sandbox's warm process (its own measure, in the reply)."""

    LABELS = {"before": "the worker, before sending the grade",
              "first": "the suite, up to its first call",
              "calls": "its calls, from request to answer",
              "warm": "  of which in the student warm process",
              "between": "the suite, between and after calls",
              "after": "the worker, after the verdicts"}

    def __init__(self) -> None:
        self.marks: list[tuple[str, float]] = []
        self.rows: dict[str, list[float]] = {}

    def __enter__(self) -> "Stages":
        self.saved = ExerciseSandbox.send, ExerciseSandbox.receive, Sandbox.call
        send, receive, call = self.saved
        marks = self.marks

        def timed_send(box, header, *parts, **kwargs):
            marks.append(("send " + str(header.get("op")), time.perf_counter()))
            return send(box, header, *parts, **kwargs)

        def timed_receive(box, *args, **kwargs):
            envelope, frame = receive(box, *args, **kwargs)
            event = envelope.get("event")
            if event == "child":
                event = wire.unpack(frame, max_header=1 << 20, max_blob=1 << 30)[0].get("event")
            marks.append(("got " + str(event), time.perf_counter()))
            return envelope, frame

        def timed_call(box, *args, **kwargs):
            out = call(box, *args, **kwargs)
            marks.append(("warm", out.wall_ms / 1000))
            return out

        ExerciseSandbox.send, ExerciseSandbox.receive, Sandbox.call = timed_send, timed_receive, timed_call
        return self

    def __exit__(self, *exc) -> None:
        ExerciseSandbox.send, ExerciseSandbox.receive, Sandbox.call = self.saved

    def grade(self, exercise, source: str) -> None:
        self.marks.clear()
        start = time.perf_counter()
        grade(exercise, source)
        end = time.perf_counter()
        warm_s = [s for name, s in self.marks if name == "warm"]
        marks = [m for m in self.marks if m[0] != "warm"]
        sent = next(t for name, t in marks if name == "send grade")
        finished = next(t for name, t in marks if name == "got finished")
        at = {"before": sent - start, "first": 0.0, "calls": 0.0, "warm": sum(warm_s), "between": 0.0,
              "after": end - finished}
        previous, calls = sent, 0
        for name, t in marks:
            if name == "got call":
                at["first" if calls == 0 else "between"] += t - previous
                calls += 1
            elif name == "send reply":
                at["calls"] += t - previous
            if name in ("got call", "send reply"):
                previous = t
        at["between"] += finished - previous
        for stage, seconds in at.items():
            self.rows.setdefault(stage, []).append(seconds * 1000)
        self.rows.setdefault("n", []).append(calls)

    def print(self) -> None:
        total = sum(statistics.median(self.rows[k]) for k in ("before", "first", "calls", "between", "after"))
        print(f"where an idle grade's time goes ({len(self.rows['n'])} grades, "
              f"{statistics.median(self.rows['n']):g} calls each at p50), p50 per grade:")
        for key, label in self.LABELS.items():
            ms = statistics.median(self.rows[key])
            print(f"  {label:<40}{ms:>8.1f} ms {100 * ms / total:>5.0f}%")


def machine_busy_s() -> float:
    """CPU seconds the whole machine has spent on anything but idling (/proc/stat): the
    grades' CPU over every process (this one, both sandboxes' warm processes and all they
    fork), on a machine otherwise idle."""
    with open("/proc/stat") as stat:
        ticks = [int(v) for v in stat.readline().split()[1:]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")  # less idle and iowait


def room_cpu_s() -> dict[str, float]:
    """CPU seconds so far of this process (the worker's side) and of each sandbox: its
    processes' own and what they reaped of their children's (a call's child, a grade's
    child), summed over the sandbox's cgroup."""
    from grader.engine import grading

    usage = resource.getrusage(resource.RUSAGE_SELF)
    rooms = {"the worker": usage.ru_utime + usage.ru_stime}
    tick = os.sysconf("SC_CLK_TCK")
    for name, box in sorted(grading._pool.items()):
        ticks = 0
        for pid in (box.cgroup.pids() if box.cgroup is not None else ()):
            try:
                with open(f"/proc/{pid}/stat") as stat:
                    ticks += sum(int(v) for v in stat.read().rsplit(")", 1)[1].split()[11:15])
            except OSError:
                pass  # ended meanwhile: its parent reaped its time
        rooms["the exercise sandbox" if name == "exercise" else f"the student sandbox ({name})"] = ticks / tick
    return rooms


def _in_flight_worker(slug: str, n: int, warm_up: int, ready, go, results) -> None:
    """One of several grading processes: its own sandboxes, started and graded ``warm_up``
    times back to back before the others begin (a worker some way into a queue: its heap
    folded, its spares no longer rehearsing)."""
    exercise = catalog.find(slug)
    batch = submissions(exercise)
    for i in range(max(2, warm_up)):
        grade(exercise, batch[i % len(batch)][1])
    ready.release()
    go.wait()
    times, start = [], time.perf_counter()
    for i in range(n):
        t = time.perf_counter()
        grade(exercise, batch[(i + os.getpid()) % len(batch)][1])
        times.append((time.perf_counter() - t) * 1000)
    results.put((start, time.perf_counter(), times))


def in_flight(exercise, processes: int, n: int, warm_up: int = 20) -> tuple[float, list[float], float]:
    """Throughput (grades/s), per-grade times and CPU per grade (ms) with ``processes``
    grading at once, ``n`` grades each, after ``warm_up`` each."""
    # Spawned, not forked: each starts clean, as a worker's pool process with sandboxes of its own.
    ctx = multiprocessing.get_context("spawn")
    ready, go, results = ctx.Semaphore(0), ctx.Event(), ctx.Queue()
    workers = [ctx.Process(target=_in_flight_worker, args=(exercise.slug, n, warm_up, ready, go, results))
               for _ in range(processes)]
    for w in workers:
        w.start()
    for _ in workers:
        ready.acquire()
    time.sleep(1.0)  # the last spares forked, the machine quiet
    busy = machine_busy_s()
    go.set()
    runs = [results.get() for _ in workers]
    cpu_ms = (machine_busy_s() - busy) * 1000 / (processes * n)
    for w in workers:
        w.join()
    first, last = min(r[0] for r in runs), max(r[1] for r in runs)
    return processes * n / (last - first), [t for r in runs for t in r[2]], cpu_ms


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
    parser.add_argument("--in-flight", type=int, default=2,
                        help="grading processes at once in the last pass (0: skip it)")
    parser.add_argument("--in-flight-warm-up", type=int, default=20,
                        help="grades each of those processes makes back to back before the pass")
    args = parser.parse_args()

    exercise = catalog.find(args.exercise)
    batch = submissions(exercise)
    started = time.perf_counter()
    saturated_ms = warm(exercise, batch, args.n)
    throughput = args.n / (time.perf_counter() - started)
    idle_ms = warm(exercise, batch, args.n, gap_s=args.gap_ms / 1000)
    with Stages() as stages:  # a pass of its own: the timing of the pass above is untouched
        for i in range(min(args.n, 30)):
            time.sleep(args.gap_ms / 1000)
            stages.grade(exercise, batch[i % len(batch)][1])
    # CPU in a pass of its own, back to back, once the warm processes have folded their heaps
    # (which they do while idle, in the runs above): no idle gap adds the machine's own noise.
    busy, rooms = machine_busy_s(), room_cpu_s()
    warm(exercise, batch, args.n)
    cpu_ms = (machine_busy_s() - busy) * 1000 / (args.n + 1)  # warm() grades once more first
    rooms = {room: (s - rooms[room]) * 1000 / (args.n + 1) for room, s in room_cpu_s().items()}
    naive_ms = naive(exercise, batch, args.baseline_n)
    if args.in_flight:
        from grader.engine.grading import shutdown
        shutdown()  # this process's sandboxes idle no more beside the others'
        several = in_flight(exercise, args.in_flight, args.n, args.in_flight_warm_up)
    print(f"exercise {exercise.slug}: {len(batch)} distinct submissions (reference + mutants)")
    print(f"{'grader':<40}{'n':>5}{'p50 ms':>10}{'p95 ms':>10}{'mean ms':>10}")
    rows = ((f"warm engine, {args.gap_ms} ms idle before each", idle_ms),
            ("warm engine, back to back", saturated_ms),
            ("naive pytest per submission", naive_ms))
    for label, ms in rows:
        print(f"{label:<40}{len(ms):>5}{percentile(ms, .5):>10.1f}{percentile(ms, .95):>10.1f}"
              f"{statistics.mean(ms):>10.1f}")
    stages.print()
    print(f"throughput back to back: {throughput:.1f} submissions/s (one worker)")
    print(f"CPU per grade, every process on the machine (back to back, after the runs above): {cpu_ms:.0f} ms")
    print("  of which " + ", ".join(f"{room} {ms:.0f} ms" for room, ms in rooms.items()))
    for label, ms in rows[:2]:
        print(f"speed-up at p50, {label}: {percentile(naive_ms, .5) / percentile(ms, .5):.1f}x")
    if args.in_flight:
        rate, times, cpu = several
        print(f"{args.in_flight} grades in flight ({args.in_flight} processes, back to back): "
              f"{rate:.1f} submissions/s together ({rate / throughput:.2f}x one worker), "
              f"p50 {percentile(times, .5):.1f} ms, CPU per grade {cpu:.0f} ms")


if __name__ == "__main__":
    main()
