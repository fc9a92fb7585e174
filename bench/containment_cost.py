"""What the sandbox's kernel walls cost per call, step by step (microseconds).

    sudo .venv/bin/python bench/containment_cost.py [--n 300]

Measures, each on its own and against the real kernel: the trusted side's cgroup work
before a call (read usage, set the limit, read the OOM counters), and, in a forked
child as a call child would, a new session and keyring, the seccomp filter, and the
check of a spare's scheduling. Then a trivial call end to end through a real sandbox.
Engine latency as a whole is bench/engine_latency.py.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from grader.engine import cgroup  # noqa: E402
from grader.inside import seccomp, walls, warm  # noqa: E402
from grader.engine.sandbox import Limits, Sandbox  # noqa: E402


def in_child(step, again: bool = False) -> float:
    """Run step() in a fresh child, as the call child does once; its time in µs. The first
    run in a child also pays for copying the pages it touches (copy-on-write after the
    fork); again=True times a second run, the step's own cost."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        if again:
            step()
        started = time.perf_counter()
        step()
        os.write(write, str((time.perf_counter() - started) * 1e6).encode())
        os._exit(0)
    os.close(write)
    took = float(os.read(read, 64) or b"nan")
    os.close(read)
    os.waitpid(pid, 0)
    return took


def timed(step, n: int) -> float:
    times = []
    for _ in range(n):
        started = time.perf_counter()
        step()
        times.append((time.perf_counter() - started) * 1e6)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=300)
    args = parser.parse_args()
    rows = []
    seccomp.prepare()  # as the warm process does before it forks

    box = Sandbox()
    box.start()
    limits = Limits()
    rows.append(("trusted: cgroup limit + OOM counters before a call",
                 timed(lambda: box._bound_memory(limits), args.n)))
    if box.cgroup is not None:
        rows.append(("trusted: of which the OOM counters' mark", timed(box.cgroup.memory_mark, args.n)))
    for label, step in (("setsid + fresh session keyring", lambda: (os.setsid(), walls.join_new_keyring())),
                        ("seccomp filter (load, made ready before the fork)", seccomp.install)):
        for again in (False, True):
            if again and "setsid" in label:
                step = walls.join_new_keyring  # a second setsid fails: the keyring alone
            took = statistics.median(in_child(step, again) for _ in range(args.n // 10))
            rows.append((f"child: {label}, {'second run' if again else 'first run (with its page copies)'}", took))
    rows.append(("warm: a spare's scheduling checked", timed(lambda: warm._scheduling(os.getpid()), args.n)))

    source = "def f():\n    return 1\n"
    box.call({"submission.py": source}, "f", [], {})
    calls = []
    for _ in range(args.n // 10):
        started = time.perf_counter()
        box.call({"submission.py": source}, "f", [], {})
        calls.append((time.perf_counter() - started) * 1e6)
        box.reset()  # idle between: the warm process forks its next children
        time.sleep(0.05)
    rows.append(("a trivial call end to end (for scale)", statistics.median(calls)))
    box.close()

    print(f"cgroup v{cgroup.version()}, {os.cpu_count()} CPUs")
    for label, us in rows:
        print(f"{label:<72}{us:>8.0f} µs")


if __name__ == "__main__":
    main()
