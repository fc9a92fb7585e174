"""The two sandboxes of a grade start side by side, and a worker starts them before its
first task; a start that fails leaves nothing half-started."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from grader.engine.exercise_sandbox import ExerciseSandbox
from grader.engine.sandbox import Sandbox
from grader.engine.warm_process import SandboxUnavailable, start_together
from tests.live import start_worker, stop


class _Unstartable(Sandbox):
    def _launch(self) -> bool:
        raise SandboxUnavailable("this one cannot start")


def test_both_sandboxes_start_in_one_call_and_answer():
    room, sandbox = ExerciseSandbox(), Sandbox()
    try:
        start_together(room, sandbox)
        assert room.alive and sandbox.alive and room.info["ready"] and sandbox.info["ready"]
        start_together(room, sandbox)  # running already: nothing is started again
        assert (room.starts, sandbox.starts) == (1, 1)
    finally:
        room.close()
        sandbox.close()


def test_a_sandbox_that_cannot_start_leaves_the_other_ready_not_half_started():
    room, broken = ExerciseSandbox(), _Unstartable()
    try:
        with pytest.raises(SandboxUnavailable, match="cannot start"):
            start_together(room, broken)
        # The one launched was awaited: its ready frame is read, so its next reply is a reply.
        assert room.alive and room.info["ready"] and not broken.alive
    finally:
        room.close()


def _descendants(pid: int) -> list[int]:
    found, stack = [], [pid]
    while stack:
        for task in Path(f"/proc/{stack.pop()}/task").glob("*"):
            try:
                children = [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                continue
            found += children
            stack += children
    return found


def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def test_a_worker_starts_both_sandboxes_before_its_first_task(tmp_path, redis, monkeypatch):
    monkeypatch.setenv("GRADER_DATABASE_URL", f"sqlite:///{tmp_path / 'grader.db'}")
    worker = start_worker(tmp_path, "worker")
    try:
        deadline = time.monotonic() + 60
        while True:
            warm = [_command(pid) for pid in _descendants(worker.pid)]
            rooms = {room for room in ("grader.testing.warm", "inside.warm") if any(room in c for c in warm)}
            if len(rooms) == 2 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert rooms == {"grader.testing.warm", "inside.warm"}, warm
    finally:
        stop(worker)
