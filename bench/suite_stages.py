"""Where a grade's suite spends its CPU: pytest's stages in the exercise child, one by one.

Each grade's child in the exercise sandbox runs the hidden suite under pytest from a warm
process that has imported everything already; what is left is pytest's own work per grade.
This runs an exercise's suite the same way (``grader.testing.harness.run_suite``) in this
process, many times, against the exercise's reference solution called through the wire's
encoding as the student sandbox would send it, and prints the median CPU of each stage and
its share of the whole run, and what is left once the submission arrives (the sandbox has
the suite configured and collected before that). Runs alternate between pytest's
configuration made ahead (``harness.prepare``, outside the measure, as the warm process makes
it before it forks) and made afresh by ``pytest.main``; the table is the first, and a line
compares the two:

    .venv/bin/python bench/suite_stages.py [--n 60] [--exercise autograd-basics]

Only the catalogue's own exercises: their tests run here, outside any sandbox.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader import catalog, protocol  # noqa: E402
from grader.inside import first_use, wire  # noqa: E402
from grader.testing import harness  # noqa: E402

STAGES = ("command line and plugins", "collection", "tests (student calls excluded)", "student calls",
          "session end")


class Clock:
    """A pytest plugin noting the CPU clock as each stage ends."""

    def __init__(self):
        self.marks: dict[str, float] = {}
        self.calls = 0.0

    @pytest.hookimpl(tryfirst=True)
    def pytest_configure(self, config):
        self.marks["configured"] = time.process_time()

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session):
        self.marks["collected"] = time.process_time()

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session):
        self.marks["ran"] = time.process_time()


class Channel:
    """The reference solution, called here, its values through the wire both ways."""

    device, visible = "cpu", False

    def __init__(self, modules: dict, source: str, clock: Clock):
        self.modules, self.clock = modules, clock
        self.files = {"submission.py": source}

    def call(self, module, function, args, kwargs):
        started = time.process_time()
        # Each frame's blob as the reader has it: read into a buffer of its own.
        header, parts = protocol.call_frame(module, function, self.visible, args, kwargs)
        _, _, _, args, kwargs = protocol.read_call(header, bytearray(b"".join(parts)))
        args, kwargs = wire.to_sandbox(args), wire.to_sandbox(kwargs)
        value = getattr(self.modules[module], function)(*args, **kwargs)
        header, parts = protocol.outcome_frame(protocol.CallOutcome("ok", value=value, args=args, kwargs=kwargs))
        outcome = protocol.read_outcome(header, bytearray(b"".join(parts)))
        self.clock.calls += time.process_time() - started
        return outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=60, help="suite runs measured")
    parser.add_argument("--exercise", default="autograd-basics")
    args = parser.parse_args()

    exercise = catalog.find(args.exercise)
    first_use.pay()  # as the warm process has
    source = exercise.file("solution.py").read_text()
    # The reference as "submission", which probes.py imports; both as the student sandbox has them.
    modules = {"submission": _loaded("submission", exercise.file("solution.py"))}
    if exercise.file("probes.py").is_file():
        modules["probes"] = _loaded("probes", exercise.file("probes.py"))
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        shutil.copytree(exercise.tests_dir, folder / "tests", ignore=shutil.ignore_patterns("__pycache__"))
        # The first runs pay first-use costs that a warm process has paid before it forks.
        both = [_measured(folder, modules, source, prepared=i % 2 == 0) for i in range(2 * args.n + 6)][6:]
    runs, afresh = both[0::2], both[1::2]
    passed = {count for _, count in runs}
    totals = [sum(stages.values()) * 1000 for stages, _ in runs]
    whole = statistics.median(totals)
    print(f"exercise {exercise.slug}: its suite run {len(runs)} times in this process "
          f"(tests passed per run: {sorted(passed)})")
    print(f"{'stage':<34}{'p50 CPU ms':>12}{'share':>8}")
    for stage in STAGES:
        ms = statistics.median(stages[stage] * 1000 for stages, _ in runs)
        print(f"{stage:<34}{ms:>12.1f}{ms / whole:>8.0%}")
    print(f"{'whole suite run':<34}{whole:>12.1f}{1:>8.0%}")
    # The exercise sandbox configures and collects a grade's suite before its submission
    # arrives (grader/testing/warm.py): what a grade waits for is the rest.
    after = statistics.median(sum(stages[s] for s in STAGES[2:]) * 1000 for stages, _ in runs)
    print(f"{'after the submission arrives':<34}{after:>12.1f}{after / whole:>8.0%}")
    made = statistics.median(stages[STAGES[0]] * 1000 for stages, _ in afresh)
    ahead = statistics.median(stages[STAGES[0]] * 1000 for stages, _ in runs)
    whole_afresh = statistics.median(sum(stages.values()) * 1000 for stages, _ in afresh)
    print(f"{STAGES[0]}: {ahead:.1f} ms with pytest's configuration made ahead, {made:.1f} ms made afresh "
          f"({ahead / made:.2f}x); whole run {whole:.1f} ms against {whole_afresh:.1f} ms ({whole / whole_afresh:.2f}x)")


def _loaded(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = sys.modules[name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _measured(folder: Path, modules: dict, source: str, prepared: bool) -> tuple[dict[str, float], int]:
    clock = Clock()
    config = harness.prepare(folder, os.getcwd()) if prepared else None
    loaded = set(sys.modules)
    started = time.process_time()
    run = _run_suite_with(folder, Channel(modules, source, clock), clock, config)
    ended = time.process_time()
    for name in set(sys.modules) - loaded:  # as in a fresh child: the suite's modules are new each grade
        sys.modules.pop(name, None)
    marks = clock.marks
    stages = {
        STAGES[0]: marks["configured"] - started,
        STAGES[1]: marks["collected"] - marks["configured"],
        STAGES[2]: marks["ran"] - marks["collected"] - clock.calls,
        STAGES[3]: clock.calls,
        STAGES[4]: ended - marks["ran"],
    }
    return stages, sum(r.passed for r in run.results)


def _run_suite_with(folder: Path, channel: Channel, clock: Clock, prepared):
    """harness.run_suite, with the clock among pytest's plugins."""
    main = pytest.main

    def with_clock(args, plugins):
        return main(args, plugins=[*plugins, clock])

    pytest.main = with_clock
    try:
        return harness.run_suite(folder, channel, prepared=prepared)
    finally:
        pytest.main = main


if __name__ == "__main__":
    main()
