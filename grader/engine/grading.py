"""grade(exercise, source) -> Report."""

from __future__ import annotations

import atexit
import functools
import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable

from grader import source as source_rules
from grader.bundle import Bundle, CatalogError, find
from grader.engine import blocked, words
from grader.engine.exercise_sandbox import ExerciseSandbox, SuiteFailure
from grader.protocol.report import Report, coarse_ms
from grader.engine.sandbox import Limits, Sandbox
from grader.engine.warm_process import SandboxUnavailable, start_together
from grader.protocol import CallOutcome, ProtocolError
from grader.protocol.text import Text
from grader.settings import settings as load_settings

log = logging.getLogger(__name__)

# This process's warm sandboxes: the student's for the CPU and the GPU, the exercise's.
_pool: dict[str, Sandbox | ExerciseSandbox] = {}
_pool_lock = threading.Lock()


def sandbox_for(cuda: bool) -> Sandbox:
    """The warm student sandbox of this process for the CPU or the GPU (made on first use)."""
    with _pool_lock:
        key = "cuda" if cuda else "cpu"
        if key not in _pool:
            _pool[key] = Sandbox(cuda=cuda)
        return _pool[key]


def exercise_sandbox() -> ExerciseSandbox:
    """The warm exercise sandbox of this process, where hidden suites run (made on first use)."""
    with _pool_lock:
        if "exercise" not in _pool:
            _pool["exercise"] = ExerciseSandbox()
        return _pool["exercise"]


def shutdown() -> None:
    """Stop this process's warm sandboxes (a later grade starts new ones)."""
    with _pool_lock:
        for sandbox in _pool.values():
            sandbox.close()
        _pool.clear()


atexit.register(shutdown)


def warm_up(*, cpu: bool = True, cuda: bool = False, quiet: bool = False) -> None:
    """Start this process's sandboxes (the exercise's, and the student's for the CPU and,
    if asked, the GPU) before the first grade needs them; one that cannot start is left
    for that grade to start and report (``quiet``: only the grade says so)."""
    started = time.monotonic()
    room = exercise_sandbox()
    students = ([sandbox_for(False)] if cpu else []) + ([sandbox_for(True)] if cuda and cuda_available() else [])
    failed = False
    for student in students:
        try:
            with room.lock, student.lock:
                start_together(room, student)
        except SandboxUnavailable as exc:
            failed = True
            if not quiet:
                log.warning("the sandboxes could not be started ahead of the first grade: %s", exc)
    if not failed and not quiet:  # the operator sees what a start costs; the tests, when a worker is settled
        log.info("the sandboxes were started ahead of the first grade in %.1f s", time.monotonic() - started)


@functools.cache
def cuda_available() -> bool:
    """Whether this worker may grade on a GPU. Asked of a throwaway process, so that
    this one never initialises CUDA."""
    choice = load_settings().device
    if choice in ("cpu", "cuda"):
        return choice == "cuda"
    if not os.path.exists("/dev/nvidiactl"):
        return False
    probe = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.is_available())"],
                           capture_output=True, text=True, timeout=120)
    return probe.stdout.strip() == "True"


def device_for(exercise: Bundle) -> str:
    if exercise.device == "cpu":
        return "cpu"
    return "cuda" if cuda_available() else ("cpu" if exercise.device == "any" else "missing")


class _Channel:
    """The student fixture's way into the sandbox, with the submission's budget: the
    exercise sandbox's calls arrive here, and go on to the student sandbox."""

    def __init__(self, sandbox: Sandbox, exercise: Bundle, files: dict[str, str], device: str,
                 deadline: float, refuse: Text | None = None):
        self.sandbox, self.exercise, self.files, self.device = sandbox, exercise, files, device
        self.deadline, self.refuse = deadline, refuse
        self.visible = False
        self.output: list[str] = []
        self.output_truncated = False
        self.limit: str | None = None
        self.sandbox_failure: str | None = None
        lim = exercise.limits
        self.limits = Limits(timeout=lim.call_seconds, memory_bytes=lim.memory_mb << 20,
                             file_bytes=lim.file_mb << 20, output_bytes=lim.output_kb << 10,
                             result_bytes=lim.result_mb << 20, processes=lim.processes,
                             tmp_bytes=min(4 * (lim.file_mb << 20), lim.memory_mb << 20))

    def relay(self, module: str, function: str, visible: bool, args: list, kwargs: dict) -> CallOutcome:
        """A call from the exercise sandbox, made while a test of the given visibility runs."""
        self.visible = visible
        return self.call(module, function, args, kwargs)

    def call(self, module: str, function: str, args: list, kwargs: dict) -> CallOutcome:
        if self.refuse:
            return CallOutcome("refused", detail=self.refuse.en, detail_i18n=self.refuse.translations())
        if module == "probes" and "probes.py" not in self.files:
            raise ProtocolError("a call to probes.py, which this exercise does not have")
        left = self.deadline - time.monotonic()
        if left <= 0.05:
            self.limit = self.limit or "time_limit"
            said = words.WHOLE_SUBMISSION_TIME.format(seconds=f"{self.exercise.limits.submission_seconds:g}")
            return CallOutcome("timeout", detail=said.en, detail_i18n=said.translations())
        limits = self.limits
        if left < limits.timeout:
            limits = Limits(**{**limits.__dict__, "timeout": left})
        # The worker relays tensors as values and bytes, with no torch of its own.
        outcome = self.sandbox.call(self.files, function, args, kwargs, module=module, limits=limits,
                                    device=self.device, block=blocked.expanded(self.exercise.block),
                                    tensors=False)
        if outcome.error is not None:
            # Lines the submission does not have are made up (compile() with a false name).
            lines = self.files["submission.py"].count("\n") + 1
            outcome.error.traceback = [f for f in outcome.error.traceback if 0 < f[0] <= lines]
        if outcome.kind == "timeout":
            self.limit = self.limit or "time_limit"
        elif outcome.kind == "memory":
            self.limit = self.limit or "memory_limit"
        elif outcome.kind == "sandbox":
            self.sandbox_failure = outcome.detail
        if self.visible and outcome.output:
            # Output of hidden tests stays hidden: it could print their inputs.
            self.output.append(outcome.output)
            self.output_truncated |= outcome.output_bytes > len(outcome.output.encode())
        return outcome


def grade(exercise: Bundle | str | Path, source: str | bytes, *,
          on_progress: Callable[[int, int], None] | None = None, visible_only: bool = False) -> Report:
    """Grade one submission against an exercise's hidden tests (with ``visible_only``,
    against its visible tests alone: a practice run).

    Raises ``SandboxUnavailable`` (with the fix in its message) where no sandbox can be
    made; every other outcome, the student's failures included, is a Report.
    """
    started = time.monotonic()
    ex = exercise if isinstance(exercise, Bundle) else find(exercise)
    config = load_settings()
    report = Report(exercise=ex.slug, version=ex.version, status="graded", score=0, max_score=0,
                    duration_ms=0, sandbox="bubblewrap" if config.sandbox == "bwrap" else "none")
    if config.sandbox != "bwrap":
        report.warn(words.UNSAFE)

    problem = _check_source(source)
    text = source.decode("utf-8", "replace") if isinstance(source, bytes) else source
    if problem is None and ex.block:
        # The sandbox blocks these too, but inside the submission's own process.
        uses = blocked.find_uses(text, ex.block)
        if uses:
            problem = "submission_error", uses[0].said()
    refuse = None
    if problem:
        report.explain(*problem)
        refuse = problem[1]

    device = device_for(ex)
    if device == "missing":
        report.explain("sandbox_error", words.NO_GPU)
        report.duration_ms = coarse_ms(time.monotonic() - started)
        return report.escaped()
    report.device = device

    files = {"submission.py": text}
    try:
        probes = ex.probes  # read from the bundle (a file) once
    except CatalogError as exc:
        report.explain("internal_error", words.failed("internal_error", str(exc)))
        return report.escaped()
    if probes is not None:
        files["probes.py"] = probes
    sandbox, room = sandbox_for(device == "cuda"), exercise_sandbox()
    with room.lock, sandbox.lock:
        start_together(room, *([sandbox] if refuse is None else []))
        channel = _Channel(sandbox, ex, files, device,
                           deadline=time.monotonic() + ex.limits.submission_seconds, refuse=refuse)
        try:
            run = room.run(ex, text, device, on_call=channel.relay, on_progress=on_progress,
                           visible_only=visible_only)
        except SuiteFailure as failure:
            log.error("%s v%d: %s", ex.slug, ex.version, failure.message)
            status = "sandbox_error" if failure.kind == "sandbox" else "internal_error"
            report.explain(status, words.failed(status, failure.message))
            report.duration_ms = coarse_ms(time.monotonic() - started)
            return report.escaped()
        finally:
            sandbox.reset()

    report.tests = run.results
    report.max_score = sum(t.max_points for t in run.results)
    report.score = sum(t.points for t in run.results)
    output = "".join(channel.output)
    report.output = output[: ex.limits.output_kb << 10]
    report.output_truncated = channel.output_truncated or len(output) > len(report.output)
    if run.test_errors:
        report.warn(words.tests_errored(run.test_errors))
    if report.status == "graded":
        if run.error:
            report.explain("internal_error", words.failed("internal_error", run.error))
        elif channel.sandbox_failure:
            report.explain("sandbox_error", words.failed("sandbox_error", channel.sandbox_failure))
        elif channel.limit:
            report.explain(channel.limit, words.TIME_LIMIT if channel.limit == "time_limit" else words.MEMORY_LIMIT)
    report.duration_ms = coarse_ms(time.monotonic() - started)
    return report.escaped()


def _check_source(source: str | bytes) -> tuple[str, Text] | None:
    """Why a submission cannot run at all, or None (grader.source parses it; that executes nothing)."""
    try:
        source_rules.check(source)
    except source_rules.SourceError as exc:
        return ("syntax_error" if exc.code == "syntax_error" else "submission_error"), words.refused_source(exc)
    return None
