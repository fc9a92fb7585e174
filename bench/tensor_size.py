"""How a grade's time and the worker's memory grow with the size of a call's tensor.

One exercise per size: its test calls the student's ``f(x)`` once with a float32 tensor of
that many bytes, and ``f`` returns its last element; the argument goes out to the student
sandbox and comes back (a call's arguments always do), through the exercise sandbox, the
worker and the student sandbox both ways.

    .venv/bin/python bench/tensor_size.py [--n 10] [--sizes-kib 4,1024,4096,16384] [--baseline TREE]

Prints, per size, the warm grade's p50 and what the worker allocated at its peak during the
grade (Python's allocations, traced), as a multiple of the argument's bytes; then the time
each MiB adds. ``--baseline TREE`` (another checkout of the project) measures that tree's
grader the same way in a process of its own, alternating with this one, and prints the
ratios.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

TEST = '''import torch
def test_roundtrip(student):
    x = torch.arange({elements}, dtype=torch.float32)
    call = student.call("f", x)
    assert call.value.data.item() == x[-1].item() and torch.equal(call.args[0].data, x)
'''
SOURCE = "def f(x):\n    return x[-1:].clone()\n"


def exercise(folder: Path, kib: int) -> Path:
    bundle = folder / f"size-{kib}"
    (bundle / "tests").mkdir(parents=True)
    (bundle / "exercise.toml").write_text(f'slug = "size-{kib}"\nversion = 1\ntitle = {{en = "t"}}\nfunctions = ["f"]\n')
    for name in ("README.md", "starter.py", "solution.py"):
        (bundle / name).write_text("")
    (bundle / "tests" / "test_size.py").write_text(TEST.format(elements=kib * 1024 // 4))
    return bundle


def measure(tree: Path, sizes: list[int], n: int) -> dict:
    """In this process, with ``tree``'s grader: {kib: {"ms": [...], "peak": [...], "cpu": [...]}}."""
    sys.path.insert(0, str(tree))
    from grader.engine import grade  # tree's, before engine_latency puts this tree first

    sys.path.append(str(ROOT / "bench"))
    from engine_latency import machine_busy_s

    out = {}
    with tempfile.TemporaryDirectory() as folder:
        for kib in sizes:
            bundle = str(exercise(Path(folder), kib))
            report = grade(bundle, SOURCE)  # each exercise's first grade collects its tests
            if report.score != 1:
                raise SystemExit(f"{tree}: the {kib} KiB grade failed:\n{report.render()}")
            times, peaks = [], []
            for _ in range(n):
                tracemalloc.start()
                started = time.perf_counter()
                grade(bundle, SOURCE)
                times.append((time.perf_counter() - started) * 1000)
                peaks.append(tracemalloc.get_traced_memory()[1])
                tracemalloc.stop()
            busy = machine_busy_s()
            for _ in range(n):  # untraced: tracing slows the worker's own side
                grade(bundle, SOURCE)
            out[kib] = {"ms": times, "peak": peaks, "cpu": [(machine_busy_s() - busy) * 1000 / n]}
    return out


def run(tree: Path, sizes: list[int], n: int) -> dict:
    command = [sys.executable, str(Path(__file__).resolve()), "--child", str(tree),
               "--sizes-kib", ",".join(map(str, sizes)), "--n", str(n)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=tree)
    if done.returncode:
        raise SystemExit(done.stderr[-3000:])
    return {int(k): v for k, v in json.loads(done.stdout.splitlines()[-1]).items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10, help="grades per size, after a first one")
    parser.add_argument("--sizes-kib", default="4,1024,4096,16384")
    parser.add_argument("--baseline", type=Path, help="another checkout, measured alternately")
    parser.add_argument("--rounds", type=int, default=2, help="alternations with --baseline")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes_kib.split(",")]
    if args.child:
        print(json.dumps(measure(args.child, sizes, args.n)))
        return
    trees = {"this tree": ROOT} | ({"baseline": args.baseline.resolve()} if args.baseline else {})
    results: dict[str, dict] = {name: {kib: {"ms": [], "peak": [], "cpu": []} for kib in sizes} for name in trees}
    for _ in range(args.rounds if args.baseline else 1):
        for name, tree in trees.items():
            for kib, got in run(tree, sizes, args.n).items():
                for key in ("ms", "peak", "cpu"):
                    results[name][kib][key] += got[key]
    p50 = {name: {kib: statistics.median(r[kib]["ms"]) for kib in sizes} for name, r in results.items()}
    cpu = {name: {kib: statistics.median(r[kib]["cpu"]) for kib in sizes} for name, r in results.items()}
    print(f"{'argument':>10}" + "".join(f"{name + ' p50':>18}{'CPU':>10}{'worker peak':>13}" for name in trees)
          + (f"{'ratio p50':>11}{'CPU':>6}" if args.baseline else ""))
    for kib in sizes:
        row = f"{kib:>7} KiB"
        for name in trees:
            peak = max(results[name][kib]["peak"]) / (kib * 1024)
            row += f"{p50[name][kib]:>15.1f} ms{cpu[name][kib]:>7.0f} ms{peak:>11.1f} x"
        if args.baseline:
            row += f"{p50['this tree'][kib] / p50['baseline'][kib]:>11.2f}"
            row += f"{cpu['this tree'][kib] / cpu['baseline'][kib]:>6.2f}"
        print(row)
    if len(sizes) > 1:
        small, large = min(sizes), max(sizes)
        for name in trees:
            mib = (large - small) / 1024
            print(f"{name}: each MiB of argument adds {(p50[name][large] - p50[name][small]) / mib:.2f} ms "
                  f"to a grade and {(cpu[name][large] - cpu[name][small]) / mib:.2f} ms of CPU (out and back)")
    print("(CPU: the whole machine's, per grade. Worker peak: the most Python allocated in the worker "
          "during one grade, in multiples of the argument; its frames both ways are 2 x)")


if __name__ == "__main__":
    main()
