"""What a fork of a warm process costs, with its heap in 4 KiB pages and folded into 2 MiB
pages (grader/inside/huge_pages.py), in the same run.

Each variant is a process that loads torch as the warm processes do (collector off, torch's
first use paid, what it made frozen), then forks children one after the other. Each child
does what a call's child does to memory in small (a tensor, a backward, a result made),
then exits; the parent waits for it. Printed per variant: the fork's own time in the parent,
the fork-to-collected time of a child, and the CPU of parent and children together per
child, with the ratios of the folded heap to the plain one:

    .venv/bin/python bench/fork_cost.py [--n 200]

The variants run interleaved, a batch of each in turn, so that both see the same machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

FORKER = r'''
import gc, json, os, resource, sys, time
sys.path.insert(0, sys.argv[1])
gc.disable()
import torch
from grader.inside import first_use, huge_pages
first_use.pay()
gc.collect()
gc.freeze()
folded = huge_pages.fold_all() if sys.argv[2] == "folded" else 0
gc.enable()

def usage():
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime

for line in sys.stdin:  # one batch per line
    forks, rounds = [], []
    cpu = usage()
    for _ in range(int(line)):
        began = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            x = torch.ones(64, requires_grad=True)
            (x * x).sum().backward()
            json.dumps({"value": x.grad.tolist()})
            os._exit(0)
        forks.append(time.perf_counter() - began)
        os.waitpid(pid, 0)
        rounds.append(time.perf_counter() - began)
    print(json.dumps({"forks": forks, "rounds": rounds, "cpu": usage() - cpu, "folded": folded}), flush=True)
'''


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200)
    n = parser.parse_args().n
    variants = {name: subprocess.Popen([sys.executable, "-c", FORKER, str(ROOT), name], stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, text=True)
                for name in ("plain", "folded")}
    figures = {name: {"forks": [], "rounds": [], "cpu": 0.0, "folded": 0} for name in variants}
    batch = 20
    for _ in range(max(1, n // batch)):
        for name, process in variants.items():
            process.stdin.write(f"{batch}\n")
            process.stdin.flush()
            got = json.loads(process.stdout.readline())
            figures[name]["forks"] += got["forks"]
            figures[name]["rounds"] += got["rounds"]
            figures[name]["cpu"] += got["cpu"]
            figures[name]["folded"] = got["folded"]
    for process in variants.values():
        process.stdin.close()
        process.wait()

    def row(name: str) -> tuple[float, float, float]:
        f = figures[name]
        return (statistics.median(f["forks"]) * 1e3, statistics.median(f["rounds"]) * 1e3,
                f["cpu"] / len(f["rounds"]) * 1e3)

    print(f"{len(figures['plain']['rounds'])} children each (this machine: {os.cpu_count()} cores)")
    print(f"{'heap':28} {'fork p50 ms':>12} {'fork to exit p50 ms':>20} {'CPU per child ms':>17}")
    for name in variants:
        label = name if name == "plain" else f"folded ({figures[name]['folded'] >> 20} MiB)"
        print(f"{label:28} {row(name)[0]:12.2f} {row(name)[1]:20.2f} {row(name)[2]:17.2f}")
    plain, folded = row("plain"), row("folded")
    print("folded / plain: " + ", ".join(f"{what} {b / a:.2f}x" for what, a, b in zip(
        ("fork", "fork to exit", "CPU"), plain, folded)))


if __name__ == "__main__":
    main()
