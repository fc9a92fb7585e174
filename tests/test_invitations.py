"""Invitation links, through Flask's test client on a real database and Redis: an
instructor makes a link (shown once), a newcomer makes an account through it and lands in
the course, a member of the site joins with a click; a link ends at its expiry, its last
use or when revoked, and nothing is made by a refused one. Also what a link must not
open: staff roles, LMS courses, another's roster, the access log."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
import time
from datetime import timedelta

import pytest
import requests
from click.testing import CliRunner
from sqlalchemy import func, select

from grader import clock, db
from grader.accounts import users
from grader.accounts.models import User
from grader import courses
from grader.courses import invitations
from grader.courses.fields import CourseError
from grader.courses.models import Course, CourseMember, Invitation
from tests.forms import sign_in, token
from tests.mailbox import link_in, text_of
from tests.test_web import ada, site  # noqa: F401  (fixtures too)

NEWCOMER = {"name": "Grace Hopper", "email": "grace@example.org", "password": "cobol rules",
            "password_again": "cobol rules"}


@pytest.fixture
def prof(site, database_url):
    """Prof, the instructor of DL101 (Seoul), with Ada in it as a student."""
    with db.transaction(database_url) as s:
        teacher = users.create_user(s, email="prof@example.org", password="correct horse", role="instructor",
                                    name="Prof")
        course = courses.create_course(s, title="Deep learning", code="DL101", time_zone="Asia/Seoul",
                                       instructor=teacher)
        courses.import_roster(s, course, [{"email": "ada@example.org", "role": "student"}])
    client = site.test_client()
    assert sign_in(client, "prof@example.org").status_code == 302
    return client, f"/courses/{course.id}"


def make_link(client, course_url: str, **form) -> str:
    made = client.post(f"{course_url}/invitations", data={"role": "student", "days": "14", **form,
                                                          "csrf_token": token(client, course_url)})
    assert made.status_code == 201, made.get_data(as_text=True)
    return re.search(r"http://localhost(/join/[A-Za-z0-9_-]+)", made.get_data(as_text=True)).group(1)


def role_of(database_url, email: str, course_url: str) -> str | None:
    with db.transaction(database_url) as s:
        return s.scalar(select(CourseMember.role).join(User, User.id == CourseMember.user_id).where(
            User.email == email, CourseMember.course_id == int(course_url.rsplit("/", 1)[1])))


def accounts(database_url) -> int:
    with db.transaction(database_url) as s:
        return s.scalar(select(func.count(User.id)))


def ask(client, link: str, **changes):
    """The join page's form: a name and an address (the answer: check your mail)."""
    data = {**NEWCOMER, **changes}
    return client.post(f"{link}/account", data={"name": data["name"], "email": data["email"],
                                                "csrf_token": token(client, link)})


@pytest.fixture
def signup(mailbox, deliver):
    """Join through the link as a newcomer does: give a name and an address, follow the
    link mailed to it, choose a password. Returns the last answer."""
    def signup(client, link: str, **changes):
        data = {**NEWCOMER, **changes}
        asked = ask(client, link, **changes)
        if asked.status_code != 200:
            return asked
        deliver()
        follow = link_in(mailbox.to(data["email"])[-1])
        return client.post(follow, data={"password": data["password"], "password_again": data["password_again"],
                                         "csrf_token": token(client, follow)})
    return signup


def test_a_newcomer_makes_an_account_through_the_link_and_lands_in_the_course(prof, site, database_url, signup):
    teacher, course_url = prof
    link = make_link(teacher, course_url, max_uses="30")
    with db.transaction(database_url) as s:  # only the hash is kept: the link cannot be shown again
        stored = s.scalar(select(Invitation))
        assert stored.token_hash != link.rsplit("/", 1)[1] and link.rsplit("/", 1)[1].startswith(stored.prefix)
    listed = teacher.get(course_url).get_data(as_text=True)
    assert f"{stored.prefix}…" in listed and "0 / 30" in listed and link not in listed

    grace = site.test_client()
    page = grace.get(link).get_data(as_text=True)
    assert "Join Deep learning" in page and "as: student" in page and "Mail me a link" in page
    joined = signup(grace, link)
    assert joined.status_code == 303 and joined.headers["Location"] == course_url
    assert "Deep learning" in grace.get(course_url).get_data(as_text=True)  # signed in, a member
    assert role_of(database_url, "grace@example.org", course_url) == "student"
    with db.transaction(database_url) as s:
        grace_row = s.scalar(select(User).where(User.email == "grace@example.org"))
        # The address was confirmed by following the mailed link: a roster naming it finds this account.
        assert not grace_row.self_registered and grace_row.role == "student" and grace_row.name == "Grace Hopper"
        assert s.scalar(select(Invitation.uses)) == 1
    again = site.test_client()  # the new password is a real one
    assert sign_in(again, "grace@example.org", "cobol rules").status_code == 302


def test_a_signed_in_user_joins_with_a_click_and_a_member_uses_no_place(prof, site, ada, database_url):
    teacher, course_url = prof
    link = make_link(teacher, course_url, max_uses="1")
    page = ada.get(link).get_data(as_text=True)
    assert "You are a member of this course already, as: student." in page
    assert ada.post(link, data={"csrf_token": token(ada, link)}).status_code == 303
    bob = site.test_client()
    assert sign_in(bob, "bob@example.org").status_code == 302
    assert "Join as bob" in bob.get(link).get_data(as_text=True)
    assert bob.post(link, data={"csrf_token": token(bob, link)}).headers["Location"] == course_url
    assert role_of(database_url, "bob@example.org", course_url) == "student"  # Ada took no place of the one


def test_a_ta_link_raises_a_student_and_never_lowers_an_instructor(prof, ada, database_url):
    teacher, course_url = prof
    link = make_link(teacher, course_url, role="ta")
    assert ada.post(link, data={"csrf_token": token(ada, link)}).status_code == 303
    assert role_of(database_url, "ada@example.org", course_url) == "ta"
    assert "already, as: instructor" in teacher.get(link).get_data(as_text=True)
    teacher.post(link, data={"csrf_token": token(teacher, link)})
    assert role_of(database_url, "prof@example.org", course_url) == "instructor"


def test_an_expired_revoked_or_used_up_link_lets_no_one_in_and_makes_nothing(prof, site, database_url, signup):
    teacher, course_url = prof
    expiring, revoked, single = (make_link(teacher, course_url, days="1"), make_link(teacher, course_url),
                                 make_link(teacher, course_url, max_uses="1"))
    with db.transaction(database_url) as s:
        revoked_id = s.scalar(select(Invitation.id).where(Invitation.prefix == revoked.rsplit("/", 1)[1][:8]))
    gone = teacher.post(f"{course_url}/invitations/{revoked_id}/revoke", data={"csrf_token": token(teacher, course_url)})
    assert gone.status_code == 303
    assert signup(site.test_client(), single).status_code == 303
    before = accounts(database_url)
    visitor = site.test_client()
    with clock.travel(clock.now() + timedelta(days=1, minutes=1)):
        expired = visitor.get(expiring)
        assert expired.status_code == 410 and "has expired" in expired.get_data(as_text=True)
    for link, says in ((revoked, "was withdrawn"), (single, "used as many times as it allows")):
        page = visitor.get(link)
        assert page.status_code == 410 and says in page.get_data(as_text=True)
    # The form of a page opened while the link was alive, sent after it died: no account either.
    late = visitor.post(f"{single}/account", data={**NEWCOMER, "email": "late@example.org",
                                                   "csrf_token": token(visitor, "/login")})
    assert late.status_code == 410
    unknown = visitor.get("/join/" + "x" * 32)
    assert unknown.status_code == 404 and "not one of this grader&#39;s" in unknown.get_data(as_text=True)
    assert accounts(database_url) == before
    assert f"{revoked.rsplit('/', 1)[1][:8]}…" not in teacher.get(course_url).get_data(as_text=True)


def test_the_last_place_goes_to_one_of_two_at_once(prof, database_url):
    """Counted by the database: two accepting the one-use link together, one joins."""
    teacher, course_url = prof
    link = make_link(teacher, course_url, max_uses="1")
    with db.transaction(database_url) as s:
        for email in ("p1@example.org", "p2@example.org"):
            users.create_user(s, email=email, password="long enough")
    barrier, outcome = threading.Barrier(2), {}

    def take(email):
        barrier.wait()
        try:
            with db.transaction(database_url) as s:
                user = s.scalar(select(User).where(User.email == email))
                invitations.accept(s, link.rsplit("/", 1)[1], user)
            outcome[email] = "joined"
        except CourseError as exc:
            outcome[email] = exc.code
        except Exception as exc:  # noqa: BLE001 - SQLite's lock wait: the other one is writing
            outcome[email] = type(exc).__name__

    threads = [threading.Thread(target=take, args=(e,)) for e in ("p1@example.org", "p2@example.org")]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert sorted(outcome.values()) in (["invitation_used_up", "joined"], ["OperationalError", "joined"]), outcome
    with db.transaction(database_url) as s:
        assert s.scalar(select(Invitation.uses)) == 1
        assert s.scalar(select(func.count(CourseMember.id)).where(CourseMember.role == "student")) == 2  # Ada + one


def test_sign_up_mistakes_are_said_and_keep_what_was_typed(prof, site, database_url, mailbox, deliver):
    teacher, course_url = prof
    link = make_link(teacher, course_url)
    visitor = site.test_client()
    before = accounts(database_url)
    deliver()  # Ada's notice of the roster that put her in the course
    mailbox.received.clear()
    for changes, says in (({"email": "not-an-address"}, "That is not an e-mail address."),
                          ({"name": "   "}, "Give your name")):
        refused = ask(visitor, link, **changes)
        text = refused.get_data(as_text=True)
        assert refused.status_code == 422 and says in text, (changes, text[-2000:])
        assert "Grace Hopper" in text or changes.get("name")
    assert deliver() == 0
    # The password is chosen on the mailed link's page: its mistakes are said there, and spend nothing.
    assert ask(visitor, link).status_code == 200 and deliver() == 1
    follow = link_in(mailbox.to("grace@example.org")[0])
    for password, again, says in (("cobol rules", "cobol rulez", "The two passwords differ."),
                                  ("short", "short", "at least 8 characters")):
        refused = visitor.post(follow, data={"password": password, "password_again": again,
                                             "csrf_token": token(visitor, follow)})
        assert refused.status_code == 422 and says in refused.get_data(as_text=True)
        assert password not in refused.get_data(as_text=True)
    assert accounts(database_url) == before
    assert "Sign in to join" in visitor.get(link).get_data(as_text=True)


def _without_csrf(answer) -> str:
    return re.sub(r'name="csrf_token" value="[^"]*"', 'name="csrf_token"', answer.get_data(as_text=True))


def test_an_address_with_an_account_gets_the_same_answer_and_a_link_that_signs_in(prof, site, database_url,
                                                                                 mailbox, deliver):
    """A class link probes no addresses: Ada's and a new one's answers are the same page;
    Ada's mail signs her in and joins, and makes nothing; the newcomer's makes an account
    only once its link is followed."""
    teacher, course_url = prof
    with db.transaction(database_url) as s:
        other = courses.create_course(s, title="Advanced", code="DL201",
                                      instructor=s.scalar(select(User).where(User.email == "prof@example.org")))
        other_url = course_url.rsplit("/", 1)[0] + f"/{other.id}"
    link = make_link(teacher, other_url)
    visitor = site.test_client()
    before = accounts(database_url)
    deliver()  # Ada's notice of the roster that put her in the first course
    mailbox.received.clear()
    known = ask(visitor, link, email="ada@example.org", name="Not Ada")
    new = ask(visitor, link, email="newbie@example.org")
    assert known.status_code == new.status_code == 200
    # the same page, but for the CSRF token, which carries the second it was made in
    assert _without_csrf(known) == _without_csrf(new)
    assert accounts(database_url) == before and deliver() == 2
    [to_ada] = mailbox.to("ada@example.org")
    assert "already has an account" in text_of(to_ada) and "ada" in text_of(to_ada)  # her own name, not the form's
    follow = link_in(to_ada)
    page = visitor.get(follow).get_data(as_text=True)
    assert "Sign in and join" in page and "password" not in page.lower().split("<main")[-1].split("</form>")[0]
    joined = visitor.post(follow, data={"csrf_token": token(visitor, follow)})
    assert joined.status_code == 303 and joined.headers["Location"] == other_url
    assert role_of(database_url, "ada@example.org", other_url) == "student"
    assert "Advanced" in visitor.get(other_url).get_data(as_text=True)  # signed in as Ada
    assert visitor.post(follow, data={"csrf_token": token(visitor, "/login")}).status_code == 410  # once


def test_only_the_courses_instructor_makes_or_revokes_links(prof, site, ada, database_url):
    teacher, course_url = prof
    link = make_link(teacher, course_url, role="ta")
    ada.post(link, data={"csrf_token": token(ada, link)})  # Ada is a TA now
    for form in ({"role": "student", "days": "3"}, {"role": "instructor", "days": "3"}):
        assert ada.post(f"{course_url}/invitations", data={**form, "csrf_token": token(ada, course_url)}) \
            .status_code == 403
    assert ada.post(f"{course_url}/invitations/1/revoke", data={"csrf_token": token(ada, course_url)}) \
        .status_code == 403
    bob = site.test_client()
    sign_in(bob, "bob@example.org")
    assert bob.post(f"{course_url}/invitations", data={"days": "3", "csrf_token": token(bob, "/courses")}) \
        .status_code == 404  # not even told the course exists
    # Nor does the instructor's own form make an instructor, or a link of a year.
    for form, says in (({"role": "instructor", "days": "3"}, "makes a student or a TA"),
                       ({"role": "student", "days": "365"}, "1 to 180 days")):
        refused = teacher.post(f"{course_url}/invitations", data={**form, "csrf_token": token(teacher, course_url)})
        assert refused.status_code == 422 and says in refused.get_data(as_text=True)
    with db.transaction(database_url) as s:
        assert s.scalar(select(func.count(Invitation.id))) == 1


def test_a_link_without_its_form_token_is_refused(prof, site):
    teacher, course_url = prof
    link = make_link(teacher, course_url)
    assert site.test_client().post(f"{link}/account", data=NEWCOMER).status_code == 400


def test_an_lms_course_takes_no_invitation_links(prof, database_url):
    with db.transaction(database_url) as s:
        course = Course(title="From the LMS", code="LMS1", platform_id=None, context_id="c-1")
        s.add(course)
        s.flush()
        course.platform_id = 1  # as a launch makes it: its platform's (no row needed for the check)
        with pytest.raises(CourseError) as refused:
            invitations.create(s, course, role="student", days=3)
        s.rollback()
    assert refused.value.code == "lms_course"


def test_a_roster_line_does_not_hand_over_an_account_its_owner_made(prof, site, database_url):
    """Someone who signed up through a link as another's address, before addresses were
    confirmed by mail, gets nothing when a roster later names that address: the import
    is refused, whole."""
    with db.transaction(database_url) as s:
        users.create_user(s, email="victim@example.org", password="long enough").self_registered = True
    with db.transaction(database_url) as s:
        other = courses.create_course(s, title="Advanced", code="DL201")
        with pytest.raises(CourseError) as refused:
            courses.import_roster(s, other, [{"email": "carol@example.org"},
                                             {"email": "Victim@example.org", "role": "ta"}])
        assert "never confirmed" in refused.value.message
        s.rollback()
    with db.transaction(database_url) as s:
        assert s.scalar(select(func.count(User.id)).where(User.email == "carol@example.org")) == 0


def test_sign_ups_from_one_address_are_limited(prof, database_url, redis):
    from grader.app import create_app

    teacher, course_url = prof
    link = make_link(teacher, course_url)
    strict = create_app({"TESTING": True, "DATABASE_URL": database_url, "SIGNUP_ADDRESS_LIMIT": "2 per hour"})
    visitor = strict.test_client()
    answers = [ask(visitor, link, email=f"n{i}@example.org").status_code for i in range(3)]
    assert answers[:2] == [200, 200] and answers[2] == 429


def test_the_command_line_prints_a_link_that_works(prof, site, database_url, monkeypatch, signup):
    from grader.cli import main

    monkeypatch.setenv("GRADER_DATABASE_URL", database_url)
    _teacher, course_url = prof
    ran = CliRunner().invoke(main, ["course", "invite", "--course", course_url.rsplit("/", 1)[1], "--role", "ta",
                                    "--uses", "5", "--site", "https://grader.example.edu/"])
    assert ran.exit_code == 0, ran.output
    link = re.search(r"https://grader\.example\.edu(/join/\S+)", ran.output).group(1)
    assert signup(site.test_client(), link).status_code == 303
    assert role_of(database_url, "grace@example.org", course_url) == "ta"
    refused = CliRunner().invoke(main, ["course", "invite", "--course", "999"])
    assert refused.exit_code == 1 and "there is no course 999" in refused.output


def test_the_join_page_comes_in_korean(prof, site):
    teacher, course_url = prof
    link = make_link(teacher, course_url)
    visitor = site.test_client()
    page = visitor.get(link, headers={"Accept-Language": "ko"}).get_data(as_text=True)
    assert 'lang="ko"' in page and "Mail me a link" not in page


@pytest.mark.slow  # takes seconds: left out of the fast loop
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_gunicorns_access_log_keeps_a_links_start_only(prof, database_url, tmp_path):
    """The link is the invitation: the service's real access log must not hold it."""
    teacher, course_url = prof
    link = make_link(teacher, course_url)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "--bind", f"127.0.0.1:{port}", "--workers", "1",
         "--access-logfile", "-", "grader.app:create_app()"],
        env={**os.environ, "GRADER_DATABASE_URL": database_url},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        for _ in range(100):
            try:
                # Quick to refuse a connection before gunicorn listens; a first answer may be slow
                # on a loaded machine (the worker makes the app and opens the database then).
                if requests.get(f"http://127.0.0.1:{port}{link}", timeout=(2, 30)).status_code == 200:
                    break
            except requests.ConnectionError:
                time.sleep(0.2)
        else:
            pytest.fail("gunicorn did not answer")
        time.sleep(0.5)
    finally:
        server.terminate()
        log = server.communicate(timeout=20)[0]
    secret = link.rsplit("/", 1)[1]
    assert f"/join/{secret[:8]}***" in log, log[-2000:]
    assert secret not in log
