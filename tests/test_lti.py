"""LTI 1.3 against a real platform implementation (lti1p3platform, in tests/lti_platform.py):
login -> launch -> submit -> grade by a real worker -> the score in the platform's gradebook;
deep linking accepted by the platform's validator; forged, replayed and expired launches
refused with a page a person can act on."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest
import requests

from grader import catalog, db
from grader.accounts.models import User
from grader.courses.models import Assignment, Course, CourseExercise, CourseMember
from grader.lti.models import LtiGradeTarget, LtiPlatform, LtiResourceLink, LtiScorePost
from tests.forms import sign_in
from tests.live import shared_worker, stop
from tests.lti_platform import INSTRUCTOR, LEARNER, Pending, Platform, follow_forms, forms, rsa_pair
from tests.lti_service import lms, service, tool  # noqa: F401  (fixtures)

ROOT = Path(__file__).resolve().parent.parent
SOLUTION = (ROOT / "exercises" / "autograd-basics" / "solution.py").read_text()
SQLITE_ONLY = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)


def launch(lms: Platform, pending: Pending, browser: requests.Session | None = None) -> requests.Response:
    """Click the link in the course: the platform's start, the tool's login redirect, the
    platform's auth answer (a form posted to the tool's launch), wherever the tool sends us."""
    browser = browser or requests.Session()
    response = browser.get(lms.start_url(pending), timeout=30)
    return follow_forms(browser, response)


def student(**kwargs) -> Pending:
    return Pending(**{"user": "student-1", "roles": [LEARNER], "custom": {"exercise": "autograd-basics"}, **kwargs})


def submit_and_wait(browser, page, lms: Platform, tmp_path, scores: int = 1) -> None:
    """Submit the reference through the page's form, then wait for the worker's grade to
    reach the platform's gradebook as its ``scores``-th score."""
    form = next(f for f in forms(page.text) if f["action"].split("?")[0].endswith("/submissions"))
    origin = page.url.split("/", 3)
    submitted = browser.post("/".join(origin[:3]) + form["action"],
                             data={"csrf_token": form["fields"]["csrf_token"], "source": SOLUTION}, timeout=30)
    assert submitted.status_code == 200 and "/submissions/" in submitted.url
    deadline = time.monotonic() + 120
    while len(lms.scores) < scores and time.monotonic() < deadline:
        time.sleep(0.3)
    assert len(lms.scores) == scores, (lms.errors, (tmp_path / "worker.log").read_text()[-3000:])


# ------------------------------------------------------------------ the whole way

def test_a_student_launched_from_the_lms_submits_and_the_score_reaches_the_gradebook(lms, service, tmp_path):
    worker = shared_worker(tmp_path)
    try:
        browser = requests.Session()
        page = launch(lms, student(), browser)
        assert page.status_code == 200, page.text[:2000]
        assert page.url.split("?")[0].endswith("/exercises/autograd-basics")
        assert "grad_2xtx" in page.text or "backward" in page.text
        submit_and_wait(browser, page, lms, tmp_path)
    finally:
        stop(worker)
    score = lms.scores[-1]
    assert score["scoreGiven"] == 6 and score["scoreMaximum"] == 6
    assert score["userId"] == "student-1" and score["lineitem"] == "1"
    assert score["activityProgress"] == "Completed" and score["gradingProgress"] == "FullyGraded"
    assert score["timestamp"]
    assert lms.errors == []
    with db.transaction(service) as session:
        platform_id = session.query(LtiPlatform).one().id
        user = session.query(User).filter_by(external_id=f"lti:{platform_id}|student-1").one()
        assert user.role == "student" and user.name == "Ada Lovelace" and user.password_hash is None
        assert session.query(LtiGradeTarget).filter_by(user_id=user.id).count() == 1
        posts = session.query(LtiScorePost).all()
        assert [p.outcome for p in posts] == ["sent"] and posts[0].score_given == 6


def test_a_placement_without_a_line_item_gets_one_created_on_the_first_grade(lms, service, tmp_path):
    worker = shared_worker(tmp_path)
    try:
        browser = requests.Session()
        page = launch(lms, student(lineitem=False), browser)
        assert page.status_code == 200 and page.url.split("?")[0].endswith("/exercises/autograd-basics"), page.text[:2000]
        for graded in (1, 2):  # the second grade finds the line item on its target: nothing is created
            submit_and_wait(browser, page, lms, tmp_path, graded)
    finally:
        stop(worker)
    assert lms.errors == []
    [item] = lms.lineitems
    assert item["label"] == catalog.find("autograd-basics").title["en"]
    assert item["scoreMaximum"] == 6 and item["resourceLinkId"] == "link-1"
    assert item["tag"] == "grader:autograd-basics"
    assert lms.lineitem_queries == [{"resourceLinkId": "link-1"}]  # looked for once, through the filter
    created = item["id"].rsplit("/", 1)[-1]
    assert [(s["lineitem"], s["scoreGiven"], s["scoreMaximum"]) for s in lms.scores] == [(created, 6, 6)] * 2
    with db.transaction(service) as session:
        [target] = session.query(LtiGradeTarget).all()
        assert target.lineitem_url == item["id"] and target.resource_link_id == "link-1"
        assert target.lineitems_url == f"{lms.url}/lineitems"
        assert [p.outcome for p in session.query(LtiScorePost).order_by(LtiScorePost.id)] == ["sent", "sent"]


@SQLITE_ONLY
def test_the_score_task_retries_an_lms_that_fails_and_keeps_each_attempt(lms, service, tmp_path, monkeypatch):
    monkeypatch.setenv("GRADER_RETRY_BASE_S", "0.5")
    lms.fail_scores = 2
    worker = shared_worker(tmp_path)
    try:
        browser = requests.Session()
        page = launch(lms, student(), browser)
        form = next(f for f in forms(page.text) if f["action"].split("?")[0].endswith("/submissions"))
        browser.post(page.url.rsplit("/exercises/", 1)[0] + form["action"],
                     data={"csrf_token": form["fields"]["csrf_token"], "source": SOLUTION}, timeout=30)
        deadline = time.monotonic() + 120
        while not lms.scores and time.monotonic() < deadline:
            time.sleep(0.3)
    finally:
        stop(worker)
    assert lms.scores and lms.scores[-1]["scoreGiven"] == 6
    with db.transaction(service) as session:
        posts = session.query(LtiScorePost).order_by(LtiScorePost.id).all()
        assert [(p.outcome, p.status_code, p.attempt) for p in posts] == [
            ("error", 503, 1), ("error", 503, 2), ("sent", 200, 3)]


@SQLITE_ONLY
def test_an_instructor_launch_makes_a_course_instructor_and_a_link_remembers_its_exercise(lms, service):
    page = launch(lms, Pending(user="teacher-1", roles=[INSTRUCTOR], custom={"exercise": "autograd-basics"},
                               resource_link="link-7"))
    assert page.status_code == 200 and page.url.split("?")[0].endswith("/exercises/autograd-basics")
    # The same link launched again without the custom parameter still opens the exercise.
    again = launch(lms, Pending(user="student-2", roles=[LEARNER], resource_link="link-7"))
    assert again.status_code == 200 and again.url.split("?")[0].endswith("/exercises/autograd-basics")
    with db.transaction(service) as session:
        platform_id = session.query(LtiPlatform).one().id
        roles = {u.external_id: u.role for u in session.query(User)}
        [course] = session.query(Course).all()
        members = {m.user_id: m.role for m in session.query(CourseMember)}
        by_user = {u.external_id: members[u.id] for u in session.query(User)}
        [link] = session.query(LtiResourceLink).all()
        [placed] = session.query(CourseExercise).all()
    # site roles stay "student": an LMS role holds in its own course only
    assert roles == {f"lti:{platform_id}|teacher-1": "student", f"lti:{platform_id}|student-2": "student"}
    assert by_user == {f"lti:{platform_id}|teacher-1": "instructor", f"lti:{platform_id}|student-2": "student"}
    assert (course.platform_id, course.context_id, course.code) == (platform_id, "course-1", "COURSE-1")
    assert link.exercise_slug == "autograd-basics"
    assert (placed.course_id, placed.exercise_slug) == (course.id, "autograd-basics")


def test_an_lms_course_whose_label_another_course_has_gets_the_label_with_a_suffix(lms, service):
    from grader import courses

    with db.transaction(service) as session:
        courses.create_course(session, title="Taught here", code="COURSE-1")
    teacher = Pending(user="teacher-1", roles=[INSTRUCTOR], custom={"exercise": "autograd-basics"})
    for _ in range(2):  # every launch keeps the code the first one gave
        assert launch(lms, teacher).status_code == 200
    # Another context whose label is the same but for its case takes the next free suffix.
    assert launch(lms, Pending(user="teacher-1", roles=[INSTRUCTOR], context="course-2", context_label="course-1",
                               custom={"exercise": "autograd-basics"})).status_code == 200
    with db.transaction(service) as session:
        codes = {c.context_id: c.code for c in session.query(Course)}
        assert courses.course_called(session, "course-1-2").context_id == "course-1"
    assert codes == {None: "COURSE-1", "course-1": "COURSE-1-2", "course-2": "course-1-3"}


def test_names_titles_and_labels_from_a_launch_are_stored_without_control_characters(lms, service):
    page = launch(lms, Pending(user="teacher-1", roles=[INSTRUCTOR], name="Ada\u202e Love\x07lace\n",
                               context_title="Deep\tlearning\x00", context_label="\u2066DL101\u2069\r",
                               custom={"exercise": "autograd-basics"}))
    assert page.status_code == 200
    with db.transaction(service) as session:
        [course] = session.query(Course).all()
        [user] = session.query(User).all()
        assert (user.name, course.title, course.code) == ("Ada Lovelace", "Deep learning", "DL101")


@SQLITE_ONLY
def test_a_link_to_no_exercise_says_so(lms):
    page = launch(lms, Pending(user="student-3", roles=[LEARNER], resource_link="unknown-link"))
    assert page.status_code == 404 and "not connected to an exercise" in page.text


# ------------------------------------------------------------------ deep linking

def test_deep_linking_returns_the_chosen_exercises_and_the_platform_accepts_them(lms):
    browser = requests.Session()
    page = launch(lms, Pending(user="teacher-1", roles=[INSTRUCTOR], kind="deeplink"), browser)
    assert page.status_code == 200 and page.url.endswith("/lti/deep-link"), page.text[:1000]
    assert 'value="autograd-basics"' in page.text
    form = forms(page.text)[-1]
    answer = browser.post(page.url, data={"csrf_token": form["fields"]["csrf_token"],
                                          "exercise": ["autograd-basics"]}, timeout=30)
    returned = follow_forms(browser, answer)
    assert returned.status_code == 200, (returned.text[:500], lms.errors)
    assert lms.errors == []
    [items] = lms.deep_links
    assert len(items) == 1
    item = items[0]
    assert item["type"] == "ltiResourceLink" and item["custom"] == {"exercise": "autograd-basics"}
    assert item["lineItem"]["scoreMaximum"] == 6 and item["url"].endswith("/lti/launch")


@SQLITE_ONLY
def test_a_student_cannot_start_deep_linking(lms):
    page = launch(lms, Pending(user="student-1", roles=[LEARNER], kind="deeplink"))
    assert page.status_code == 403 and "Only instructors" in page.text


# ------------------------------------------------------------------ launches refused

def _refused(page: requests.Response, status: int, kind: str, words: str) -> None:
    assert page.status_code == status, page.text[:1000]
    assert f"<code>{kind}</code>" in page.text and words in page.text
    assert "Traceback" not in page.text and "File \"" not in page.text


@SQLITE_ONLY
def test_a_launch_from_an_unregistered_platform_is_refused(tool, lms, caplog):
    with Platform(tool, issuer="https://unknown-lms.example.org").served() as stranger:
        page = launch(stranger, student())
    _refused(page, 400, "unknown_platform", "not registered with the grader")
    assert "unknown_platform" in caplog.text


@SQLITE_ONLY
def test_a_launch_signed_by_another_key_is_refused(lms, caplog):
    forger_key, _ = rsa_pair()
    page = launch(lms, student(sign_with=forger_key))
    _refused(page, 403, "bad_signature", "not signed by a key")
    assert "bad_signature" in caplog.text


@SQLITE_ONLY
def test_a_replayed_launch_is_refused(lms):
    browser = requests.Session()
    start = browser.get(lms.start_url(student()), timeout=30)
    form = forms(start.text)[0]
    first = browser.post(form["action"], data=form["fields"], timeout=30)
    assert first.status_code == 200 and first.url.split("?")[0].endswith("/exercises/autograd-basics")
    replay = browser.post(form["action"], data=form["fields"], timeout=30)
    _refused(replay, 403, "replayed_nonce", "already used")
    # ...also from another browser, which has no state cookie at all
    elsewhere = requests.post(form["action"], data=form["fields"], timeout=30)
    assert elsewhere.status_code in (400, 403) and "Traceback" not in elsewhere.text


@SQLITE_ONLY
def test_an_expired_launch_is_refused(lms):
    page = launch(lms, student(expires_in=-60))
    _refused(page, 403, "expired_token", "expired")


@SQLITE_ONLY
def test_a_launch_from_an_unregistered_deployment_is_refused(lms):
    page = launch(lms, student(deployment_id="deployment-unknown"))
    _refused(page, 403, "unknown_deployment", "deployment")


@SQLITE_ONLY
def test_a_launch_without_a_login_started_here_is_refused(lms):
    browser = requests.Session()
    start = browser.get(lms.start_url(student()), timeout=30)
    form = forms(start.text)[0]
    page = requests.post(form["action"], data={**form["fields"], "state": "state-made-up"}, timeout=30)
    _refused(page, 400, "invalid_state", "sign-in started in this browser")


# ------------------------------------------------------------------ keys, configuration, registration

@SQLITE_ONLY
def test_the_jwks_keeps_the_previous_key_after_a_rotation(client, database_url, monkeypatch):
    first = client.get("/lti/jwks").get_json()["keys"]
    assert len(first) == 1 and first[0]["kty"] == "RSA" and "d" not in first[0]
    monkeypatch.setenv("GRADER_DATABASE_URL", database_url)
    result = subprocess.run([sys.executable, "-m", "grader.cli", "lti", "rotate-key"], cwd=ROOT,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    after = client.get("/lti/jwks").get_json()["keys"]
    assert len(after) == 2 and after[1]["kid"] == first[0]["kid"] and after[0]["kid"] != first[0]["kid"]
    assert all("d" not in key and "p" not in key for key in after)
    assert after[0]["kid"] in result.stderr


@SQLITE_ONLY
def test_the_configuration_document_names_the_tools_urls(client):
    document = client.get("/lti/config", base_url="https://grader.example.edu").get_json()
    assert document["oidc_initiation_url"] == "https://grader.example.edu/lti/login"
    assert document["target_link_uri"] == "https://grader.example.edu/lti/launch"
    assert document["public_jwk_url"] == "https://grader.example.edu/lti/jwks"
    assert "https://purl.imsglobal.org/spec/lti-ags/scope/score" in document["scopes"]
    json.dumps(document)


@SQLITE_ONLY
def test_an_instructor_registers_a_platform_on_the_page(client, database_url):
    from grader.accounts import users

    with db.transaction(database_url) as session:
        users.create_user(session, email="teacher@example.org", password="correct horse", role="instructor")
        users.create_user(session, email="student@example.org", password="correct horse", role="student")

    def sign_in_as(email):
        client.post("/logout", data={})
        sign_in(client, email)

    sign_in_as("student@example.org")
    assert client.get("/instructor/lti/platforms").status_code == 403
    sign_in_as("teacher@example.org")
    page = client.get("/instructor/lti/platforms")
    assert page.status_code == 200 and "/lti/login" in page.get_data(as_text=True)
    token = forms(page.get_data(as_text=True))[-1]["fields"]["csrf_token"]
    fields = {"csrf_token": token, "name": "Canvas", "issuer": "https://canvas.example.edu",
              "client_id": "10000000000001", "deployment_ids": "1:abc, 2:def",
              "auth_login_url": "https://canvas.example.edu/api/lti/authorize_redirect",
              "auth_token_url": "https://canvas.example.edu/login/oauth2/token",
              "jwks_url": "https://canvas.example.edu/api/lti/security/jwks"}
    bad = client.post("/instructor/lti/platforms", data={**fields, "jwks_url": "not a url"})
    assert bad.status_code == 422 and "JWKS" in bad.get_data(as_text=True)
    done = client.post("/instructor/lti/platforms", data=fields)
    assert done.status_code == 303
    listed = client.get("/instructor/lti/platforms").get_data(as_text=True)
    assert "https://canvas.example.edu" in listed and "1:abc" in listed and "2:def" in listed


@pytest.mark.slow  # takes seconds: left out of the fast loop
@SQLITE_ONLY
def test_the_command_line_registers_and_lists_platforms(database_url, monkeypatch):
    monkeypatch.setenv("GRADER_DATABASE_URL", database_url)
    command = [sys.executable, "-m", "grader.cli", "lti"]
    added = subprocess.run(command + ["add-platform", "--issuer", "https://moodle.example.edu",
                                      "--client-id", "abc", "--deployment-id", "1", "--deployment-id", "2",
                                      "--auth-login-url", "https://moodle.example.edu/mod/lti/auth.php",
                                      "--auth-token-url", "https://moodle.example.edu/mod/lti/token.php",
                                      "--jwks-url", "https://moodle.example.edu/mod/lti/certs.php"],
                           cwd=ROOT, capture_output=True, text=True)
    assert added.returncode == 0, added.stderr
    listed = subprocess.run(command + ["list-platforms"], cwd=ROOT, capture_output=True, text=True)
    assert "https://moodle.example.edu\tabc\t1,2" in listed.stdout
    refused = subprocess.run(command + ["add-platform", "--issuer", "x", "--client-id", "abc", "--deployment-id",
                                        "1", "--auth-login-url", "ftp://x", "--auth-token-url", "https://x/t",
                                        "--jwks-url", "https://x/j"], cwd=ROOT, capture_output=True, text=True)
    assert refused.returncode == 1 and "https URL" in refused.stderr

    platform_id = listed.stdout.split("\t")[0]
    disabled = subprocess.run(command + ["disable-platform", platform_id], cwd=ROOT, capture_output=True, text=True)
    assert disabled.returncode == 0 and "disabled" in disabled.stderr
    enabled = subprocess.run(command + ["enable-platform", platform_id], cwd=ROOT, capture_output=True, text=True)
    assert enabled.returncode == 0 and f"platform {platform_id} enabled" in enabled.stderr
    deleted = subprocess.run(command + ["delete-platform", platform_id, "--yes"], cwd=ROOT, capture_output=True,
                             text=True)
    assert deleted.returncode == 0, deleted.stderr
    listed = subprocess.run(command + ["list-platforms"], cwd=ROOT, capture_output=True, text=True)
    assert listed.stdout == ""  # deleted: no longer listed
    gone = subprocess.run(command + ["disable-platform", platform_id], cwd=ROOT, capture_output=True, text=True)
    assert gone.returncode == 1 and f"no registration {platform_id}" in gone.stderr
    from grader import db
    from grader.lti.models import LtiPlatformChange

    with db.transaction(database_url) as session:  # the command line's changes are in its history
        assert [c.action for c in session.query(LtiPlatformChange).order_by(LtiPlatformChange.id)] == \
            ["created", "disabled", "enabled", "deleted"]


# ------------------------------------------------------------------ assignments

def _assignment_in_lms_course(lms, service) -> int:
    """The instructor's launch makes the course; an assignment of it was due an hour ago
    and takes late work at 20% a day."""
    from datetime import timedelta

    from grader import clock
    from grader.courses.assignments import create_assignment

    page = launch(lms, Pending(user="teacher-1", roles=[INSTRUCTOR], custom={"exercise": "autograd-basics"},
                               resource_link="link-0"))
    assert page.status_code == 200, page.text[:2000]
    with db.transaction(service) as session:
        course = session.query(Course).one()
        return create_assignment(session, course, exercise="autograd-basics",
                                 due_at=(clock.now() - timedelta(hours=1)).isoformat(),
                                 late_until=(clock.now() + timedelta(days=1)).isoformat(),
                                 late_policy="per_day", late_percent=20).id


def test_an_assignment_link_sends_the_late_adjusted_score_that_counts(lms, service, tmp_path):
    assignment_id = _assignment_in_lms_course(lms, service)
    worker = shared_worker(tmp_path)
    try:
        browser = requests.Session()
        page = launch(lms, student(custom={"assignment": str(assignment_id)}, resource_link="link-2"), browser)
        assert page.status_code == 200 and page.url.endswith(f"/assignments/{assignment_id}"), page.text[:2000]
        assert "Score that counts" in page.text
        submit_and_wait(browser, page, lms, tmp_path)
        score = lms.scores[-1]
        assert (score["scoreGiven"], score["scoreMaximum"], score["userId"]) == (4.8, 6, "student-1")

        # The instructor excuses the lateness by hand: the LMS gets the score that counts now,
        # stamped later than the grade, so the platform takes it over the grade's.
        from grader import courses
        with db.transaction(service) as session:
            user_id = session.query(LtiGradeTarget).filter_by(assignment_id=assignment_id).one().user_id
            courses.set_override(session, session.get(Assignment, assignment_id), session.get(User, user_id),
                                     score=6, reason="late for a documented illness", by="teacher-1")
        courses.announce_standing(assignment_id, user_id)
        deadline = time.monotonic() + 60
        while len(lms.scores) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        stop(worker)
    assert [s["scoreGiven"] for s in lms.scores] == [4.8, 6], (lms.errors, lms.scores)
    stamps = [datetime.fromisoformat(s["timestamp"]) for s in lms.scores]
    assert stamps[1] > stamps[0]
    with db.transaction(service) as session:
        link = session.query(LtiResourceLink).filter_by(resource_link_id="link-2").one()
        assert link.assignment_id == assignment_id
        assert session.query(LtiGradeTarget).filter_by(assignment_id=assignment_id).count() == 1


def test_a_link_cannot_open_another_courses_assignment(lms, service):
    assignment_id = _assignment_in_lms_course(lms, service)
    page = launch(lms, student(custom={"assignment": str(assignment_id)}, context="course-2", resource_link="link-9"))
    assert page.status_code == 404 and "not connected to an exercise" in page.text
