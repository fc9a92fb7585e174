"""Managing LMS registrations on their page: editing one with the rules of registering,
disabling it (its launches refused, nothing sent to its LMS, all it has kept) and enabling it
again, deleting it (its courses, users, work and history kept; its issuer free to register
again), testing it against the real test platform, the warning when the grader is not
served as an LMS needs, and launch error pages whose links lead somewhere."""

from __future__ import annotations

import logging
import re
import socket
from datetime import datetime, timezone
from urllib.parse import urljoin

import pytest
import requests

from grader import db
from grader.accounts.models import User
from grader.courses.models import Course
from grader.lti import platforms
from grader.lti.models import LtiGradeTarget, LtiPlatform, LtiPlatformChange
from grader.submissions.models import Submission, SubmissionStatus
from tests.forms import csrf_in, sign_in, signed_in_over_http
from tests.lti_platform import INSTRUCTOR, Pending, Platform, forms
from tests.lti_service import lms, service, tool  # noqa: F401  (fixtures)
from tests.security.helpers import launch, learner, local_account, submit

SQLITE_ONLY = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)

MOODLE = dict(issuer="https://moodle.example.edu", client_id="abc", deployment_ids=["1"],
              auth_login_url="https://moodle.example.edu/mod/lti/auth.php",
              auth_token_url="https://moodle.example.edu/mod/lti/token.php",
              jwks_url="https://moodle.example.edu/mod/lti/certs.php")


def _registered(database_url: str, **fields) -> int:
    """A registration made from the command line (no owner)."""
    with db.transaction(database_url) as session:
        return platforms.add(session, **{**MOODLE, **fields}).id


def _form(fields: dict) -> dict:
    return {**fields, "deployment_ids": " ".join(fields["deployment_ids"]), "name": fields.get("name", "")}


def _post(browser: requests.Session, tool: str, path: str, **data) -> requests.Response:
    """A form of the registration's page, posted as the page would (its CSRF token)."""
    token = csrf_in(browser.get(f"{tool}/instructor/lti/platforms", timeout=30).text)
    return browser.post(f"{tool}{path}", data={"csrf_token": token, **data}, allow_redirects=False, timeout=30)


def _history(database_url: str, platform_id: int) -> list[tuple[str, dict, int | None]]:
    with db.transaction(database_url) as session:
        return [(c.action, c.fields, c.actor_id) for c in session.query(LtiPlatformChange)
                .filter_by(platform_id=platform_id).order_by(LtiPlatformChange.id)]


def _admin(service: str, tool: str) -> requests.Session:
    local_account(service, "root@example.org", "admin")
    return signed_in_over_http(tool, "root@example.org")


def _refused(page: requests.Response, status: int, kind: str) -> None:
    assert page.status_code == status, page.text[:1000]
    assert f"<code>{kind}</code>" in page.text and "Traceback" not in page.text


# ------------------------------------------------------------------ editing

@SQLITE_ONLY
def test_an_administrator_edits_a_registration_under_the_rules_of_registering(tool, service):
    platform_id = _registered(service)
    other = _registered(service, client_id="another-client")
    admin = _admin(service, tool)
    page = admin.get(f"{tool}/instructor/lti/platforms/{platform_id}", timeout=30)
    assert page.status_code == 200 and 'value="https://moodle.example.edu/mod/lti/certs.php"' in page.text
    path = f"/instructor/lti/platforms/{platform_id}"

    bad = _post(admin, tool, path, **_form({**MOODLE, "jwks_url": "ftp://moodle.example.edu/certs"}))
    assert bad.status_code == 422 and "JWKS" in bad.text and "ftp://moodle.example.edu/certs" in bad.text
    nothing = _post(admin, tool, path, **_form({**MOODLE, "deployment_ids": []}))
    assert nothing.status_code == 422 and "at least one deployment id" in nothing.text
    taken = _post(admin, tool, path, **_form({**MOODLE, "client_id": "another-client"}))
    assert taken.status_code == 409 and "Another registration has this issuer and client id" in taken.text

    changed = {**MOODLE, "name": "Moodle (2026)", "deployment_ids": ["2", "3"],
               "jwks_url": "https://moodle.example.edu/keys"}
    saved = _post(admin, tool, path, **_form(changed))
    assert saved.status_code == 303
    shown = admin.get(urljoin(tool, saved.headers["Location"]), timeout=30).text
    assert "Saved." in shown and "Moodle (2026)" in shown and "https://moodle.example.edu/keys" in shown
    with db.transaction(service) as session:
        row = session.get(LtiPlatform, platform_id)
        assert (row.name, row.deployment_ids, row.jwks_url) == ("Moodle (2026)", ["2", "3"],
                                                                 "https://moodle.example.edu/keys")
        assert session.get(LtiPlatform, other).jwks_url == MOODLE["jwks_url"]  # the refused edits changed nothing
        root = session.query(User).filter_by(email="root@example.org").one()
        root_id, root_name = root.id, root.name or root.email
    assert _history(service, platform_id) == [
        ("created", {}, None),
        ("edited", {"name": ["moodle.example.edu", "Moodle (2026)"], "deployment_ids": [["1"], ["2", "3"]],
                    "jwks_url": [MOODLE["jwks_url"], "https://moodle.example.edu/keys"]}, root_id)]
    # The page shows who changed what, and when.
    history = shown.split("History", 1)[1]
    assert "the command line" in history and root_name in history
    assert "<code>1</code> → <code>2, 3</code>" in history and "https://moodle.example.edu/keys" in history


# ------------------------------------------------------------------ disabling

@SQLITE_ONLY
def test_a_disabled_registration_refuses_launches_until_enabled_again(lms, tool, service):
    assert launch(lms, learner()).status_code == 200
    root = _admin(service, tool)
    with db.transaction(service) as session:
        platform_id = session.query(LtiPlatform).one().id
    assert _post(root, tool, f"/instructor/lti/platforms/{platform_id}/disable").status_code == 303
    listed = root.get(f"{tool}/instructor/lti/platforms", timeout=30).text
    assert "disabled" in listed

    page = launch(lms, learner())
    _refused(page, 403, "platform_disabled")
    assert "registration with the grader is disabled" in page.text
    # Its links lead to pages that exist, for those who may act on them.
    links = [urljoin(page.url, href) for href in re.findall(r'href="([^"]+)"', page.text)
             if not href.startswith("#") and "/static/" not in href]
    assert f"{tool}/instructor/lti/platforms" in links
    for link in links:
        assert root.get(link, timeout=30).status_code == 200, link

    assert _post(root, tool, f"/instructor/lti/platforms/{platform_id}/enable").status_code == 303
    again = launch(lms, learner())
    assert again.status_code == 200 and again.url.split("?")[0].endswith("/exercises/autograd-basics")
    assert [action for action, _, _ in _history(service, platform_id)] == ["created", "disabled", "enabled"]
    with db.transaction(service) as session:  # the same user as before: nothing was lost
        assert session.query(User).filter(User.external_id.like("lti:%")).count() == 1


@SQLITE_ONLY
def test_nothing_is_sent_to_a_disabled_registrations_lms_and_its_scores_stay(lms, tool, service, caplog):
    from grader.lti import tasks as lti_tasks

    caplog.set_level(logging.INFO, logger="grader.lti")
    assert launch(lms, Pending(user="teacher-1", roles=[INSTRUCTOR], custom={"exercise": "autograd-basics"},
                               nrps=True)).status_code == 200
    assert launch(lms, learner()).status_code == 200
    with db.transaction(service) as session:
        platform_id = session.query(LtiPlatform).one().id
        target = session.query(LtiGradeTarget).filter_by(lti_user_id="student-1").one()
        graded = Submission(user_id=target.user_id, exercise_slug="autograd-basics", exercise_version=1, source="",
                            status=SubmissionStatus.GRADED, score=6.0, max_score=6.0,
                            finished_at=datetime.now(timezone.utc))
        session.add(graded)
        session.flush()
        submission_id, target_id = graded.id, target.id
        course_id = session.query(Course).one().id
    requests_before = len(lms.memberships_requests)
    with db.transaction(service) as session:
        platforms.disable(session, platform_id)
    assert lti_tasks.publish_score.apply(args=[submission_id, target_id]).get() == "platform_off"
    assert lti_tasks.sync_roster.apply(args=[course_id]).get() == "platform_off"
    assert lms.scores == [] and len(lms.memberships_requests) == requests_before and lms.token_requests == 0
    assert "is disabled" in caplog.text
    with db.transaction(service) as session:
        assert session.get(Submission, submission_id).score == 6.0 and session.get(Course, course_id) is not None
        platforms.enable(session, platform_id)
    assert lti_tasks.publish_score.apply(args=[submission_id, target_id]).get() == "sent"
    assert [s["scoreGiven"] for s in lms.scores] == [6]


# ------------------------------------------------------------------ deleting

def test_deleting_keeps_courses_work_and_history_and_frees_the_issuer(lms, tool, service):
    student = requests.Session()
    work = submit(student, launch(lms, learner(), student))
    root = _admin(service, tool)
    with db.transaction(service) as session:
        platform_id = session.query(LtiPlatform).one().id
    path = f"/instructor/lti/platforms/{platform_id}"
    unconfirmed = _post(root, tool, f"{path}/delete")
    assert unconfirmed.status_code == 422 and "confirm" in unconfirmed.text
    deleted = _post(root, tool, f"{path}/delete", confirm="yes")
    assert deleted.status_code == 303
    listed = root.get(urljoin(tool, deleted.headers["Location"]), timeout=30).text
    assert "was deleted" in listed and lms.issuer not in listed
    assert root.get(f"{tool}{path}", timeout=30).status_code == 404

    page = launch(lms, learner())
    _refused(page, 400, "unknown_platform")
    assert "LMS platforms page" in page.text
    for href in re.findall(r'href="(/instructor/[^"]+)"', page.text):
        assert root.get(urljoin(tool, href), timeout=30).status_code == 200

    with db.transaction(service) as session:
        row = session.get(LtiPlatform, platform_id)
        assert row.deleted_at is not None
        [course] = session.query(Course).all()
        assert course.platform_id == platform_id
        old_user = session.query(User).filter_by(external_id=f"lti:{platform_id}|student-1").one()
        assert session.get(Submission, work.rsplit("/", 1)[-1]).user_id == old_user.id
    assert [action for action, _, _ in _history(service, platform_id)] == ["created", "deleted"]

    # The same issuer and client id register again: a new registration, whose launches work.
    registered = _post(root, tool, "/instructor/lti/platforms", **_form(lms.tool_registration()))
    assert registered.status_code == 303
    assert launch(lms, learner()).status_code == 200
    with db.transaction(service) as session:
        live = session.query(LtiPlatform).filter(LtiPlatform.deleted_at.is_(None)).one()
        assert live.id != platform_id and session.query(LtiPlatform).count() == 2
        assert session.query(User).filter_by(external_id=f"lti:{live.id}|student-1").count() == 1
        assert session.query(Submission).filter_by(user_id=old_user.id).count() == 1  # the earlier work stays
    assert student.get(work, timeout=30).status_code == 200  # and its owner still reaches it


# ------------------------------------------------------------------ testing a registration

@SQLITE_ONLY
def test_the_test_checks_the_platforms_keyset_and_token_url(lms, tool, service):
    root = _admin(service, tool)
    with db.transaction(service) as session:
        platform_id = session.query(LtiPlatform).one().id
    listed = root.get(f"{tool}/instructor/lti/platforms", timeout=30).text
    button = next(f for f in forms(listed) if f["action"].endswith(f"/platforms/{platform_id}/check"))
    page = root.post(urljoin(tool, button["action"]), data=button["fields"], timeout=30)
    assert page.status_code == 200
    assert _steps(page) == [("ok", "keyset"), ("ok", "token")]
    assert lms.kid in page.text  # the key the platform publishes
    assert lms.token_requests == 1 and lms.errors == []
    # What the LMS is to be given, exactly.
    for url in (f"{tool}/lti/login", f"{tool}/lti/launch", f"{tool}/lti/jwks", f"{tool}/lti/config"):
        assert f"<code>{url}</code>" in page.text
    assert f"<code>{lms.client_id}</code>" in page.text and f"<code>{lms.deployment_id}</code>" in page.text
    assert "access_token" not in page.text and "BEGIN" not in page.text  # neither token nor key


def _steps(page: requests.Response) -> list[tuple[str, str]]:
    """The test's steps as the page shows them: (ok or failed, which)."""
    return re.findall(r'<tr class="(ok|failed)" data-step="(\w+)"', page.text)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@SQLITE_ONLY
def test_the_test_says_which_step_failed_and_why(lms, tool, service, monkeypatch):
    broken = {**lms.tool_registration(), "client_id": "not-this-tool",
              "jwks_url": f"http://127.0.0.1:{_closed_port()}/jwks", "auth_token_url": f"{lms.url}/no-token-here"}
    platform_id = _registered(service, **broken)
    root = _admin(service, tool)
    page = _post(root, tool, f"/instructor/lti/platforms/{platform_id}/check")
    assert page.status_code == 200
    assert _steps(page) == [("failed", "keyset"), ("failed", "token")]
    assert "Connection refused" in page.text or "Failed to establish" in page.text
    assert f"{lms.url}/no-token-here answered 404" in page.text

    # A keyset that is no JWKS (JSON of another kind), and one that is not there.
    with db.transaction(service) as session:
        platforms.edit(session, platform_id, **{**broken, "jwks_url": f"{tool}/lti/config"})
    page = _post(root, tool, f"/instructor/lti/platforms/{platform_id}/check")
    assert _steps(page)[0] == ("failed", "keyset") and "the keyset is not a JWKS" in page.text
    with db.transaction(service) as session:
        platforms.edit(session, platform_id, **{**broken, "jwks_url": f"{lms.url}/no-keyset-here"})
    page = _post(root, tool, f"/instructor/lti/platforms/{platform_id}/check")
    assert _steps(page)[0] == ("failed", "keyset") and "answered 404" in page.text

    # Calls leave through the outbound client: an internal address is refused unless allowed.
    monkeypatch.delenv("GRADER_OUTBOUND_ALLOW_PRIVATE")
    with db.transaction(service) as session:
        good = session.query(LtiPlatform).filter_by(client_id=lms.client_id).one().id
    page = _post(root, tool, f"/instructor/lti/platforms/{good}/check")
    assert _steps(page) == [("failed", "keyset"), ("failed", "token")]
    assert "internal address" in page.text and lms.jwks_requests == 0 and lms.token_requests == 0


# ------------------------------------------------------------------ served as an LMS needs

@SQLITE_ONLY
def test_the_page_warns_when_the_grader_is_not_served_over_https_with_secure_cookies(database_url, redis,
                                                                                      monkeypatch):
    from grader.app import create_app

    local_account(database_url, "root@example.org", "admin")
    plain = create_app({"TESTING": True, "DATABASE_URL": database_url}).test_client()
    sign_in(plain, "root@example.org")
    page = plain.get("/instructor/lti/platforms").get_data(as_text=True)
    assert "LMSs launch tools over HTTPS only" in page
    assert "reached over plain HTTP" in page and "GRADER_COOKIE_SECURE is off" in page
    assert "<code>http://localhost/lti/login</code>" in page

    monkeypatch.setenv("GRADER_COOKIE_SECURE", "1")
    monkeypatch.setenv("GRADER_PUBLIC_URL", "https://grader.example.edu")
    secure = create_app({"TESTING": True, "DATABASE_URL": database_url}).test_client()
    # over HTTPS, Flask-WTF also wants the form to come from this site (Referer)
    https = {"base_url": "https://grader.example.edu", "headers": {"Referer": "https://grader.example.edu/login"}}
    token = csrf_in(secure.get("/login", **https).get_data(as_text=True))
    secure.post("/login", data={"email": "root@example.org", "password": "correct horse", "csrf_token": token},
                **https)
    page = secure.get("/instructor/lti/platforms", **https)
    text = page.get_data(as_text=True)
    assert page.status_code == 200 and "<code>https://grader.example.edu/lti/login</code>" in text
    assert "LMSs launch tools over HTTPS only" not in text and "GRADER_COOKIE_SECURE" not in text
    # Served over HTTPS, but with the cookie setting off: still warned, for that alone.
    monkeypatch.delenv("GRADER_COOKIE_SECURE")
    half = create_app({"TESTING": True, "DATABASE_URL": database_url}).test_client()
    token = csrf_in(half.get("/login", **https).get_data(as_text=True))
    half.post("/login", data={"email": "root@example.org", "password": "correct horse", "csrf_token": token},
              **https)
    text = half.get("/instructor/lti/platforms", **https).get_data(as_text=True)
    assert "GRADER_COOKIE_SECURE is off" in text and "reached over plain HTTP" not in text


# ------------------------------------------------------------------ who may

@SQLITE_ONLY
def test_only_the_owner_or_an_administrator_manages_a_registration(tool, service):
    for email, role in (("student@example.org", "student"), ("ines@example.org", "instructor"),
                        ("mallory@example.org", "instructor")):
        local_account(service, email, role)
    ines = signed_in_over_http(tool, "ines@example.org")
    assert _post(ines, tool, "/instructor/lti/platforms", **_form(MOODLE)).status_code == 303
    with db.transaction(service) as session:
        platform_id = session.query(LtiPlatform).one().id
    path = f"/instructor/lti/platforms/{platform_id}"
    actions = [(path, _form({**MOODLE, "jwks_url": "https://mallory.example.org/jwks"})), (f"{path}/disable", {}),
               (f"{path}/delete", {"confirm": "yes"}), (f"{path}/check", {})]

    student = signed_in_over_http(tool, "student@example.org")
    assert student.get(f"{tool}{path}", timeout=30).status_code == 403
    mallory = signed_in_over_http(tool, "mallory@example.org")
    assert mallory.get(f"{tool}{path}", timeout=30).status_code == 404  # another's: as if there were none
    for where, data in actions:
        token = csrf_in(mallory.get(f"{tool}/instructor/lti/platforms", timeout=30).text)
        assert mallory.post(f"{tool}{where}", data={"csrf_token": token, **data}, allow_redirects=False,
                            timeout=30).status_code == 404, where
        token = csrf_in(student.get(f"{tool}/exercises", timeout=30).text)
        assert student.post(f"{tool}{where}", data={"csrf_token": token, **data}, allow_redirects=False,
                            timeout=30).status_code == 403, where
    # No form without its CSRF token, even the owner's.
    assert ines.post(f"{tool}{path}/disable", allow_redirects=False, timeout=30).status_code == 400
    with db.transaction(service) as session:
        row = session.get(LtiPlatform, platform_id)
        assert (row.jwks_url, row.disabled_at, row.deleted_at) == (MOODLE["jwks_url"], None, None)
    assert [action for action, _, _ in _history(service, platform_id)] == ["created"]
    # Its owner may.
    assert _post(ines, tool, f"{path}/disable").status_code == 303
    assert ines.get(f"{tool}{path}", timeout=30).status_code == 200
