"""Regrading after a test is fixed, with real worker processes on a real database and
Redis: 100 sources graded again as new grades beside the old, the right diff, a worker
SIGKILLed mid-regrade and the regrade finished by another, a live submission never kept
waiting behind it, then published (or discarded)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
from sqlalchemy import select

from grader import catalog, db, submissions
from grader.accounts.models import User
from grader.catalog.models import Exercise
from grader import courses
from grader.courses import regrades
from grader.courses.models import Assignment, Regrade, RegradeGrade
from grader.engine.grading import grade
from grader.submissions.models import Submission, SubmissionStatus
from tests.live import start_worker, stop, wait_until_done

ROOT = Path(__file__).resolve().parent.parent
RIGHT = (ROOT / "exercises" / "autograd-basics" / "solution.py").read_text()
WRONG = (ROOT / "exercises" / "autograd-basics" / "mutants" / "backward_twice.py").read_text()
TESTS = "tests/test_grad_2xtx.py"
# Version 1's bug: a hidden test expects 5x where the gradient is 4x, so every source fails it.
BUGGY = ('expect_close(call.value, 4 * x.detach(), what=f"grad_2xtx(x) for {n} elements"',
         'expect_close(call.value, 5 * x.detach(), what=f"grad_2xtx(x) for {n} elements"')
STUDENTS = 50  # each with a wrong and then a right submission: 100 sources

pytestmark = [pytest.mark.slow, pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)]


@pytest.fixture
def course(database_url, redis, monkeypatch, tmp_path):
    """A class of 50 graded under version 1 (its bug included), and version 2 with the test
    fixed now published: what an instructor regrades."""
    exercises = tmp_path / "exercises"
    folder = exercises / "autograd-basics"
    shutil.copytree(ROOT / "exercises" / "autograd-basics", folder)
    tests = folder / TESTS
    tests.write_text(tests.read_text().replace(*BUGGY))
    monkeypatch.setenv("GRADER_DATABASE_URL", database_url)
    monkeypatch.setenv("GRADER_EXERCISES_DIR", str(exercises))
    monkeypatch.setenv("GRADER_GRADE_LIMIT_S", "12")  # so that a grade lost with its worker is overdue soon
    v1 = catalog.load(folder)
    reports = {source: grade(v1, source) for source in (RIGHT, WRONG)}  # what version 1 gave each
    with db.transaction(database_url) as s:
        s.add(Exercise(slug="autograd-basics", version=1, title=v1.title, device="any", max_score=6,
                       functions=list(v1.functions)))
        s.flush()
        course = courses.create_course(s, title="Deep learning", code="DL101")
        courses.import_roster(s, course, [{"email": f"s{i:02d}@uni.edu", "name": f"S{i:02d}", "role": "student"}
                                          for i in range(STUDENTS)])
        assignment = courses.create_assignment(s, course, exercise="autograd-basics", due_at="2099-01-01T00:00+00:00")
        for i in range(STUDENTS):
            user = s.scalar(select(User).where(User.email == f"s{i:02d}@uni.edu"))
            for source in (WRONG, RIGHT):
                row = courses.submit(s, user=user, assignment=assignment, source=source)
                report = reports[source]
                row.status, row.score, row.max_score, row.report = (
                    SubmissionStatus.GRADED, report.score, report.max_score, report.to_dict())
        assignment_id = assignment.id
    tests.write_text(tests.read_text().replace(BUGGY[1], BUGGY[0]))  # the fix, as version 2
    toml = folder / "exercise.toml"
    toml.write_text(toml.read_text().replace("version = 1", "version = 2"))
    with db.transaction(database_url) as s:
        s.get(Exercise, "autograd-basics").version = 2  # as `grader exercise sync` publishes it
    return database_url, assignment_id, reports


def wait_for(database_url, regrade_id, status="ready", seconds=240, sweep=None):
    deadline = time.monotonic() + seconds
    while True:
        if sweep:
            sweep()
        with db.transaction(database_url) as s:
            regrade = s.get(Regrade, regrade_id)
            done, total = regrades.progress(s, regrade)
            if regrade.status == status:
                return done, total
        assert time.monotonic() < deadline, f"regrade still {regrade.status}: {done} of {total}"
        time.sleep(0.5)


def test_a_regrade_after_a_test_fix_shows_what_changed_and_survives_a_killed_worker(course, tmp_path):
    from grader.courses import tasks

    url, assignment_id, reports = course
    with db.transaction(url) as s:
        regrade = regrades.start(s, s.get(Assignment, assignment_id), by="ines@uni.edu")
        regrade_id = regrade.id
    with db.transaction(url) as s:
        assert regrades.send(s, s.get(Regrade, regrade_id)) == 100
    first = start_worker(tmp_path, "first", queues="cpu,cpu-regrade")
    try:
        deadline = time.monotonic() + 120
        while regrades_done(url, regrade_id) < 10:
            assert time.monotonic() < deadline, (tmp_path / "first.log").read_text()[-3000:]
            time.sleep(0.2)
    finally:
        first.kill()  # SIGKILL, mid-regrade
        first.wait()
    second = start_worker(tmp_path, "second", queues="cpu,cpu-regrade")
    try:
        wait_for(url, regrade_id, sweep=tasks.sweep_regrades)  # what beat runs every minute
    finally:
        stop(second)
    with db.transaction(url) as s:
        regrade = s.get(Regrade, regrade_id)
        grades = s.scalars(select(RegradeGrade).where(RegradeGrade.regrade_id == regrade_id)).all()
        assert len(grades) == 100 and all(g.status == "graded" for g in grades)
        changes = regrades.diff(s, regrade)
        # The old grades stand until publishing: a regrade overwrites nothing.
        assert {row.score for row in s.scalars(select(Submission))} == {reports[RIGHT].score, reports[WRONG].score}
    before, after = reports[RIGHT].score, reports[RIGHT].score + 1
    assert len(changes) == STUDENTS and all(c.changed for c in changes)
    assert {(c.before.score, c.after.score) for c in changes} == {(before, after)}
    # The fixed test now passes the right source; the wrong one (backward twice) fails it either way.
    assert [(t.test, t.was, t.now) for t in changes[0].tests] == [
        ("works for a single element and for a long vector", False, True)]

    with db.transaction(url) as s:
        announced = regrades.publish(s, s.get(Regrade, regrade_id))
        assert len(announced) == STUDENTS
    with db.transaction(url) as s:
        assignment = s.get(Assignment, assignment_id)
        assert assignment.exercise_version == 2
        user = s.scalar(select(User).where(User.email == "s00@uni.edu"))
        assert courses.standing(s, assignment, user).counted.score == after
        [(_, note)] = regrades.notes_for(s, assignment, user.id)
        assert (note.old_score, note.score) == (before, after)
        with pytest.raises(courses.CourseError, match="only a finished regrade can be published"):
            regrades.publish(s, s.get(Regrade, regrade_id))


def regrades_done(url, regrade_id) -> int:
    with db.transaction(url) as s:
        return regrades.progress(s, s.get(Regrade, regrade_id))[0]


def test_a_live_submission_is_graded_before_the_regrade_in_progress(course, tmp_path):
    url, assignment_id, _ = course
    with db.transaction(url) as s:
        regrade_id = regrades.start(s, s.get(Assignment, assignment_id), by="ines@uni.edu").id
    with db.transaction(url) as s:
        regrades.send(s, s.get(Regrade, regrade_id))
    worker = start_worker(tmp_path, "worker", queues="cpu,cpu-regrade")
    try:
        while regrades_done(url, regrade_id) < 3:  # the regrade is under way
            time.sleep(0.1)
        with db.transaction(url) as s:
            live = submissions.create(s, user=s.scalar(select(User).where(User.email == "s01@uni.edu")),
                                      exercise_slug="autograd-basics", source=RIGHT)
            live_id = live.id
        submissions.enqueue(live_id, "any")
        [row] = wait_until_done(url, [live_id], seconds=60)
        behind = regrades_done(url, regrade_id)
        assert row.status == "graded" and row.score == 6
        assert behind < 40, f"the live submission waited for {behind} regrade grades"
        with db.transaction(url) as s:
            regrades.discard(s, s.get(Regrade, regrade_id))
    finally:
        stop(worker)
    with db.transaction(url) as s:
        assert s.get(Regrade, regrade_id).status == "discarded"
        assert s.get(Assignment, assignment_id).exercise_version == 1  # nothing of it counts
