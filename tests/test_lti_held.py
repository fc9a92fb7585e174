"""LMS score passback of an assignment that holds its hidden tests' results until the due
date (feedback "after_due"): while a student's results are held, their line item is told
only that the work is in ("Pending", no score), whether a grade, a score set by hand or an
extension sent it; once the student's own release comes (an extension's due date for
them), the periodic task sends the score that counts, once. Against the test platform and
real workers, the service's clock moved where the test needs it (GRADER_NOW, a file);
the periodic task's claim, which makes it send once, also on its own, on both databases."""

from __future__ import annotations

import re
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import requests

from grader import clock, courses, db
from grader.accounts.models import User
from grader.courses.models import Assignment, Course
from grader.lti import tasks as lti_tasks
from grader.lti.models import LtiGradeTarget, LtiPlatform, LtiScorePost
from grader.submissions.models import Submission, SubmissionStatus
from grader.tasks import NOTIFY_QUEUE, send_task
from tests.live import move_worker_clock, publish_basics, shared_worker, stop
from tests.lti_platform import INSTRUCTOR, Pending, Platform
from tests.lti_service import lms, service, tool  # noqa: F401  (fixtures)
from tests.test_lti import launch, student, submit_and_wait

MINUTE, DAY = timedelta(minutes=1), timedelta(days=1)
RELEASE_RUN = re.compile(r"grader\.lti\.release_held\[[^\]]+\] succeeded in [^:]+: (\d+)")


def _due() -> datetime:
    """A due date an hour or more ahead of the real clock."""
    return (clock.now() + timedelta(hours=1)).replace(microsecond=0)


def _held_assignment(lms: Platform, service: str, due: datetime) -> int:
    """The instructor's launch makes the course; its assignment holds hidden results until ``due``."""
    page = launch(lms, Pending(user="teacher-1", roles=[INSTRUCTOR], custom={"exercise": "autograd-basics"},
                               resource_link="link-0"))
    assert page.status_code == 200, page.text[:2000]
    with db.transaction(service) as session:
        return courses.create_assignment(session, session.query(Course).one(), exercise="autograd-basics",
                                         due_at=due.isoformat(), feedback="after_due").id


def _opened(lms: Platform, assignment_id: int, sub: str) -> tuple[requests.Session, requests.Response]:
    """The student opens the assignment's link in the LMS (which records where its score goes)."""
    browser = requests.Session()
    page = launch(lms, student(user=sub, custom={"assignment": str(assignment_id)}, resource_link="link-2"), browser)
    assert page.status_code == 200 and page.url.endswith(f"/assignments/{assignment_id}"), page.text[:2000]
    return browser, page


def _user_id(service: str, sub: str) -> int:
    with db.transaction(service) as session:
        platform_id = session.query(LtiPlatform).one().id
        return session.query(User).filter_by(external_id=f"lti:{platform_id}|{sub}").one().id


def _by_staff(service: str, assignment_id: int, sub: str, **change) -> None:
    """A score set by hand (score=) or an extension (due_at=), announced as the pages do."""
    user_id = _user_id(service, sub)
    with db.transaction(service) as session:
        assignment, user = session.get(Assignment, assignment_id), session.get(User, user_id)
        if "score" in change:
            courses.set_override(session, assignment, user, score=change["score"], reason="oral exam",
                                 by="teacher-1")
        else:
            courses.grant_extension(session, assignment, user, due_at=change["due_at"].isoformat(), reason="ill",
                                    by="teacher-1")
    courses.announce_standing(assignment_id, user_id)


def _wait_scores(lms: Platform, count: int, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while len(lms.scores) < count and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(lms.scores) == count, (lms.errors, lms.scores)


def _release_run(tmp_path: Path) -> int:
    """The periodic task once, on the worker (as beat would send it): how many scores it released."""
    log = tmp_path / "worker.log"
    before = len(RELEASE_RUN.findall(log.read_text()))
    send_task(lti_tasks.RELEASE_HELD_TASK, [], queue=NOTIFY_QUEUE)
    deadline = time.monotonic() + 60
    while len(runs := RELEASE_RUN.findall(log.read_text())) == before:
        assert time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.2)
    return int(runs[-1])


def _worker_at(tmp_path: Path, moment: datetime):
    """The lent worker, its clock at ``moment``."""
    worker = shared_worker(tmp_path)
    move_worker_clock(tmp_path, moment)
    return worker


def _pending(score: dict, sub: str) -> bool:
    return (score["userId"] == sub and score["gradingProgress"] == "Pending"
            and score["activityProgress"] == "Submitted" and "scoreGiven" not in score
            and "scoreMaximum" not in score)


def _graded(score: dict) -> tuple:
    return score["userId"], score["gradingProgress"], score["scoreGiven"], score["scoreMaximum"]


def _stamp(score: dict) -> datetime:
    return datetime.fromisoformat(score["timestamp"])


# ------------------------------------------------------------------ the whole way, real workers

def test_a_held_grade_reaches_the_lms_as_pending_and_the_score_that_counts_goes_once_released(
        lms, service, tmp_path):
    due = _due()
    assignment_id = _held_assignment(lms, service, due)
    browser, page = _opened(lms, assignment_id, "student-1")
    worker = shared_worker(tmp_path)
    try:
        submit_and_wait(browser, page, lms, tmp_path)
        assert _pending(lms.scores[0], "student-1"), lms.scores
        # A score set by hand while held: still nothing but "pending", stamped later
        _by_staff(service, assignment_id, "student-1", score=4)
        _wait_scores(lms, 2)
        assert _pending(lms.scores[1], "student-1") and _stamp(lms.scores[1]) > _stamp(lms.scores[0])
        assert _release_run(tmp_path) == 0  # before the due date: nothing to release
    finally:
        stop(worker)
    with db.transaction(service) as session:
        [target] = session.query(LtiGradeTarget).filter_by(assignment_id=assignment_id).all()
        assert clock.as_utc(target.held_until) == due
        assert [(p.outcome, p.score_given, p.score_maximum) for p in session.query(LtiScorePost)] == \
            [("sent", None, None)] * 2

    worker = _worker_at(tmp_path, due + MINUTE)
    try:
        assert _release_run(tmp_path) == 1
        _wait_scores(lms, 3)
        assert _release_run(tmp_path) == 0  # sent once: the next run sends nothing
        time.sleep(1)
    finally:
        stop(worker)
    assert len(lms.scores) == 3 and lms.errors == []
    released = lms.scores[2]
    assert _graded(released) == ("student-1", "FullyGraded", 4, 6)  # what counts: the score set by hand
    assert _stamp(released) == due > _stamp(lms.scores[1])  # newer than "pending": the LMS keeps it
    with db.transaction(service) as session:
        assert session.query(LtiGradeTarget).filter_by(assignment_id=assignment_id).one().held_until is None
        posts = session.query(LtiScorePost).order_by(LtiScorePost.id).all()
        assert [p.score_given for p in posts] == [None, None, 4]


def test_an_extended_students_score_waits_for_their_own_due_date(lms, service, tmp_path):
    due = _due()
    extended_to = due + DAY
    assignment_id = _held_assignment(lms, service, due)
    worker = shared_worker(tmp_path)
    try:
        for graded, sub in enumerate(("student-1", "student-2"), start=1):
            browser, page = _opened(lms, assignment_id, sub)
            submit_and_wait(browser, page, lms, tmp_path, graded)
        _by_staff(service, assignment_id, "student-2", due_at=extended_to)  # the extension's path: still held
        _wait_scores(lms, 3)
    finally:
        stop(worker)
    assert [_pending(s, sub) for s, sub in zip(lms.scores, ("student-1", "student-2", "student-2"))] == [True] * 3

    worker = _worker_at(tmp_path, due + MINUTE)
    try:
        assert _release_run(tmp_path) == 1  # student-1's; student-2's results are still held
        _wait_scores(lms, 4)
        time.sleep(1)
    finally:
        stop(worker)
    assert len(lms.scores) == 4 and _graded(lms.scores[3]) == ("student-1", "FullyGraded", 6, 6)
    with db.transaction(service) as session:
        target = session.query(LtiGradeTarget).filter_by(user_id=_user_id(service, "student-2")).one()
        assert clock.as_utc(target.held_until) == extended_to

    worker = _worker_at(tmp_path, extended_to + MINUTE)
    try:
        assert _release_run(tmp_path) == 1
        _wait_scores(lms, 5)
        assert _release_run(tmp_path) == 0
    finally:
        stop(worker)
    assert _graded(lms.scores[4]) == ("student-2", "FullyGraded", 6, 6) and _stamp(lms.scores[4]) == extended_to
    assert len(lms.scores) == 5 and lms.errors == []


def test_a_score_set_by_hand_with_no_grade_is_held_too(lms, service, tmp_path):
    due = _due()
    assignment_id = _held_assignment(lms, service, due)
    _opened(lms, assignment_id, "student-1")  # launched, never submitted
    worker = shared_worker(tmp_path)
    try:
        _by_staff(service, assignment_id, "student-1", score=5)
        _wait_scores(lms, 1)
    finally:
        stop(worker)
    assert _pending(lms.scores[0], "student-1"), lms.scores
    worker = _worker_at(tmp_path, due + MINUTE)
    try:
        assert _release_run(tmp_path) == 1
        _wait_scores(lms, 2)
        assert _release_run(tmp_path) == 0
    finally:
        stop(worker)
    assert _graded(lms.scores[1]) == ("student-1", "FullyGraded", 5, 6) and _stamp(lms.scores[1]) == due
    with db.transaction(service) as session:
        assert [(p.submission_id, p.score_given) for p in session.query(LtiScorePost).order_by(LtiScorePost.id)] \
            == [(None, None), (None, 5)]


def test_the_release_runs_every_minute():
    from grader.tasks import make_celery

    schedule = make_celery().conf.beat_schedule
    assert {"task": lti_tasks.RELEASE_HELD_TASK, "schedule": 60.0} in schedule.values()


# ------------------------------------------------------------------ the claim, on its own

DUE = datetime(2026, 12, 10, 14, 59, tzinfo=timezone.utc)


@pytest.fixture
def held(database_url, monkeypatch):
    """A course whose assignment holds results until DUE; students s1 and s2, each with a
    grade of 6 and a target marked as told "pending"; the tasks the release sends, caught."""
    monkeypatch.setenv("GRADER_DATABASE_URL", database_url)
    publish_basics(database_url)
    sent: list[tuple[str, list]] = []
    monkeypatch.setattr(lti_tasks, "send_task", lambda name, args, queue: sent.append((name, args)))
    with clock.travel(DUE - DAY), db.transaction(database_url) as session:
        platform = LtiPlatform(issuer="https://lms.example.edu", client_id="tool", deployment_ids=["1"],
                               auth_login_url="https://lms.example.edu/auth",
                               auth_token_url="https://lms.example.edu/token", jwks_url="https://lms.example.edu/jwks")
        session.add(platform)
        course = courses.create_course(session, title="Deep learning", code="DL101", time_zone="UTC")
        courses.import_roster(session, course, courses.roster_rows(
            "email,name,role\ns1@uni.edu,S1,student\ns2@uni.edu,S2,student\n"))
        assignment = courses.create_assignment(session, course, exercise="autograd-basics", due_at=DUE.isoformat(),
                                               feedback="after_due")
        targets = {}
        for email in ("s1@uni.edu", "s2@uni.edu"):
            user = session.query(User).filter_by(email=email).one()
            session.add(Submission(user_id=user.id, exercise_slug="autograd-basics", exercise_version=1,
                                   assignment_id=assignment.id, source="", status=SubmissionStatus.GRADED,
                                   score=6.0, max_score=6.0, finished_at=DUE - DAY))
            target = LtiGradeTarget(user_id=user.id, exercise_slug="autograd-basics", assignment_id=assignment.id,
                                    platform_id=platform.id, lineitem_url=f"https://lms.example.edu/items/{email}",
                                    lti_user_id=email, held_until=DUE)
            session.add(target)
            session.flush()
            targets[email] = target.id
        ids = assignment.id, targets
    return database_url, *ids, sent


def test_two_runs_at_once_release_a_target_once_and_a_failed_send_is_tried_again(held, monkeypatch):
    url, assignment_id, targets, sent = held
    with clock.travel(DUE - MINUTE):
        assert lti_tasks.release_held() == 0 and sent == []  # not yet
    with clock.travel(DUE + MINUTE):
        first, second = lti_tasks._due_targets(), lti_tasks._due_targets()  # two runs read the same
        assert sorted(t for t, _ in first) == sorted(targets.values())
        assert [lti_tasks._release(*due) for due in first] == [1, 1]
        assert [lti_tasks._release(*due) for due in second] == [0, 0]  # the other run claimed them
        assert lti_tasks.release_held() == 0
    assert sorted(args[1] for _, args in sent) == sorted(targets.values())
    assert {name for name, _ in sent} == {lti_tasks.PUBLISH_SCORE_TASK}
    assert {args[2] for _, args in sent} == {DUE.isoformat()}  # stamped with the release: newer than "pending"

    # The broker failing: the target stays marked, and the next run sends it.
    with db.transaction(url) as session:
        session.get(LtiGradeTarget, targets["s1@uni.edu"]).held_until = DUE
    sent.clear()

    def broken(name, args, queue):
        raise ConnectionError("the broker is down")

    monkeypatch.setattr(lti_tasks, "send_task", broken)
    with clock.travel(DUE + 2 * MINUTE):
        assert lti_tasks.release_held() == 0
    with db.transaction(url) as session:
        assert clock.as_utc(session.get(LtiGradeTarget, targets["s1@uni.edu"]).held_until) == DUE
    monkeypatch.setattr(lti_tasks, "send_task", lambda name, args, queue: sent.append((name, args)))
    with clock.travel(DUE + 3 * MINUTE):
        assert lti_tasks.release_held() == 1
        assert lti_tasks.release_held() == 0
    assert [args[1] for _, args in sent] == [targets["s1@uni.edu"]]


def test_a_release_moved_later_by_an_extension_waits_for_it(held):
    url, assignment_id, targets, sent = held
    with db.transaction(url) as session:
        s2 = session.query(User).filter_by(email="s2@uni.edu").one()
        courses.grant_extension(session, session.get(Assignment, assignment_id), s2,
                                due_at=(DUE + DAY).isoformat(), reason="ill", by="teacher")
    with clock.travel(DUE + MINUTE):
        assert lti_tasks.release_held() == 1
    assert [args[1] for _, args in sent] == [targets["s1@uni.edu"]]
    with db.transaction(url) as session:
        assert clock.as_utc(session.get(LtiGradeTarget, targets["s2@uni.edu"]).held_until) == DUE + DAY
    with clock.travel(DUE + DAY + MINUTE):
        assert lti_tasks.release_held() == 1
    assert [args[1] for _, args in sent] == [targets["s1@uni.edu"], targets["s2@uni.edu"]]


def test_the_score_task_posts_pending_while_held_and_the_score_once_released(held, monkeypatch):
    url, assignment_id, targets, sent = held
    posted = []
    monkeypatch.setattr(lti_tasks, "post_score", lambda platform, key, **score: posted.append(score) or 200)
    target_id = targets["s1@uni.edu"]
    with db.transaction(url) as session:
        session.get(LtiGradeTarget, target_id).held_until = None  # as before its first grade's task
        graded = session.query(Submission).filter_by(user_id=session.get(LtiGradeTarget, target_id).user_id).one().id
    with clock.travel(DUE - DAY + MINUTE):
        assert lti_tasks.publish_score.apply(args=[graded, target_id]).get() == "sent"
    with db.transaction(url) as session:
        assert clock.as_utc(session.get(LtiGradeTarget, target_id).held_until) == DUE
    with clock.travel(DUE + MINUTE):
        assert lti_tasks.publish_score.apply(args=[graded, target_id, DUE.isoformat()]).get() == "sent"
    assert [(p["score"], p["maximum"], clock.as_utc(p["timestamp"])) for p in posted] == [
        (None, None, DUE - DAY), (6.0, 6.0, DUE)]
    with db.transaction(url) as session:
        assert session.get(LtiGradeTarget, target_id).held_until is None  # sent: nothing left to release
        assert [p.score_given for p in session.query(LtiScorePost).order_by(LtiScorePost.id)] == [None, 6.0]
