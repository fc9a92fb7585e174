"""An LMS course's roster read from the LMS (Names and Role Provisioning Services, served
by the test platform on lti1p3platform): members who never launched arrive with their
LMS roles, roles change, those the LMS no longer lists leave, a platform failing changes
nothing; and a score set by hand reaches the LMS gradebook for a student with no grade,
even one who never launched."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from urllib.parse import urljoin

import pytest
import requests
from sqlalchemy import select

from grader import clock, db, submissions
from grader.accounts import users
from grader.accounts.models import User
from grader import courses
from grader.courses.models import Assignment, Course, CourseMember, Extension, ScoreOverride
from grader.lti import keys, roster
from grader.lti.models import LtiGradeTarget, LtiPlatform, LtiRoster, LtiScorePost
from grader.lti.platforms import as_platform
from grader.lti.tool import KeyPair, ServiceError, fetch_members
from grader.submissions.models import Submission
from tests.forms import csrf_over_http
from tests.live import shared_worker, stop
from tests.lti_platform import INSTRUCTOR, LEARNER, TEACHING_ASSISTANT, Pending, Platform, forms, member
from tests.lti_service import lms, service, tool  # noqa: F401  (fixtures)
from tests.test_lti import ROOT, SOLUTION, launch, submit_and_wait

SQLITE_ONLY = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
ROSTER = [member("teacher-1", [INSTRUCTOR], "Grace Hopper"), member("student-1", [LEARNER], "Ada Lovelace"),
          member("student-2", [LEARNER], "Alan Turing")]


def _lms_course(lms: Platform, service: str, browser: requests.Session | None = None) -> int:
    """The instructor opens the course's first link: the course is made, its roster service
    remembered (and its first sync queued)."""
    page = launch(lms, Pending(user="teacher-1", roles=[INSTRUCTOR], name="Grace Hopper", nrps=True,
                               custom={"exercise": "autograd-basics"}, resource_link="link-0"), browser)
    assert page.status_code == 200, page.text[:2000]
    with db.transaction(service) as session:
        return session.query(Course).one().id


def _platform_id(service: str) -> int:
    with db.transaction(service) as session:
        return session.query(LtiPlatform).one().id


def _members(service: str, course_id: int) -> dict[str, str]:
    """Who is in the course (an LMS user by their key, a local one by e-mail) with which role."""
    with db.transaction(service) as session:
        rows = session.execute(select(User, CourseMember.role).join(CourseMember, CourseMember.user_id == User.id)
                               .where(CourseMember.course_id == course_id)).all()
        return {user.external_id or user.email: role for user, role in rows}


def _roster_row(service: str) -> LtiRoster:
    with db.transaction(service) as session:
        row = session.query(LtiRoster).one()
        session.expunge(row)
        return row


def _wait(condition, seconds: float = 60, what: str = "") -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.2)


# ------------------------------------------------------------------ what a sync does

def test_a_sync_adds_who_never_launched_changes_roles_and_removes_who_left(lms, service):
    course_id = _lms_course(lms, service)
    for user in ("student-1", "student-3"):
        assert launch(lms, Pending(user=user, roles=[LEARNER], nrps=True, resource_link="link-0")).status_code == 200
    pid = _platform_id(service)
    with db.transaction(service) as session:
        course = session.get(Course, course_id)
        helper = users.create_user(session, email="helper@example.org", password="correct horse", role="student")
        elsewhere = submissions.user_by_external_id(session, f"lti:{pid + 1}|student-3")  # another platform's
        courses.set_role(session, course_id, helper.id, "ta")
        courses.set_role(session, course_id, elsewhere.id, "student")
        assignment = courses.create_assignment(session, course, exercise="autograd-basics",
                                                   due_at=(clock.now() + timedelta(days=7)).isoformat())
        leaving = session.query(User).filter_by(external_id=f"lti:{pid}|student-3").one()
        submitted = courses.submit(session, user=leaving, assignment=assignment, source=SOLUTION).id
        courses.grant_extension(session, assignment, leaving, extra_attempts=1, reason="ill", by="teacher")
        courses.set_override(session, assignment, leaving, score=3, reason="partial credit", by="teacher")
        leaving_id = leaving.id
    lms.roster = [member("teacher-1", [INSTRUCTOR], "Grace Hopper"),
                  member("student-1", [TEACHING_ASSISTANT], "Ada Lovelace"),  # made a TA in the LMS
                  member("student-2", [LEARNER], "Alan Turing"),  # never launched
                  member("student-3", [LEARNER], "Left Early", status="Inactive"),  # dropped the course
                  member("ta-1", [LEARNER, TEACHING_ASSISTANT], "Barbara Liskov")]

    result = roster.sync(course_id)

    assert (result.added, result.changed, result.removed, result.active) == (2, 1, 1, 4)
    assert lms.errors == []
    assert _members(service, course_id) == {
        f"lti:{pid}|teacher-1": "instructor", f"lti:{pid}|student-1": "ta", f"lti:{pid}|student-2": "student",
        f"lti:{pid}|ta-1": "ta",
        "helper@example.org": "ta", f"lti:{pid + 1}|student-3": "student"}  # local and elsewhere: untouched
    with db.transaction(service) as session:
        new = session.query(User).filter_by(external_id=f"lti:{pid}|student-2").one()
        assert (new.name, new.role, new.password_hash) == ("Alan Turing", "student", None)
        # who left keeps their work, extension and score set by hand
        assert session.get(Submission, submitted).user_id == leaving_id
        assert session.query(Extension).filter_by(user_id=leaving_id).count() == 1
        assert session.query(ScoreOverride).filter_by(user_id=leaving_id).one().score == 3
    row = _roster_row(service)
    assert (row.added, row.changed, row.removed, row.error, row.failed_at) == (2, 1, 1, None, None)
    assert row.synced_at is not None
    # The same roster again changes nothing.
    assert str(roster.sync(course_id)) == "0 added, 0 roles changed, 0 removed (4 active in the LMS)"


def test_names_from_the_roster_are_stored_without_control_characters(lms, service):
    course_id = _lms_course(lms, service)
    lms.roster = ROSTER + [member("student-7", [LEARNER], "\u202eAlan\x1b Tu\x00ring\r\n"),
                           member("student-8", [LEARNER], "\tBarbara\u2028Liskov\x85")]
    roster.sync(course_id)
    pid = _platform_id(service)
    with db.transaction(service) as session:
        names = {u.external_id: u.name for u in session.query(User)}
    assert (names[f"lti:{pid}|student-7"], names[f"lti:{pid}|student-8"]) == ("Alan Turing", "Barbara Liskov")


@SQLITE_ONLY
def test_the_roster_is_read_page_after_page_with_one_token(lms, service):
    course_id = _lms_course(lms, service)
    lms.roster = ROSTER + [member(f"student-{n}", [LEARNER]) for n in range(3, 6)]  # 6 members
    lms.roster_page_size = 2
    tokens = lms.token_requests

    assert roster.sync(course_id).added == 5

    assert [r.get("page") for r in lms.memberships_requests] == [None, "2", "3"]
    assert lms.token_requests == tokens + 1
    assert len(_members(service, course_id)) == 6


@SQLITE_ONLY
def test_a_roster_with_more_pages_than_the_cap_is_refused(lms, service):
    _lms_course(lms, service)
    lms.roster, lms.roster_page_size = ROSTER, 1
    with db.transaction(service) as session:
        platform = as_platform(session.query(LtiPlatform).one())
        key_row = keys.current(session)
        key = KeyPair(kid=key_row.kid, private_pem=key_row.private_pem, public_pem=key_row.public_pem)
    url = f"{lms.url}/memberships"
    assert [m.user_id for m in fetch_members(platform, key, memberships_url=url, max_pages=3)] == \
        ["teacher-1", "student-1", "student-2"]
    with pytest.raises(ServiceError, match="more than 2 pages"):
        fetch_members(platform, key, memberships_url=url, max_pages=2)
    with pytest.raises(ServiceError, match="more than 2 members"):
        fetch_members(platform, key, memberships_url=url, max_members=2)


@SQLITE_ONLY
def test_a_next_page_on_another_origin_is_not_followed(lms, service):
    course_id = _lms_course(lms, service)
    lms.roster, lms.roster_page_size = ROSTER, 2
    lms.next_page_origin = lms.url.replace("127.0.0.1", "localhost")  # the same server by another name
    before = _members(service, course_id)

    with pytest.raises(ServiceError, match="not on the memberships URL's origin"):
        roster.sync(course_id)

    assert len(lms.memberships_requests) == 1  # the token never went there
    assert _members(service, course_id) == before
    assert "origin" in _roster_row(service).error


@pytest.mark.parametrize("answers, error, shown", [
    ({2: (503, "busy")}, "the LMS answered 503: busy", "503: busy"),
    ({1: (200, "<html>maintenance</html>")}, "is not JSON", "is not JSON"),
    ({1: (200, json.dumps({"members": "everyone"}))}, 'not an object with a list of "members"', "malformed"),
    ({1: (200, json.dumps({"members": [{"roles": [LEARNER]}]}))}, "a member's user_id is not", "user_id"),
], ids=["5xx-on-page-2", "not-json", "members-not-a-list", "member-without-id"])
def test_a_platform_failing_leaves_the_roster_as_it_was_and_says_why(lms, service, answers, error, shown):
    browser = requests.Session()
    course_id = _lms_course(lms, service, browser)
    assert launch(lms, Pending(user="student-1", roles=[LEARNER], nrps=True, resource_link="link-0")).ok
    lms.roster, lms.roster_page_size = [member("teacher-1", [INSTRUCTOR]), member("student-7", [LEARNER])], 1
    lms.memberships_answers = answers
    before = _members(service, course_id)

    with pytest.raises(ServiceError):
        roster.sync(course_id)

    assert _members(service, course_id) == before  # student-1 not removed, student-7 not added
    row = _roster_row(service)
    assert error in row.error and row.failed_at is not None and row.synced_at is None
    page = browser.get(f"{lms.tool_url}/courses/{course_id}", timeout=30).text
    assert "failed and left the roster as it was" in page and shown in page


# ------------------------------------------------------------------ who asks for one, and the page

@SQLITE_ONLY
def test_only_the_courses_instructor_syncs_it_from_the_course_page(lms, service, tmp_path):
    lms.roster = ROSTER + [member("ta-1", [TEACHING_ASSISTANT])]
    worker = shared_worker(tmp_path)
    try:
        teacher = requests.Session()
        course_id = _lms_course(lms, service, teacher)  # its first launch: the roster is read once
        _wait(lambda: _roster_row(service).synced_at is not None, what="the launch's sync never ran")
        page = teacher.get(f"{lms.tool_url}/courses/{course_id}", timeout=30)
        assert "Last synced" in page.text and "3 added, 0 roles changed, 0 removed" in page.text
        sync_form = next(f for f in forms(page.text) if f["action"].endswith("/roster/sync"))

        for user, roles in (("student-1", [LEARNER]), ("ta-1", [TEACHING_ASSISTANT])):
            browser = requests.Session()
            assert launch(lms, Pending(user=user, roles=roles, nrps=True, resource_link="link-0"), browser).ok
            course_page = browser.get(f"{lms.tool_url}/courses/{course_id}", timeout=30).text
            assert "/roster/sync" not in course_page  # no button for them
            token = csrf_over_http(browser, f"{lms.tool_url}/exercises/autograd-basics")
            refused = browser.post(f"{lms.tool_url}{sync_form['action']}", data={"csrf_token": token}, timeout=30,
                                   allow_redirects=False)
            assert refused.status_code == 403, (user, refused.status_code)

        forged = teacher.post(f"{lms.tool_url}{sync_form['action']}", data={}, timeout=30, allow_redirects=False)
        assert forged.status_code == 400  # no CSRF token: not the course page's form
        lms.roster = lms.roster + [member("student-4", [LEARNER], "Late Joiner")]
        done = teacher.post(f"{lms.tool_url}{sync_form['action']}",
                            data={"csrf_token": sync_form["fields"]["csrf_token"]}, timeout=30, allow_redirects=False)
        assert done.status_code == 303 and done.headers["Location"].endswith(f"/courses/{course_id}?roster=queued")
        queued = teacher.get(urljoin(done.url, done.headers["Location"]), timeout=30)
        assert "The roster sync is queued" in queued.text
        _wait(lambda: _roster_row(service).added == 1, what="the button's sync never ran")
    finally:
        stop(worker)
    page = teacher.get(f"{lms.tool_url}/courses/{course_id}", timeout=30).text
    assert "1 added, 0 roles changed, 0 removed" in page
    assert f"lti:{_platform_id(service)}|student-4" in _members(service, course_id)


@SQLITE_ONLY
def test_a_course_whose_lms_offers_no_roster_says_so(lms, service):
    browser = requests.Session()
    page = launch(lms, Pending(user="teacher-1", roles=[INSTRUCTOR], custom={"exercise": "autograd-basics"}),
                  browser)  # no NRPS claim
    assert page.status_code == 200
    with db.transaction(service) as session:
        course_id = session.query(Course).one().id
    course_page = browser.get(f"{lms.tool_url}/courses/{course_id}", timeout=30).text
    assert "offered no roster service" in course_page and "/roster/sync" not in course_page
    token = csrf_over_http(browser, f"{lms.tool_url}/courses/{course_id}")
    refused = browser.post(f"{lms.tool_url}/courses/{course_id}/roster/sync", data={"csrf_token": token}, timeout=30)
    assert refused.status_code == 409 and "offered no roster service" in refused.text
    with pytest.raises(roster.NoRoster):
        roster.sync(course_id)


@SQLITE_ONLY
def test_a_launch_syncs_the_roster_once_a_day(lms, service, redis, tmp_path):
    def queued() -> list:
        """The tasks waiting in the workers' queue: (name, args)."""
        return [(m["headers"]["task"], json.loads(base64.b64decode(m["body"]))[0])
                for m in map(json.loads, redis.lrange("cpu", 0, -1))]

    lms.roster = ROSTER
    course_id = _lms_course(lms, service)
    assert launch(lms, Pending(user="student-1", roles=[LEARNER], nrps=True, resource_link="link-0")).ok
    assert queued() == [("grader.lti.sync_roster", [course_id])]  # two launches, one sync
    worker = shared_worker(tmp_path)
    try:
        _wait(lambda: _roster_row(service).synced_at is not None, what="the queued sync never ran")
    finally:
        stop(worker)
    assert len(_members(service, course_id)) == 3 and queued() == []
    assert launch(lms, Pending(user="student-2", roles=[LEARNER], nrps=True, resource_link="link-0")).ok
    assert queued() == []  # synced within the day: nothing more

    with db.transaction(service) as session:  # a day and an hour later
        row = session.query(LtiRoster).one()
        row.synced_at = row.requested_at = clock.now() - timedelta(hours=25)
    assert launch(lms, Pending(user="student-2", roles=[LEARNER], nrps=True, resource_link="link-0")).ok
    assert launch(lms, Pending(user="student-1", roles=[LEARNER], nrps=True, resource_link="link-0")).ok
    assert queued() == [("grader.lti.sync_roster", [course_id])]


@SQLITE_ONLY
def test_the_configuration_document_asks_for_the_roster_scope(client):
    document = client.get("/lti/config", base_url="https://grader.example.edu").get_json()
    assert "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly" in document["scopes"]


@pytest.mark.slow  # takes seconds: left out of the fast loop
@SQLITE_ONLY
def test_the_command_line_syncs_a_courses_roster(lms, service):
    course_id = _lms_course(lms, service)
    lms.roster = ROSTER
    command = [sys.executable, "-m", "grader.cli", "course", "sync-roster", "--course", str(course_id)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"course {course_id}: 2 added, 0 roles changed, 0 removed (3 active in the LMS)"

    lms.memberships_answers = {1: (500, "oops")}
    failed = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    assert failed.returncode == 1 and "stays as it was: the LMS answered 500: oops" in failed.stderr
    with db.transaction(service) as session:
        local = courses.create_course(session, title="Local", code="LOC1")
        local_id = local.id
    missing = subprocess.run(command[:-1] + [str(local_id)], cwd=ROOT, capture_output=True, text=True)
    assert missing.returncode == 1 and "no roster to read" in missing.stderr


# ------------------------------------------------------------------ a score set by hand, with no grade

def _assignment_with_a_launched_link(lms: Platform, service: str) -> int:
    """The instructor's course gets an assignment; a student (student-1) opens its link in
    the LMS, which records where the assignment's scores go, and submits nothing."""
    course_id = _lms_course(lms, service)
    with db.transaction(service) as session:
        assignment_id = courses.create_assignment(
            session, session.get(Course, course_id), exercise="autograd-basics",
            due_at=(clock.now() + timedelta(days=7)).isoformat()).id
    page = launch(lms, Pending(user="student-1", roles=[LEARNER], nrps=True, resource_link="link-2",
                               custom={"assignment": str(assignment_id)}))
    assert page.status_code == 200 and page.url.endswith(f"/assignments/{assignment_id}"), page.text[:2000]
    return assignment_id


def _set_by_staff(service: str, assignment_id: int, sub: str, *, score=None, extra_attempts=None) -> None:
    with db.transaction(service) as session:
        assignment = session.get(Assignment, assignment_id)
        student = session.query(User).filter_by(external_id=f"lti:{_platform_id(service)}|{sub}").one()
        if score is not None:
            courses.set_override(session, assignment, student, score=score, reason="oral exam", by="teacher-1")
        else:
            courses.grant_extension(session, assignment, student, extra_attempts=extra_attempts,
                                        reason="ill", by="teacher-1")
        user_id = student.id
    courses.announce_standing(assignment_id, user_id)


def test_a_score_set_by_hand_reaches_the_lms_for_a_student_who_never_launched(lms, service, tmp_path):
    lms.roster = ROSTER + [member("student-8", [LEARNER], "Only Extended")]
    assignment_id = _assignment_with_a_launched_link(lms, service)
    with db.transaction(service) as session:
        course_id = session.get(Assignment, assignment_id).course_id
    roster.sync(course_id)  # student-2 and student-8: members who never launched
    worker = shared_worker(tmp_path)
    try:
        _set_by_staff(service, assignment_id, "student-8", extra_attempts=1)  # what counts is still nothing
        _set_by_staff(service, assignment_id, "student-2", score=5)
        _wait(lambda: lms.scores, what=f"no score reached the LMS: {lms.errors}")
    finally:
        stop(worker)
    [score] = lms.scores  # student-8's extension sent nothing
    assert (score["userId"], score["lineitem"], score["scoreGiven"], score["scoreMaximum"]) == ("student-2", "1", 5, 6)
    assert (score["activityProgress"], score["gradingProgress"]) == ("Completed", "FullyGraded")
    pid = _platform_id(service)
    with db.transaction(service) as session:
        student = session.query(User).filter_by(external_id=f"lti:{pid}|student-2").one()
        override = session.query(ScoreOverride).filter_by(user_id=student.id).one()
        stamp = override.set_at if override.set_at.tzinfo else override.set_at.replace(tzinfo=timezone.utc)
        assert datetime.fromisoformat(score["timestamp"]) == stamp.replace(microsecond=stamp.microsecond // 1000 * 1000)
        target = session.query(LtiGradeTarget).filter_by(user_id=student.id).one()  # made from student-1's
        assert (target.lti_user_id, target.lineitem_url, target.assignment_id) == \
            ("student-2", f"{lms.url}/lineitems/1", assignment_id)
        [post] = session.query(LtiScorePost).all()
        assert (post.target_id, post.submission_id, post.outcome, post.score_given) == (target.id, None, "sent", 5)
        extended = session.query(User).filter_by(external_id=f"lti:{pid}|student-8").one()
        assert session.query(LtiGradeTarget).filter_by(user_id=extended.id).count() == 0


@SQLITE_ONLY
def test_the_deliveries_page_shows_a_score_set_by_hand_without_a_submission(lms, service, tmp_path):
    lms.roster = ROSTER
    assignment_id = _assignment_with_a_launched_link(lms, service)
    worker = shared_worker(tmp_path)
    try:
        _set_by_staff(service, assignment_id, "student-1", score=4)  # launched, never submitted
        _wait(lambda: lms.scores, what=f"no score reached the LMS: {lms.errors}")
    finally:
        stop(worker)
    assert [(s["userId"], s["scoreGiven"]) for s in lms.scores] == [("student-1", 4)]
    with db.transaction(service) as session:
        users.create_user(session, email="admin@example.org", password="correct horse", role="admin")
    browser = requests.Session()
    login = browser.get(f"{lms.tool_url}/login", timeout=30)
    browser.post(f"{lms.tool_url}/login", data={"csrf_token": forms(login.text)[-1]["fields"]["csrf_token"],
                                                "email": "admin@example.org", "password": "correct horse"},
                 timeout=30)
    page = browser.get(f"{lms.tool_url}/instructor/lti/deliveries", timeout=30)
    assert page.status_code == 200 and "a score set by hand for LMS user student-1" in page.text


def test_a_score_set_by_hand_for_a_student_with_a_grade_goes_with_the_grade_as_before(lms, service, tmp_path):
    lms.roster = ROSTER  # the first launch's sync runs once the worker starts
    assignment_id = _assignment_with_a_launched_link(lms, service)
    worker = shared_worker(tmp_path)
    try:
        browser = requests.Session()
        page = launch(lms, Pending(user="student-1", roles=[LEARNER], nrps=True, resource_link="link-2"), browser)
        submit_and_wait(browser, page, lms, tmp_path)
        _set_by_staff(service, assignment_id, "student-1", score=2)
        _wait(lambda: len(lms.scores) == 2, what=f"the score set by hand never came: {lms.errors}")
    finally:
        stop(worker)
    assert [s["scoreGiven"] for s in lms.scores] == [6, 2]
    stamps = [datetime.fromisoformat(s["timestamp"]) for s in lms.scores]
    assert stamps[1] > stamps[0]
    with db.transaction(service) as session:
        graded = session.query(Submission).one().id
        assert [(p.submission_id, p.score_given) for p in session.query(LtiScorePost).order_by(LtiScorePost.id)] \
            == [(graded, 6), (graded, 2)]
