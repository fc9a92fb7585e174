"""The cold command line: `grader grade SLUG FILE` against Otter-Grader's `otter run`, side by side.

Both grade autograd-basics' reference solution from a fresh process, as an instructor's
`grader check` or an exercise repository's CI does: nothing warm. Otter's autograder
checks what the hidden tests check (the gradient for x = [1, 2, 3], x.grad left in a
leaf, float64 kept), as doctests in its OK format, and runs without a container, as
`otter run` does. The two alternate, run by run, so that both see the same machine.

    .venv/bin/python bench/cold_cli.py [--n 8] [--otter PATH] [--baseline TREE]

``--baseline TREE``: another checkout of the grader (a clone at an earlier commit), run
from this virtual environment in the same alternation, for a before-and-after.

Otter is not one of our dependencies: give the path of an `otter` whose Python has torch
and ipykernel (for instance `python3 -m venv /tmp/otter && /tmp/otter/bin/pip install
otter-grader ipykernel torch`); without one, the grader alone is measured.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOLUTION = ROOT / "exercises" / "autograd-basics" / "solution.py"

# The hidden tests' checks, as Otter's OK-format doctests.
OK_TEST = '''OK_FORMAT = True

test = {
    "name": "q1",
    "points": 6,
    "suites": [{
        "cases": [
            {"code": ">>> import torch\\n>>> x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)\\n"
                     ">>> bool(torch.allclose(grad_2xtx(x), 4 * x.detach()))\\nTrue",
             "hidden": False, "locked": False},
            {"code": ">>> import torch\\n>>> x = torch.randn(7).requires_grad_()\\n>>> _ = grad_2xtx(x)\\n"
                     ">>> bool(torch.allclose(x.grad, 4 * x.detach())) and x.is_leaf\\nTrue",
             "hidden": True, "locked": False},
            {"code": ">>> import torch\\n>>> x = torch.randn(5, dtype=torch.float64, requires_grad=True)\\n"
                     ">>> grad_2xtx(x).dtype == torch.float64\\nTrue",
             "hidden": True, "locked": False},
        ],
        "scored": True, "setup": "", "teardown": "", "type": "doctest"}],
}
'''


def timed(cmd: list[str], cwd: Path, expect: str) -> float:
    start = time.perf_counter()
    run = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if expect not in run.stdout:
        raise SystemExit(f"{cmd[0]} did not grade: {run.stdout[-1500:]}{run.stderr[-1500:]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=8, help="runs of each")
    parser.add_argument("--otter", default=shutil.which("otter"), help="the otter command (default: on PATH)")
    parser.add_argument("--baseline", type=Path, help="another checkout of the grader, measured beside this one")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        shutil.copy(SOLUTION, work / "solution.py")
        grader = [str(Path(sys.executable).parent / "grader"), "grade", "autograd-basics", "solution.py"]
        commands = {"grader grade": (grader, "6/6")}
        if args.baseline:
            run_tree = (f"import sys; sys.path.insert(0, {str(args.baseline.resolve())!r}); "
                        "sys.argv = ['grader', 'grade', 'autograd-basics', 'solution.py']; "
                        "from grader.cli import main; main()")
            commands["baseline grade"] = ([sys.executable, "-c", run_tree], "6/6")
        if args.otter:
            (work / "tests").mkdir()
            (work / "tests" / "q1.py").write_text(OK_TEST)
            subprocess.run([args.otter, "generate"], cwd=work, check=True, capture_output=True)
            commands["otter run"] = ([args.otter, "run", "-a", "autograder.zip", "solution.py"], "6.000 / 6.000")
        else:
            print("otter not found (--otter PATH): measuring the grader alone")
        times: dict[str, list[float]] = {name: [] for name in commands}
        for name, (cmd, expect) in commands.items():
            timed(cmd, work, expect)  # the page cache warm for both, as on a machine in use
        for _ in range(args.n):
            for name, (cmd, expect) in commands.items():
                times[name].append(timed(cmd, work, expect))

    print(f"{'command':<16}{'n':>4}{'p50 s':>9}{'min s':>9}{'max s':>9}")
    for name, seconds in times.items():
        print(f"{name:<16}{len(seconds):>4}{statistics.median(seconds):>9.2f}{min(seconds):>9.2f}{max(seconds):>9.2f}")
    if "otter run" in times:
        ratio = statistics.median(times["otter run"]) / statistics.median(times["grader grade"])
        print(f"grader grade is {ratio:.2f}x as fast as otter run at p50 (the target: at least 1.5x)")


if __name__ == "__main__":
    main()
