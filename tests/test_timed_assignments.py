"""Timed assignments: each student has a time limit from when they start (the start button
on the assignment's page, or else their first submission), never past the assignment's
close date; a submission after their own deadline is refused with time_up on the pages
and the API alike, and an extension's extra minutes lengthen one student's limit. The
rules worked through by hand, then the pages and /api/v1 on a real database (SQLite and
PostgreSQL) and a real Redis. The service's clock is moved, not a library's."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import select

from grader import clock, courses, db
from grader.accounts import keys
from grader.accounts.models import User
from grader.courses.models import Assignment, AssignmentStart
from grader.courses.rules import Refusal, Rules, may_submit
from tests.forms import token
from tests.test_api import GOOD_SOURCE, assert_error, make_key  # noqa: F401  (fixtures)
from tests.test_api_courses import SCOPES, key  # noqa: F401  (fixtures)
from tests.test_web import GOOD, ada, rows, site  # noqa: F401  (fixtures)
from tests.test_web_courses import course  # noqa: F401  (fixture)

DUE = datetime(2026, 12, 10, 14, 59, tzinfo=timezone.utc)  # 23:59 in Seoul
MINUTE, HOUR, DAY = timedelta(minutes=1), timedelta(hours=1), timedelta(days=1)
START = DUE - 2 * DAY  # when the student starts, far from the due date


def refused(rules: Rules, now: datetime) -> Refusal:
    with pytest.raises(Refusal) as caught:
        may_submit(rules, now, 0, None)
    return caught.value


# ------------------------------------------------------------------ the rules

def test_a_students_own_deadline_is_their_start_plus_the_limit_or_the_close_date_if_sooner():
    timed = Rules(due_at=DUE, late_until=DUE + DAY, time_limit=30 * MINUTE)
    assert timed.ends_at == DUE + DAY  # not started: only the close date binds
    assert timed.started(START).ends_at == START + 30 * MINUTE
    assert timed.started(DUE + DAY - 10 * MINUTE).ends_at == DUE + DAY  # started late: the close date comes first
    assert Rules(due_at=DUE).started(START).ends_at == DUE  # untimed: a start changes nothing


def test_a_submission_after_the_students_own_limit_is_refused_with_time_up():
    rules = Rules(due_at=DUE, time_limit=30 * MINUTE).started(START)
    may_submit(rules, START + 30 * MINUTE, 0, None)
    up = refused(rules, START + 30 * MINUTE + timedelta(seconds=1))
    assert up.code == "time_up" and up.ended_at == START + 30 * MINUTE and up.reopens_at is None
    # Where the close date came first, the assignment is closed, as for everyone.
    closing = Rules(due_at=DUE, time_limit=30 * MINUTE).started(DUE - 10 * MINUTE)
    assert refused(closing, DUE + MINUTE).code == "closed"
    # Not started yet: the first submission starts the clock, so nothing is refused for time.
    may_submit(Rules(due_at=DUE, time_limit=30 * MINUTE), DUE - MINUTE, 0, None)


def test_extra_minutes_lengthen_the_limit_and_a_later_due_date_alone_does_not():
    rules = Rules(due_at=DUE, time_limit=30 * MINUTE)
    longer = rules.extended(None, extra_minutes=15).started(START)
    assert longer.time_limit == 45 * MINUTE and longer.ends_at == START + 45 * MINUTE
    may_submit(longer, START + 40 * MINUTE, 0, None)
    later = rules.extended(DUE + 3 * DAY).started(START)
    assert later.closes_at == DUE + 3 * DAY and later.ends_at == START + 30 * MINUTE
    assert refused(later, START + 31 * MINUTE).code == "time_up"
    assert Rules(due_at=DUE).extended(None, extra_minutes=15).time_limit is None  # untimed stays untimed


# ------------------------------------------------------------------ the pages

@pytest.fixture
def timed(course, database_url):  # noqa: F811  (the fixture imported above)
    """DL101's instructor set a 30-minute timed assignment of autograd-basics, due 2026-12-10
    23:59 in Seoul; Ada is a student of the course."""
    prof, course_url, _ = course
    made = prof.post(f"{course_url}/assignments", data={
        "exercise": "autograd-basics", "title": "Quiz 1", "due_at": "2026-12-10T23:59", "time_limit_minutes": "30",
        "csrf_token": token(prof, course_url)})
    assert made.status_code == 303, made.get_data(as_text=True)
    return prof, made.headers["Location"]


def start(client, url: str, at: datetime):
    with clock.travel(at):
        return client.post(f"{url}/start", data={"csrf_token": token(client, url)})


def submit(client, url: str, at: datetime, source: str = GOOD):
    with clock.travel(at):
        return client.post(f"{url}/submissions", data={"source": source, "csrf_token": token(client, url)},
                           content_type="multipart/form-data")


def started_at(database_url) -> list[datetime]:
    with db.transaction(database_url) as s:
        return [clock.as_utc(row.started_at) for row in s.scalars(select(AssignmentStart))]


def test_a_student_starts_submits_in_time_and_is_refused_once_their_own_time_is_up(timed, ada, database_url,
                                                                                   redis):
    _, url = timed
    with clock.travel(START - HOUR):
        before = ada.get(url).get_data(as_text=True)
    assert "30 minutes from when you press Start" in before and 'id="submit-form"' not in before
    assert "The exercise is shown once you start." in before
    assert started_at(database_url) == []  # opening the page is not starting

    assert start(ada, url, START).status_code == 303
    with clock.travel(START + 10 * MINUTE):
        page = ada.get(url).get_data(as_text=True)
    assert 'id="submit-form"' in page and "countdown.js" in page
    assert "2026-12-09 00:29 KST (Asia/Seoul)" in page  # her own deadline: her start plus 30 minutes
    assert re.search(r'data-seconds-left="(\d+)"', page).group(1) in {"1200", "1199"}
    assert submit(ada, url, START + 10 * MINUTE).status_code == 303

    late = submit(ada, url, START + 31 * MINUTE, "def grad_2xtx(x):\n    return 3 * x  # too late\n")
    text = late.get_data(as_text=True)
    assert late.status_code == 409  # though the due date is two days away
    assert "Your time on this assignment is up (it ended at 2026-12-09 00:29 KST (Asia/Seoul))" in text
    assert "too late" in text  # nothing typed is lost
    assert len(rows(database_url)) == 1
    with clock.travel(START + 32 * MINUTE):  # nor is practice a way around the limit
        practice = ada.post(f"{url}/practice", data={"source": GOOD, "csrf_token": token(ada, url)},
                            content_type="multipart/form-data")
    assert practice.status_code == 409 and "Your time on this assignment is up" in practice.get_data(as_text=True)


def test_the_start_is_recorded_once_and_never_moves(timed, ada, database_url, redis):
    _, url = timed
    assert start(ada, url, START).status_code == 303
    [first] = started_at(database_url)
    assert abs(first - START) < MINUTE  # the service's clock runs on from where it was moved
    assert start(ada, url, START + 20 * MINUTE).status_code == 303  # pressing it again changes nothing
    assert started_at(database_url) == [first]
    with db.transaction(database_url) as s:  # nor does a submission's implicit start
        assignment = s.scalar(select(Assignment).where(Assignment.title == "Quiz 1"))
        student = s.scalar(select(User).where(User.email == "ada@example.org"))
        assert courses.starts.start(s, assignment, student, at=START + HOUR) == first
    assert started_at(database_url) == [first]


def test_an_extension_with_extra_minutes_lets_a_later_submission_through(timed, ada, database_url, redis):
    prof, url = timed
    page = prof.get(url).get_data(as_text=True)
    ada_id = re.search(r'<option value="(\d+)">[^<]*ada@example.org', page).group(1)
    granted = prof.post(f"{url}/extensions", data={"student": ada_id, "extra_minutes": "15", "reason": "accommodation",
                                                   "csrf_token": token(prof, url)})
    assert granted.status_code == 303, granted.get_data(as_text=True)
    assert start(ada, url, START).status_code == 303
    with clock.travel(START + MINUTE):
        mine = ada.get(url).get_data(as_text=True)
    assert "45 minutes from when you start" in mine and "15 extra minutes" in mine
    assert submit(ada, url, START + 40 * MINUTE).status_code == 303
    assert submit(ada, url, START + 46 * MINUTE).status_code == 409
    assert len(rows(database_url)) == 1


def test_the_time_limit_is_checked_when_an_assignment_is_made(course, redis):  # noqa: F811
    prof, course_url, assignment_url = course
    for bad in ("0", "10081", "1.5", "soon"):
        made = prof.post(f"{course_url}/assignments", data={
            "exercise": "autograd-basics", "due_at": "2026-12-10T23:59", "time_limit_minutes": bad,
            "csrf_token": token(prof, course_url)})
        assert made.status_code == 422
        assert "the time limit in minutes must be a whole number from 1 to 10080" in made.get_data(as_text=True)
    page = prof.get(assignment_url).get_data(as_text=True)  # untimed: no extra minutes to give
    assert 'name="extra_minutes"' not in page


# ------------------------------------------------------------------ /api/v1

def test_the_api_refuses_a_submission_past_the_students_own_limit(client, key, basics, redis):  # noqa: F811
    made = client.post("/api/v1/courses", json={"title": "Deep learning", "code": "DL101",
                                                "time_zone": "Asia/Seoul"}, headers=key)
    course_id = made.get_json()["id"]
    client.put(f"/api/v1/courses/{course_id}/members", headers={**key, "Content-Type": "text/csv"},
               data="user,name,role\nada,Ada,student\nbo,Bo,student\n")
    for bad in (0, 10081, 1.5, "an hour"):
        assert_error(client.post(f"/api/v1/courses/{course_id}/assignments", headers=key, json={
            "exercise": "autograd-basics", "due_at": "2026-12-10T23:59+09:00", "time_limit_minutes": bad}),
            422, "invalid_assignment")
    created = client.post(f"/api/v1/courses/{course_id}/assignments", headers=key, json={
        "exercise": "autograd-basics", "due_at": "2026-12-10T23:59+09:00", "time_limit_minutes": 60})
    assert created.status_code == 201 and created.get_json()["time_limit_minutes"] == 60
    assignment = created.get_json()["id"]

    def send(user: str, at: datetime):
        with clock.travel(at):
            return client.post("/api/v1/submissions", headers=key,
                               json={"assignment": assignment, "source": GOOD_SOURCE, "user": user})

    with clock.travel(START - MINUTE):  # a practice run starts the clock as a submission would
        practised = client.post("/api/v1/submissions", headers=key, json={
            "assignment": assignment, "source": GOOD_SOURCE, "user": "ada", "practice": True})
    assert practised.status_code == 202
    assert send("ada", START).status_code == 202
    up = send("ada", START + 60 * MINUTE)  # an hour from her practice run, the due date days away
    assert_error(up, 409, "time_up")
    assert "your time on this assignment is up" in up.get_json()["error"]["message"]
    assert send("bo", START + 61 * MINUTE).status_code == 202  # Bo's clock is his own

    extension = client.post(f"/api/v1/assignments/{assignment}/extensions", headers=key,
                            json={"user": "ada", "extra_minutes": 30, "reason": "accommodation"})
    assert extension.status_code == 201 and extension.get_json()["extra_minutes"] == 30
    [listed] = client.get(f"/api/v1/assignments/{assignment}/extensions", headers=key).get_json()["extensions"]
    assert listed["extra_minutes"] == 30
    assert send("ada", START + 80 * MINUTE).status_code == 202
    assert_error(send("ada", START + 90 * MINUTE), 409, "time_up")


def test_extra_minutes_are_for_a_timed_assignment_only(client, key, basics, redis):  # noqa: F811
    made = client.post("/api/v1/courses", json={"title": "Deep learning", "code": "DL101"}, headers=key)
    course_id = made.get_json()["id"]
    client.put(f"/api/v1/courses/{course_id}/members", headers={**key, "Content-Type": "text/csv"},
               data="user,name,role\nada,Ada,student\n")
    untimed = client.post(f"/api/v1/courses/{course_id}/assignments", headers=key, json={
        "exercise": "autograd-basics", "due_at": "2026-12-10T23:59+09:00"}).get_json()
    assert untimed["time_limit_minutes"] is None
    assert_error(client.post(f"/api/v1/assignments/{untimed['id']}/extensions", headers=key,
                             json={"user": "ada", "extra_minutes": 30, "reason": "x"}), 422, "invalid_extension")


def test_a_student_reads_their_start_and_own_deadline_through_the_api(timed, site, database_url, redis):
    _, url = timed
    with db.transaction(database_url) as s:
        student = s.scalar(select(User).where(User.email == "ada@example.org"))
        bearer = {"Authorization": f"Bearer {keys.personal(s, student.id, 'laptop')[1]}"}
        assignment = s.scalar(select(Assignment).where(Assignment.title == "Quiz 1"))
        api = site.test_client()

    def listed() -> dict:
        with clock.travel(START + MINUTE):
            found = api.get("/api/v1/assignments", headers=bearer).get_json()["assignments"]
        return {a["id"]: a for a in found}[assignment.id]

    before = listed()
    assert (before["time_limit_minutes"], before["started_at"], before["ends_at"], before["refusal"]) == (
        30, None, None, None)
    with db.transaction(database_url) as s:
        courses.starts.start(s, s.get(Assignment, assignment.id), s.get(User, student.id), at=START)
    after = listed()
    assert datetime.fromisoformat(after["started_at"]) == START
    assert datetime.fromisoformat(after["ends_at"]) == START + 30 * MINUTE
    with clock.travel(START + HOUR):
        late = {a["id"]: a for a in api.get("/api/v1/assignments", headers=bearer).get_json()["assignments"]}
    assert late[assignment.id]["refusal"] == "time_up"


# ------------------------------------------------------------------ the command line

def test_the_command_line_makes_a_timed_assignment(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from grader.cli import main
    from tests.live import publish_basics

    url = f"sqlite:///{tmp_path / 'grader.db'}"
    monkeypatch.setenv("GRADER_DATABASE_URL", url)
    db.upgrade(url)
    publish_basics(url)
    runner = CliRunner()
    made = runner.invoke(main, ["course", "create", "--title", "Deep learning", "--code", "DL101"])
    course_id = made.stdout.strip().splitlines()[-1]
    base = ["assignment", "create", "--course", course_id, "--exercise", "autograd-basics", "--due",
            "2026-12-10T23:59+09:00"]
    refused_limit = runner.invoke(main, [*base, "--time-limit-minutes", "0"])
    assert refused_limit.exit_code != 0
    assert "the time limit in minutes must be a whole number from 1 to 10080" in refused_limit.output
    timed_one = runner.invoke(main, [*base, "--time-limit-minutes", "45"])
    assert timed_one.exit_code == 0 and "45 minutes from each student's start" in timed_one.output
    with db.transaction(url) as s:
        assert s.get(Assignment, int(timed_one.stdout.strip().splitlines()[-1])).time_limit_minutes == 45
    db.release(url)
