"""The course pages through Flask's test client on a real database and Redis: an
instructor makes a course, imports a roster and sets an assignment; a student sees the
due date in the course's time zone, submits under the rules, is refused with the reason
(and keeps the code typed), and sees hidden results only after the due date; the
gradebook and its CSV. The service's clock is moved, not a library's."""

from __future__ import annotations

import csv
import io
import re
from datetime import datetime, timedelta, timezone

import pytest

from sqlalchemy import func, select
from werkzeug.http import parse_options_header

from grader import clock, courses, db
from grader.accounts import users
from grader.accounts.models import User
from grader.courses.models import Course
from grader.submissions.models import Submission
from tests.mailbox import queued_mail
from tests.forms import sign_in, token
from tests.test_web import GOOD, TWICE, ada, rows, site, store_grade  # noqa: F401  (fixtures too)

DUE = datetime(2026, 12, 10, 14, 59, tzinfo=timezone.utc)  # 23:59 in Seoul
HOUR = timedelta(hours=1)


@pytest.fixture
def course(site, database_url, redis):
    """Ines (a local instructor) made DL101 in Seoul with Ada in it, and one assignment of
    autograd-basics due 2026-12-10 23:59 there: two attempts, hidden results after the due date."""
    with db.transaction(database_url) as s:
        users.create_user(s, email="prof@example.org", password="correct horse", role="instructor", name="Prof")
    prof = site.test_client()
    assert sign_in(prof, "prof@example.org").status_code == 302
    made = prof.post("/courses", data={"title": "Deep learning", "code": "DL101", "time_zone": "Asia/Seoul",
                                       "csrf_token": token(prof, "/courses")})
    assert made.status_code == 303
    course_url = made.headers["Location"]
    roster = prof.post(f"{course_url}/members", content_type="multipart/form-data", data={
        "roster": (io.BytesIO(b"email,name,role\nada@example.org,Ada,student\n"), "roster.csv"),
        "csrf_token": token(prof, course_url)})
    assert "1 members added" in roster.get_data(as_text=True)
    queued_mail(redis)  # Ada's "added to a course" notice: not among the tasks these tests count
    assignment = prof.post(f"{course_url}/assignments", data={
        "exercise": "autograd-basics", "due_at": "2026-12-10T23:59", "attempts": "2", "counts": "best",
        "feedback": "after_due", "late_policy": "none", "csrf_token": token(prof, course_url)})
    assert assignment.status_code == 303, assignment.get_data(as_text=True)
    return prof, course_url, assignment.headers["Location"]


def submit(client, url: str, source: str, at: datetime):
    with clock.travel(at):
        return client.post(f"{url}/submissions", data={"source": source, "csrf_token": token(client, url)},
                           content_type="multipart/form-data")


def test_a_student_sees_the_due_date_in_the_courses_zone_and_submits_under_its_rules(course, ada, database_url,
                                                                                      redis):
    _, course_url, assignment_url = course
    with clock.travel(DUE - 50 * HOUR - timedelta(minutes=30)):
        page = ada.get(assignment_url).get_data(as_text=True)
    assert "2026-12-10 23:59 KST (Asia/Seoul)" in page and "2 days 2 hours left" in page
    assert submit(ada, assignment_url, GOOD, DUE - HOUR).status_code == 303
    assert submit(ada, assignment_url, TWICE, DUE - HOUR).status_code == 303
    refused = submit(ada, assignment_url, "def grad_2xtx(x):\n    return 3 * x  # my third try\n", DUE - HOUR)
    assert refused.status_code == 409
    text = refused.get_data(as_text=True)
    assert "You have used all 2 attempts." in text and "my third try" in text  # nothing typed is lost
    assert [row.assignment_id for row in rows(database_url)] == [1, 1]


def test_hidden_results_and_the_score_wait_for_the_due_date(course, ada, database_url, redis):
    _, course_url, assignment_url = course
    submit(ada, assignment_url, TWICE, DUE - HOUR)
    submission = rows(database_url)[0]
    store_grade(database_url, submission.id, TWICE)
    with clock.travel(DUE - HOUR):
        before = ada.get(f"/submissions/{submission.id}").get_data(as_text=True)
        status = ada.get(f"/submissions/{submission.id}/status").get_json()
        listed = ada.get(course_url).get_data(as_text=True)
    assert "results of 3 hidden tests are shown after the due date, 2026-12-10 23:59 KST" in before
    assert "(hidden)" not in before and "Score:" not in before
    assert status["score"] is None and "after the due date" in listed
    with clock.travel(DUE + HOUR):
        after = ada.get(f"/submissions/{submission.id}").get_data(as_text=True)
    assert "(hidden)" in after and re.search(r"Score: [\d.]+ / 6", after)


def test_a_refusal_says_when_the_assignment_reopens(course, ada, redis):
    prof, course_url, _ = course
    made = prof.post(f"{course_url}/assignments", data={
        "exercise": "autograd-basics", "opens_at": "2026-12-11T09:00", "due_at": "2026-12-12T23:59",
        "cooldown_minutes": "120", "csrf_token": token(prof, course_url)})
    later = made.headers["Location"]
    # Moments 20 s off the minute: the service's clock runs on within a request, and a loaded
    # machine must not move a wait across a unit the words show.
    early = submit(ada, later, GOOD, DUE - timedelta(seconds=20))
    assert early.status_code == 409
    assert "This assignment opens at 2026-12-11 09:00 KST (Asia/Seoul), in 9 hours 1 minute." in early.get_data(
        as_text=True)
    assert submit(ada, later, GOOD, DUE + 12 * HOUR).status_code == 303
    pause = submit(ada, later, GOOD, DUE + 12 * HOUR + timedelta(minutes=29, seconds=40))
    assert pause.status_code == 429 and ("Wait 1 hour 30 minutes, until 2026-12-11 13:59 KST (Asia/Seoul), before "
                                         "your next attempt.") in pause.get_data(as_text=True)


def test_staff_grant_extensions_set_scores_and_export_the_gradebook(course, ada, database_url, redis):
    prof, course_url, assignment_url = course
    submit(ada, assignment_url, TWICE, DUE - HOUR)
    store_grade(database_url, rows(database_url)[0].id, TWICE)
    page = prof.get(assignment_url).get_data(as_text=True)
    ada_id = re.search(r'<option value="(\d+)">[^<]*ada@example.org', page).group(1)
    granted = prof.post(f"{assignment_url}/extensions", data={"student": ada_id, "extra_attempts": "1",
                                                             "reason": "ill", "csrf_token": token(prof, assignment_url)})
    assert granted.status_code == 303
    refused = prof.post(f"{assignment_url}/overrides", data={"student": ada_id, "score": "60", "reason": "x",
                                                            "csrf_token": token(prof, assignment_url)})
    assert refused.status_code == 422 and "the score must be a number from 0 to 6" in refused.get_data(as_text=True)
    prof.post(f"{assignment_url}/overrides", data={"student": ada_id, "score": "5.5", "reason": "partial credit",
                                                   "csrf_token": token(prof, assignment_url)})
    book = prof.get(f"{course_url}/gradebook").get_data(as_text=True)
    assert "5.5" in book and "partial credit" in book and "extension: ill" in book
    exported = prof.get(f"{course_url}/gradebook.csv")
    [row] = list(csv.DictReader(io.StringIO(exported.get_data(as_text=True))))
    assert (row["student"], row["total"]) == ("ada@example.org", "5.5")
    assert ada.get(f"{course_url}/gradebook").status_code == 403  # students see their own standing only


def test_a_course_code_another_course_has_is_refused_on_the_page_and_a_korean_one_exports(course, database_url):
    prof, _, _ = course
    taken = prof.post("/courses", data={"title": "Deep learning, again", "code": "dl101", "time_zone": "Asia/Seoul",
                                        "csrf_token": token(prof, "/courses")})
    page = taken.get_data(as_text=True)
    assert taken.status_code == 409
    assert "There is already a course with the code dl101. Course codes are unique" in page
    assert 'value="Deep learning, again"' in page  # the form as it was sent
    with db.transaction(database_url) as s:
        assert s.scalar(select(func.count()).select_from(Course)) == 1
    made = prof.post("/courses", data={"title": "딥러닝", "code": "딥러닝101", "csrf_token": token(prof, "/courses")})
    assert made.status_code == 303
    exported = prof.get(made.headers["Location"] + "/gradebook.csv?per=submission")
    assert exported.status_code == 200 and exported.mimetype == "text/csv"
    assert parse_options_header(exported.headers["Content-Disposition"]) == (
        "attachment", {"filename": "딥러닝101-submissions.csv"})


def test_a_course_is_not_found_by_those_outside_it(course, site):
    _, course_url, assignment_url = course
    bob = site.test_client()
    sign_in(bob, "bob@example.org")
    assert bob.get(course_url).status_code == 404 and bob.get(assignment_url).status_code == 404
    made = bob.post("/courses", data={"title": "Mine", "code": "X", "csrf_token": token(bob, "/courses")})
    assert made.status_code == 403  # students do not make courses


def test_course_pages_come_in_korean(course, ada):
    _, course_url, assignment_url = course
    ada.post("/language", data={"lang": "ko", "next": course_url, "csrf_token": token(ada, course_url)})
    page = ada.get(assignment_url).get_data(as_text=True)
    assert "반영 점수" in page and "사용한 시도" in page and "결과는 마감 후에 공개됩니다" in page


def test_staff_start_a_regrade_and_follow_it_on_its_page(course, ada, database_url, redis):
    prof, course_url, assignment_url = course
    submit(ada, assignment_url, GOOD, DUE - HOUR)
    store_grade(database_url, rows(database_url)[0].id, GOOD)
    started = prof.post(f"{assignment_url}/regrades", data={"csrf_token": token(prof, assignment_url)})
    assert started.status_code == 303
    page = prof.get(started.headers["Location"]).get_data(as_text=True)
    assert "Regrade against version 1" in page and "0 / 1" in page and "Running" in page
    assert ada.get(started.headers["Location"]).status_code == 404
    refused = prof.post(f"{started.headers['Location']}/publish", data={"csrf_token": token(prof, assignment_url)})
    assert refused.status_code == 409  # not finished
    prof.post(f"{started.headers['Location']}/discard", data={"csrf_token": token(prof, assignment_url)})
    assert "Discarded" in prof.get(started.headers["Location"]).get_data(as_text=True)


def test_a_syntax_error_on_an_assignment_is_refused_and_spends_no_attempt(course, ada, database_url, redis):
    prof, course_url, _ = course
    made = prof.post(f"{course_url}/assignments", data={
        "exercise": "autograd-basics", "due_at": "2026-12-10T23:59", "attempts": "1", "cooldown_minutes": "30",
        "csrf_token": token(prof, course_url)})
    one_try = made.headers["Location"]
    refused = submit(ada, one_try, "def grad_2xtx(x):  # <mine>\r\n    return x +\r\n", DUE - HOUR)
    assert refused.status_code == 422
    text = refused.get_data(as_text=True)
    assert "Your code has a syntax error on line 2: invalid syntax. Nothing was submitted; no attempt was used." in text
    assert "# &lt;mine&gt;" in text and rows(database_url) == [] and redis.llen("cpu") == 0
    assert submit(ada, one_try, GOOD, DUE - HOUR).status_code == 303  # at once: no cool-down started
    assert [row.source for row in rows(database_url)] == [GOOD]


def test_signing_in_lands_a_course_member_on_their_course_and_anyone_else_on_the_catalogue(site, database_url):
    with db.transaction(database_url) as s:
        bob = s.scalar(select(User).where(User.email == "bob@example.org"))
        course = courses.create_course(s, title="Deep learning", code="DL101")
        courses.set_role(s, course.id, bob.id, "student")
        courses.create_assignment(s, course, exercise="autograd-basics", title="First gradients",
                                  due_at="2099-01-01T00:00+00:00")
        course_id = course.id
    member, outsider = site.test_client(), site.test_client()
    landed = sign_in(member, "bob@example.org")
    assert landed.location == "/"
    home = member.get("/")
    assert home.location == f"/courses/{course_id}"
    assert "First gradients" in member.get(home.location).get_data(as_text=True)
    sign_in(outsider, "ada@example.org")
    assert outsider.get("/").location == "/exercises"


def test_the_submit_button_says_before_sending_that_it_is_late_and_is_disabled_with_no_attempt_left(
        course, ada, database_url, redis):
    prof, course_url, assignment_url = course
    with db.transaction(database_url) as s:  # late work taken for two days, 10% a day
        from grader.courses.models import Assignment
        assignment = s.get(Assignment, int(assignment_url.rsplit("/", 1)[1]))
        assignment.late_until, assignment.late_policy, assignment.late_percent = DUE + 48 * HOUR, "per_day", 10.0
    with clock.travel(DUE + 3 * HOUR - timedelta(seconds=30)):
        page = ada.get(assignment_url).get_data(as_text=True)
    assert "Submitting now is late by 2 hours 59 minutes: this submission would lose 10% of its score." in page
    assert 'aria-describedby="late-note">Submit late</button>' in page
    with clock.travel(DUE - HOUR):
        assert "late by" not in ada.get(assignment_url).get_data(as_text=True)
    for source in (GOOD, TWICE):
        assert submit(ada, assignment_url, source, DUE - HOUR).status_code == 303
    with clock.travel(DUE - HOUR):
        page = ada.get(assignment_url).get_data(as_text=True)
    assert 'disabled aria-describedby="submit-error">Submit</button>' in page
    assert "You have used all 2 attempts." in page and "Run visible tests" in page  # practice stays open
