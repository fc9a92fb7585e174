"""The two sandboxes of a grade start side by side, and a worker starts them before its
first task; a start that fails leaves nothing half-started."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from grader.engine.exercise_sandbox import ExerciseSandbox
from grader.engine.sandbox import Sandbox
from grader.engine.warm_process import SandboxUnavailable, start_together
from grader import db, submissions
from grader.accounts.models import User
from tests.live import publish_basics, start_worker, stop, wait_until_done

ROOT = Path(__file__).resolve().parent.parent


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


def test_sandboxes_started_from_a_thread_that_ends_go_on_serving_grades():
    """bubblewrap dies with the thread that started it (the kernel's parent-death signal
    follows threads): a worker's start-ahead thread ends once they are up."""
    from grader.engine import grading

    grading.shutdown()
    try:
        ahead = threading.Thread(target=grading.warm_up)
        ahead.start()
        ahead.join()
        time.sleep(0.2)  # a parent-death signal, had one come, has done its work
        room, sandbox = grading.exercise_sandbox(), grading.sandbox_for(False)
        assert room.alive and sandbox.alive
        report = grading.grade("autograd-basics", (ROOT / "exercises/autograd-basics/solution.py").read_text())
        assert (report.status, report.score) == ("graded", report.max_score)
        assert (room.starts, sandbox.starts) == (1, 1)  # the ones started ahead graded it
        assert "cuda" not in grading._pool  # a CPU worker makes no GPU sandbox
    finally:
        grading.shutdown()


ROOMS = ("grader.testing.warm", "inside.warm")


def _started_by(pid: int) -> dict[str, set[int]]:
    """The sandboxes a process started (its own children, bubblewrap), by room."""
    children = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            children |= {int(c) for c in (task / "children").read_text().split()}
        except OSError:
            continue
    commands = {child: _command(child) for child in children}
    return {room: {child for child, command in commands.items() if room in command} for room in ROOMS}


def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_worker_starts_both_sandboxes_before_its_first_task_and_grades_in_them(database_url, redis, tmp_path,
                                                                                 monkeypatch):
    monkeypatch.setenv("GRADER_DATABASE_URL", database_url)
    publish_basics(database_url)
    with db.transaction(database_url) as session:
        session.add(student := User(email="student@example.org", name="Student", role="student"))
        session.flush()
        submission_id = submissions.create(session, user=student, exercise_slug="autograd-basics",
                                           source=(ROOT / "exercises/autograd-basics/solution.py").read_text()).id
    worker = start_worker(tmp_path, "worker")
    try:
        deadline = time.monotonic() + 60
        while not all((ahead := _started_by(worker.pid)).values()):
            assert time.monotonic() < deadline, ahead
            time.sleep(0.1)
        assert all(len(pids) == 1 for pids in ahead.values()), ahead
        # The operator reads what the start cost (and tests/live.py, that the worker is settled).
        while "the sandboxes were started ahead of the first grade in" not in (tmp_path / "worker.log").read_text():
            assert time.monotonic() < deadline, (tmp_path / "worker.log").read_text()[-3000:]
            time.sleep(0.1)
        submissions.enqueue(submission_id, "any")  # only now: the sandboxes came first
        [row] = wait_until_done(database_url, [submission_id])
        assert (row.status, row.score) == ("graded", 6)
        # The same two graded it: neither ended with the thread that started it, to be started again.
        assert _started_by(worker.pid) == ahead
    finally:
        stop(worker)
