"""What starting a sandbox costs: the CPU and the time until each warm process says ready
(a worker pays both rooms at every start and restart), against torch's import and first use
in a plain process, with the cycle collector on (as the warm processes loaded torch before)
and off (as they do now), interleaved in the same run so that all see the same machine.

    .venv/bin/python bench/sandbox_start.py [--n 6]

A warm process's CPU is read from /proc for the processes of its cgroup once it is ready
(the spares it forked ahead included); the plain processes' from getrusage.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.engine.exercise_sandbox import ExerciseSandbox  # noqa: E402
from grader.engine.sandbox import Sandbox  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
FIRST_USE = "import torch\nfrom grader.inside import first_use\nfirst_use.pay()"


def cpu_of(pids: set[int]) -> float:
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / TICK


def sandbox_start(kind) -> tuple[float, float]:
    room = kind()
    began = time.perf_counter()
    try:
        room.start()
        wall = time.perf_counter() - began
        cpu = cpu_of(room.cgroup.pids()) if room.cgroup is not None else float("nan")
    finally:
        room.close()
    return wall, cpu


def plain(collector: bool) -> tuple[float, float]:
    code = ("" if collector else "import gc; gc.disable()\n") + FIRST_USE
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.perf_counter() - began, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=6)
    n = parser.parse_args().n
    runs = {"student sandbox": lambda: sandbox_start(Sandbox),
            "exercise sandbox": lambda: sandbox_start(ExerciseSandbox),
            "plain, collector on": lambda: plain(True),
            "plain, collector off": lambda: plain(False)}
    figures: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
    runs["student sandbox"]()  # the first start compiles what the later ones find cached
    for _ in range(n):
        for name, run in runs.items():
            figures[name].append(run())
    print(f"{n} starts each, medians (this machine: {os.cpu_count()} cores)")
    baseline = statistics.median(cpu for _, cpu in figures["plain, collector on"])
    for name, values in figures.items():
        wall = statistics.median(w for w, _ in values)
        cpu = statistics.median(c for _, c in values)
        print(f"  {name:22s} ready in {wall * 1000:6.0f} ms   CPU {cpu * 1000:6.0f} ms   "
              f"{cpu / baseline:4.2f}x torch's first use with the collector on")


if __name__ == "__main__":
    main()
