"""The CUDA path, checked and timed on a machine with a GPU (a few minutes at most).

    .venv/bin/python bench/gpu_check.py [--n 20]

1. Grades every exercise's reference and mutants with GRADER_DEVICE=cuda and with
   GRADER_DEVICE=cpu, each in its own process, and compares the verdicts test by test
   (exercises with device "any" must agree).
2. Confirms reports say device "cuda" and that the sandbox's warm process never
   loaded the CUDA driver (only its per-call children may).
3. Prints p50/p95 grading latency of autograd-basics on the GPU and on the CPU.

Exit status 0 when every check holds. Without a GPU it says so and exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def phase(device: str, n: int) -> dict:
    """Runs in a child process with GRADER_DEVICE set."""
    from grader import catalog
    from grader.engine import grade, grading
    from grader.settings import settings

    verdicts, devices = {}, set()
    for exercise in catalog.all_bundles(settings().exercises_dir):
        files = [exercise.file("solution.py")] + sorted((exercise.path / "mutants").glob("*.py"))
        for f in files:
            report = grade(exercise, f.read_text())
            devices.add(report.device)
            verdicts[f"{exercise.slug}/{f.stem}"] = {t.id: t.passed for t in report.tests}
    basics = catalog.find("autograd-basics")
    source = basics.file("solution.py").read_text()
    times = []
    for _ in range(n):
        start = time.perf_counter()
        grade(basics, source)
        times.append((time.perf_counter() - start) * 1000)
    warm_uses_cuda = None
    sandbox = grading._pool.get(device == "cuda")
    if sandbox is not None and sandbox._proc is not None:
        warm_uses_cuda = _loads_cuda(sandbox._proc.pid)
    times.sort()
    return {"verdicts": verdicts, "devices": sorted(devices), "p50": times[len(times) // 2],
            "p95": times[min(len(times) - 1, round(0.95 * (len(times) - 1)))],
            "warm_process_loaded_cuda": warm_uses_cuda}


def _loads_cuda(bwrap_pid: int) -> bool | None:
    """Whether the warm process (bwrap's child) has the CUDA driver mapped."""
    try:
        children = Path(f"/proc/{bwrap_pid}/task/{bwrap_pid}/children").read_text().split()
        maps = Path(f"/proc/{children[0]}/maps").read_text()
    except (OSError, IndexError):
        return None
    return "libcuda" in maps


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20)
    parser.add_argument("--phase", choices=["cpu", "cuda"])
    args = parser.parse_args()
    if args.phase:
        print(json.dumps(phase(args.phase, args.n)))
        return 0

    probe = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.is_available(), "
                            "torch.cuda.get_device_name(0) if torch.cuda.is_available() else '')"],
                           capture_output=True, text=True)
    print("torch sees:", probe.stdout.strip() or probe.stderr.strip()[-300:])
    if not probe.stdout.startswith("True"):
        print("no GPU here: nothing to check")
        return 0

    results = {}
    for device in ("cuda", "cpu"):
        env = {**os.environ, "GRADER_DEVICE": device}
        start = time.perf_counter()
        run = subprocess.run([sys.executable, __file__, "--phase", device, "--n", str(args.n)],
                             capture_output=True, text=True, env=env)
        if run.returncode != 0:
            print(f"{device} phase failed:\n{run.stdout[-2000:]}\n{run.stderr[-3000:]}")
            return 1
        results[device] = json.loads(run.stdout.strip().splitlines()[-1])
        print(f"{device} phase: {time.perf_counter() - start:.1f} s")

    problems = []
    if results["cuda"]["devices"] != ["cuda"]:
        problems.append(f"GPU reports say device {results['cuda']['devices']}")
    if results["cuda"]["warm_process_loaded_cuda"]:
        problems.append("the warm process loaded the CUDA driver")
    differing = [k for k, v in results["cuda"]["verdicts"].items() if results["cpu"]["verdicts"].get(k) != v]
    if differing:
        problems.append(f"verdicts differ between GPU and CPU for: {', '.join(differing)}")
    print(f"submissions compared: {len(results['cuda']['verdicts'])}; differing verdicts: {len(differing)}")
    print(f"warm process loaded CUDA: {results['cuda']['warm_process_loaded_cuda']}")
    for device in ("cuda", "cpu"):
        print(f"autograd-basics on {device}: p50 {results[device]['p50']:.1f} ms, "
              f"p95 {results[device]['p95']:.1f} ms")
    for problem in problems:
        print("PROBLEM:", problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
