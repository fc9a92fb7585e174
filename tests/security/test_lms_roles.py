"""Class 1: an LMS role claim made a user an instructor of the whole site. Now a role
holds in the launch's own course only, comes only from its context (membership) roles,
and site-wide powers belong to a local administrator."""

from __future__ import annotations

import pytest
import requests
from click.testing import CliRunner

from tests.lti_platform import INSTRUCTOR, LEARNER, Pending
from tests.forms import csrf_over_http, signed_in_over_http
from tests.security.helpers import launch, learner, local_account, submit
from tests.lti_service import lms, service, tool  # noqa: F401  (fixtures)

SQLITE_ONLY = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
SITE_PAGES = ("/instructor/submissions", "/instructor/exercises", "/instructor/lti/platforms",
              "/instructor/lti/deliveries")


@SQLITE_ONLY
@pytest.mark.parametrize("roles", [
    [LEARNER, "http://purl.imsglobal.org/vocab/lis/v2/institution/person#Instructor"],
    [LEARNER, "http://purl.imsglobal.org/vocab/lis/v2/system/person#Administrator"],
    ["Administrator"],
    ["Instructor"],
    ["https://lms.example/roles/Instructor"],
], ids=["institution-instructor", "system-administrator", "bare-administrator", "bare-instructor",
        "custom-uri"])
def test_a_role_that_is_not_the_courses_own_makes_no_one_staff(lms, tool, roles):
    browser = requests.Session()
    page = launch(lms, Pending(user="mallory", roles=roles, custom={"exercise": "autograd-basics"}), browser)
    assert page.status_code == 200 and page.url.split("?")[0].endswith("/exercises/autograd-basics"), page.text[:500]
    for path in SITE_PAGES:
        assert browser.get(tool + path, timeout=30).status_code == 403, path  # before: 200
    csrf = csrf_over_http(browser, f"{tool}/exercises/autograd-basics")
    upload = browser.post(f"{tool}/instructor/uploads", data={"csrf_token": csrf},
                          files={"bundle": ("b.zip", b"PK\x05\x06" + b"\0" * 18)}, timeout=30)
    assert upload.status_code == 403  # before: the upload was taken and its tests ran in a worker


def test_a_course_instructor_sees_their_course_and_nothing_else(lms, tool):
    ada, bob, teacher = (requests.Session() for _ in range(3))
    mine = submit(ada, launch(lms, learner("student-1", context="course-1", resource_link="link-1"), ada))
    theirs = submit(bob, launch(lms, learner("student-2", context="course-2", resource_link="link-2"), bob))
    page = launch(lms, Pending(user="teacher-1", roles=[INSTRUCTOR], context="course-1", resource_link="link-1"),
                  teacher)
    assert page.status_code == 200
    listed = teacher.get(f"{tool}/instructor/submissions", timeout=30)
    assert listed.status_code == 200
    assert "|student-1" in listed.text and "|student-2" not in listed.text  # before: both
    assert teacher.get(mine, timeout=30).status_code == 200
    assert teacher.get(theirs, timeout=30).status_code == 404  # before: 200, with the source
    assert teacher.get(theirs + "/status", timeout=30).status_code == 404
    for path in SITE_PAGES[1:]:
        assert teacher.get(tool + path, timeout=30).status_code == 403, path
    # The LMS takes the role away: the next launch from the course ends it.
    launch(lms, Pending(user="teacher-1", roles=[LEARNER], context="course-1", resource_link="link-1",
                        custom={"exercise": "autograd-basics"}), teacher)
    assert teacher.get(f"{tool}/instructor/submissions", timeout=30).status_code == 403
    assert teacher.get(mine, timeout=30).status_code == 404


@SQLITE_ONLY
def test_a_launch_without_a_course_makes_no_one_staff(lms, tool):
    browser = requests.Session()
    page = launch(lms, Pending(user="teacher-9", roles=[INSTRUCTOR], context=None,
                               custom={"exercise": "autograd-basics"}), browser)
    assert page.status_code == 200
    assert browser.get(f"{tool}/instructor/submissions", timeout=30).status_code == 403  # before: 200


@SQLITE_ONLY
def test_site_wide_powers_belong_to_an_administrator_made_on_the_command_line(lms, tool, service):
    from grader.cli import main

    ada = requests.Session()
    mine = submit(ada, launch(lms, learner("student-1"), ada))
    made = CliRunner().invoke(main, ["create-user", "--email", "root@example.org", "--role", "admin",
                                     "--password", "correct horse"])
    assert made.exit_code == 0, made.output  # before: 2, no such role
    admin = signed_in_over_http(tool, "root@example.org")
    for path in SITE_PAGES:
        assert admin.get(tool + path, timeout=30).status_code == 200, path
    assert "|student-1" in admin.get(f"{tool}/instructor/submissions", timeout=30).text
    assert admin.get(mine, timeout=30).status_code == 200
    # A local instructor registers an LMS, and has no site-wide power.
    local_account(service, "ines@example.org", "instructor")
    ines = signed_in_over_http(tool, "ines@example.org")
    assert ines.get(f"{tool}/instructor/lti/platforms", timeout=30).status_code == 200
    for path in ("/instructor/submissions", "/instructor/exercises", "/instructor/lti/deliveries"):
        assert ines.get(tool + path, timeout=30).status_code == 403, path
    assert ines.get(mine, timeout=30).status_code == 404


def test_an_upgraded_site_keeps_no_role_an_lms_gave(tmp_path):
    """Before the fix a launch stored "instructor" on the user: after the upgrade an LMS user
    is nobody's staff until a launch from a course says so, and local instructors (who had
    the site-wide powers) are administrators."""
    from alembic import command
    from alembic.config import Config
    from sqlalchemy import create_engine, text

    from grader import db

    url = f"sqlite:///{tmp_path / 'old.db'}"
    config = Config()
    config.set_main_option("script_location", str(db.MIGRATIONS))
    config.set_main_option("sqlalchemy.url", url)
    command.upgrade(config, "0003")
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO users (id, name, role, password_hash, external_id, created_at) VALUES "
                          "(1, 'Ines', 'instructor', 'pbkdf2:x', NULL, '2026-01-01'),"
                          "(2, 'Mallory', 'instructor', NULL, 'https://lms.example.edu|mallory', '2026-01-01'),"
                          "(3, 'Ada', 'student', NULL, 'https://lms.example.edu|ada', '2026-01-01')"))
        conn.execute(text("INSERT INTO lti_platforms (id, name, issuer, client_id, deployment_ids, auth_login_url,"
                          " auth_token_url, jwks_url, created_at) VALUES (7, 'LMS', 'https://lms.example.edu', 'c',"
                          " '[\"d\"]', 'https://lms.example.edu/a', 'https://lms.example.edu/t',"
                          " 'https://lms.example.edu/j', '2026-01-01')"))
    engine.dispose()
    db.upgrade(url)
    with create_engine(url).connect() as conn:
        rows = conn.execute(text("SELECT id, role, external_id FROM users ORDER BY id")).all()
    assert [tuple(r) for r in rows] == [(1, "admin", None), (2, "student", "lti:7|mallory"),
                                        (3, "student", "lti:7|ada")]
    db.release(url)
