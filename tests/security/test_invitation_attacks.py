"""Attacks on course invitation links (grader.courses.invitations, grader.web.invitations,
`grader course invite`) and on the mailed links that finish a join through one
(grader.accounts.links, grader.web.account): a link must make a student or a TA of its own
course alone, only while it is alive and only as many times as it allows (racing requests
included); answering it with an address must never hand over an existing account or its
courses, nor tell whether the address has one (the mail goes to that address alone); a
mailed link works once, for its own account; the forms must carry this session's CSRF
token; and neither link may show in pages of others, logs, error pages or Referer headers.
Each test passes while that holds."""

from __future__ import annotations

import logging
import re
import threading
from datetime import timedelta
from urllib.parse import urlsplit

import pytest
from click.testing import CliRunner
from sqlalchemy import func, select

from grader import clock, db
from grader.accounts import links as account_links, users
from grader.accounts.models import AccountLink, User
from grader import courses
from grader.courses import invitations
from grader.courses.roster import set_role
from grader.courses.models import Course, CourseMember, Invitation
from grader.lti.models import LtiPlatform
from grader.mail import Mail
from tests.test_invitations import NEWCOMER, accounts, ask, make_link, prof, role_of, signup  # noqa: F401  (fixtures too)
from tests.forms import sign_in, token
from tests.mailbox import Inbox, text_of
from tests.test_web import ada, site  # noqa: F401  (fixtures too)

PASSWORD = "correct horse"
ALERT = re.compile(r'<p class="error" role="alert">(.*?)</p>', re.S)
CHOSEN = {"password": NEWCOMER["password"], "password_again": NEWCOMER["password_again"]}


# ------------------------------------------------------------------ helpers

def signed_in(site, email: str, password: str = PASSWORD):
    client = site.test_client()
    assert sign_in(client, email, password).status_code == 302
    return client


def secret(link: str) -> str:
    return link.rsplit("/", 1)[1]


def course_id(course_url: str) -> int:
    return int(course_url.rsplit("/", 1)[1])


def invitation(database_url, link: str) -> Invitation:
    with db.transaction(database_url) as s:
        return s.scalar(select(Invitation).where(Invitation.prefix == secret(link)[:8]))


def invitation_count(database_url) -> int:
    with db.transaction(database_url) as s:
        return s.scalar(select(func.count(Invitation.id)))


def user_row(database_url, email: str) -> User | None:
    with db.transaction(database_url) as s:
        return s.scalar(select(User).where(User.email == email))


def memberships(database_url, user_id: int) -> dict[int, str]:
    with db.transaction(database_url) as s:
        return dict(s.execute(select(CourseMember.course_id, CourseMember.role)
                              .where(CourseMember.user_id == user_id)).all())


def member_count(database_url, course_url: str) -> int:
    with db.transaction(database_url) as s:
        return s.scalar(select(func.count(CourseMember.id)).where(CourseMember.course_id == course_id(course_url)))


def second_course(database_url, instructor_email: str = "other@example.org") -> tuple[object, str]:
    """Another local course, DL201, whose instructor is a new site instructor; (their
    signed-out email, its URL)."""
    with db.transaction(database_url) as s:
        teacher = users.create_user(s, email=instructor_email, password=PASSWORD, role="instructor", name="Other")
        course = courses.create_course(s, title="Advanced", code="DL201", instructor=teacher)
        return instructor_email, f"/courses/{course.id}"


def lms_course(database_url, instructor_email: str) -> str:
    """A course made by an LMS launch (platform_id set), the account its instructor."""
    with db.transaction(database_url) as s:
        platform = LtiPlatform(name="LMS", issuer="https://lms.example.edu", client_id="c",
                               auth_login_url="https://lms.example.edu/auth", auth_token_url="https://lms.example.edu/t",
                               jwks_url="https://lms.example.edu/jwks")
        s.add(platform)
        s.flush()
        course = Course(title="From the LMS", code="LMS1", platform_id=platform.id, context_id="ctx-1")
        s.add(course)
        s.flush()
        teacher = s.scalar(select(User).where(User.email == instructor_email))
        set_role(s, course.id, teacher.id, "instructor")
        return f"/courses/{course.id}"


def race(n: int, work) -> list:
    """Run work(i) in n threads named race-<i> at once; their results (or exceptions) in order."""
    results: list = [None] * n

    def run(i):
        try:
            results[i] = work(i)
        except Exception as exc:  # noqa: BLE001  (reported by the caller's assertions)
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,), name=f"race-{i}") for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(90)
    return results


def stall(monkeypatch, module, name: str, barrier: threading.Barrier, *, call: int = 1,
          timeout: float = 3.0) -> None:
    """``module.name`` waits at ``barrier`` after its ``call``-th successful call in each
    racing thread: every racing request is past that check together before any goes on.
    (On SQLite a writer holds the file's lock, so the barrier gives up after ``timeout``.)"""
    real, calls = getattr(module, name), {}

    def stalled(*args, **kwargs):
        result = real(*args, **kwargs)
        me = threading.current_thread().name
        if me.startswith("race-"):
            calls[me] = calls.get(me, 0) + 1
            if calls[me] == call:
                try:
                    barrier.wait(timeout)
                except threading.BrokenBarrierError:
                    pass
        return result

    monkeypatch.setattr(module, name, stalled)


def stall_find(monkeypatch, barrier: threading.Barrier, *, call: int = 1, timeout: float = 3.0) -> None:
    """invitations.find stalled (see :func:`stall`): the Join button's check."""
    stall(monkeypatch, invitations, "find", barrier, call=call, timeout=timeout)


def stall_mailed_join(monkeypatch, barrier: threading.Barrier) -> None:
    """A mailed join link's check of its invitation (invitations._open, in join_by_mail)
    stalled: every racing request is past it before any account is made or place counted."""
    stall(monkeypatch, invitations, "_open", barrier)


def hold(monkeypatch, module, name: str) -> tuple[threading.Event, threading.Event]:
    """``module.name``, called in the thread race-0, sets the first event once it has
    returned its answer and waits for the second before handing it back."""
    reached, go = threading.Event(), threading.Event()
    real = getattr(module, name)

    def held(*args, **kwargs):
        result = real(*args, **kwargs)
        if threading.current_thread().name == "race-0" and not reached.is_set():
            reached.set()
            go.wait(20)
        return result

    monkeypatch.setattr(module, name, held)
    return reached, go


def csrf(client) -> str:
    """The session's CSRF token, from a page any visitor (signed in or not) gets."""
    return token(client, "/password/forgot")


def follow(client, mailed: str, **form):
    """Send a mailed link's form, as its page does (``form`` adds or overrides fields)."""
    return client.post(mailed, data={"csrf_token": csrf(client), **form})


def forgot(client, email: str, **headers):
    return client.post("/password/forgot", data={"email": email, "csrf_token": csrf(client)}, headers=headers)


def unspent(database_url) -> int:
    with db.transaction(database_url) as s:
        return s.scalar(select(func.count(AccountLink.id)).where(AccountLink.used_at.is_(None)))


@pytest.fixture
def inbox(prof, mailbox, deliver) -> Inbox:
    return Inbox(mailbox, deliver)


def page_of(answer) -> str:
    """An answer's page, its CSRF token (the session's own) left out."""
    return re.sub(r'name="csrf_token" value="[^"]*"', 'name="csrf_token"', answer.get_data(as_text=True))


def status(answer) -> int | str:
    return answer.status_code if hasattr(answer, "status_code") else repr(answer)


# ------------------------------------------------------------------ no instructor, no admin, no other course

def test_the_create_form_makes_no_link_with_a_staff_or_made_up_role(prof, database_url):
    """An instructor tampers with the form's role: only student and ta come out, anything
    else is refused and nothing is stored."""
    teacher, course_url = prof
    # One course for every role: each refusal is checked to have stored nothing before the next.
    for role in ("instructor", "INSTRUCTOR", " Instructor ", "admin", "owner", "ta\x00", "student,instructor",
                 "instructor\u200b", "ınstructor", "TA;instructor"):
        refused = teacher.post(f"{course_url}/invitations", data={"role": role, "days": "3",
                                                                 "csrf_token": token(teacher, course_url)})
        assert refused.status_code == 422, (role, refused.status_code)
        assert invitation_count(database_url) == 0, role


def test_the_create_form_refuses_out_of_range_or_odd_numbers(prof, database_url):
    """days and max_uses outside 1..180 and 1..10000, negative, fractional, huge (past
    Python's int digits limit), hex or empty days: 422, never a 500, never a row."""
    teacher, course_url = prof
    for form in ({"days": "0"}, {"days": "181"}, {"days": "-1"}, {"days": "3.5"}, {"days": "0x10"}, {"days": ""},
                 {"days": "9" * 5000}, {"days": "1e2"}, {"days": "NaN"}, {"days": "\x00"},
                 {"days": "3", "max_uses": "0"}, {"days": "3", "max_uses": "-5"}, {"days": "3", "max_uses": "10001"},
                 {"days": "3", "max_uses": "9" * 5000}, {"days": "3", "max_uses": "1.5"}):
        refused = teacher.post(f"{course_url}/invitations", data={"role": "student", **form,
                                                                 "csrf_token": token(teacher, course_url)})
        assert refused.status_code == 422, (form, refused.status_code)
    assert invitation_count(database_url) == 0


def test_accept_and_sign_up_ignore_forged_role_admin_and_course_fields(prof, site, ada, database_url, inbox):
    """Forged fields on the join forms and on the mailed link's form (role=instructor,
    is_admin, site role, another course's id, self_registered, another user's id or
    address) change nothing: the link's own role and course, the mailed address only."""
    teacher, course_url = prof
    other_email, other_url = second_course(database_url)
    link = make_link(teacher, course_url)
    forged = {"role": "instructor", "is_admin": "1", "admin": "true", "site_role": "admin", "user_role": "admin",
              "course_id": str(course_id(other_url)), "course": str(course_id(other_url)), "self_registered": "1",
              "user_id": "1", "invitation": "1", "purpose": "reset"}
    bob = signed_in(site, "bob@example.org")
    assert bob.post(f"{link}?role=instructor&course_id={course_id(other_url)}",
                    data={**forged, "csrf_token": token(bob, link)}).status_code == 303
    assert role_of(database_url, "bob@example.org", course_url) == "student"
    assert role_of(database_url, "bob@example.org", other_url) is None
    made = site.test_client()
    query = f"?role=instructor&course_id={course_id(other_url)}&email=ada@example.org"
    asked = made.post(f"{link}/account{query}", data={**forged, "name": NEWCOMER["name"], "email": NEWCOMER["email"],
                                                      "csrf_token": token(made, link)})
    assert asked.status_code == 200
    mailed = inbox.link("grace@example.org")
    joined = made.post(mailed + query, data={**forged, **CHOSEN, "email": "ada@example.org", "name": "Evil",
                                             "csrf_token": token(made, mailed)})
    assert joined.status_code == 303 and joined.headers["Location"] == course_url
    grace = user_row(database_url, "grace@example.org")
    # Confirmed by the mail, not by a form field: a roster naming the address finds this account.
    assert grace.role == "student" and not grace.self_registered and grace.name == NEWCOMER["name"]
    assert memberships(database_url, grace.id) == {course_id(course_url): "student"}
    with db.transaction(database_url) as s:
        first = s.get(User, 1)
        assert first.email != "grace@example.org" and first.password_hash  # user_id=1 was not touched
    assert user_row(database_url, "ada@example.org").role == "student"
    assert sign_in(site.test_client(), "ada@example.org").status_code == 302  # Ada's password is hers
    assert inbox.recipients() == {"grace@example.org"}


def test_a_ta_link_makes_a_ta_and_nothing_more(prof, site, ada, database_url):
    """A TA made by a link cannot raise themselves further: no link, no revoke, no roster
    line, and not even the open links' prefixes on the course page."""
    teacher, course_url = prof
    ta_link = make_link(teacher, course_url, role="ta")
    student_link = make_link(teacher, course_url)
    assert ada.post(ta_link, data={"csrf_token": token(ada, ta_link)}).status_code == 303
    assert ada.post(ta_link, data={"csrf_token": token(ada, ta_link)}).status_code == 303  # again: still a TA
    assert ada.post(student_link, data={"csrf_token": token(ada, student_link)}).status_code == 303  # not lowered
    assert role_of(database_url, "ada@example.org", course_url) == "ta"
    page = ada.get(course_url).get_data(as_text=True)
    for link in (ta_link, student_link):
        assert secret(link)[:8] not in page
    assert "/invitations" not in page
    for form in ({"role": "ta", "days": "3"}, {"role": "student", "days": "3"}):
        assert ada.post(f"{course_url}/invitations", data={**form, "csrf_token": token(ada, course_url)}) \
            .status_code == 403
    row = invitation(database_url, student_link)
    assert ada.post(f"{course_url}/invitations/{row.id}/revoke",
                    data={"csrf_token": token(ada, course_url)}).status_code == 403
    assert ada.post(f"{course_url}/members", data={"roster_text": "email,role\nada@example.org,instructor\n",
                                                   "csrf_token": token(ada, course_url)}).status_code == 403
    assert role_of(database_url, "ada@example.org", course_url) == "ta"
    assert invitation(database_url, student_link).revoked_at is None and invitation_count(database_url) == 2


def test_students_non_members_site_instructors_and_strangers_make_no_links(prof, site, ada, database_url):
    """Ada (a student of the course), Bob (no member), another course's instructor (a site
    instructor) and a visitor signed out: none makes or sees a link of DL101."""
    teacher, course_url = prof
    other_email, _other_url = second_course(database_url)
    answers = {}
    for who, client in (("ada", ada), ("bob", signed_in(site, "bob@example.org")),
                        ("other", signed_in(site, other_email))):
        answers[who] = client.post(f"{course_url}/invitations", data={"role": "student", "days": "3",
                                                                    "csrf_token": token(client, "/courses")}).status_code
    assert answers == {"ada": 403, "bob": 404, "other": 404}
    stranger = site.test_client()
    refused = stranger.post(f"{course_url}/invitations", data={"role": "student", "days": "3",
                                                               "csrf_token": token(stranger, "/login")})
    assert refused.status_code == 302 and refused.location.startswith("/login")
    assert invitation_count(database_url) == 0


def test_an_instructor_of_one_course_revokes_nothing_of_another(prof, site, database_url):
    """IDOR on revoke: Prof (DL101) revokes DL201's link through DL101's URL and through
    DL201's; the other instructor tries DL101's; odd ids. All refused, both links alive."""
    teacher, course_url = prof
    other_email, other_url = second_course(database_url)
    other = signed_in(site, other_email)
    mine, theirs = make_link(teacher, course_url), make_link(other, other_url)
    mine_id, theirs_id = invitation(database_url, mine).id, invitation(database_url, theirs).id
    for client, url in ((teacher, f"{course_url}/invitations/{theirs_id}/revoke"),
                        (teacher, f"{other_url}/invitations/{theirs_id}/revoke"),
                        (other, f"{other_url}/invitations/{mine_id}/revoke"),
                        (other, f"{course_url}/invitations/{mine_id}/revoke")):
        answer = client.post(url, data={"csrf_token": token(client, "/courses")})
        assert answer.status_code in (403, 404), (url, answer.status_code)
    for weird in ("0", "2147483648", "99999999999999999999999", "-1", "1.0", "%20" + str(theirs_id)):
        answer = teacher.post(f"{course_url}/invitations/{weird}/revoke", data={"csrf_token": token(teacher, course_url)})
        assert answer.status_code in (404, 405), (weird, answer.status_code)
    assert invitation(database_url, mine).revoked_at is None and invitation(database_url, theirs).revoked_at is None
    assert site.test_client().get(theirs).status_code == 200 and site.test_client().get(mine).status_code == 200


def test_a_link_of_one_course_opens_no_other(prof, site, database_url, inbox):
    """Course ids smuggled into the join URLs (query, path, form) do not redirect the
    join, nor does the mailed link's form take one."""
    teacher, course_url = prof
    _other_email, other_url = second_course(database_url)
    link = make_link(teacher, course_url)
    other = course_id(other_url)
    visitor = site.test_client()
    assert visitor.get(f"/join/{other}").status_code == 404
    assert visitor.get(f"{link}/{other}").status_code == 404
    asked = visitor.post(f"{link}/account?course_id={other}&course={other}",
                         data={**NEWCOMER, "course_id": other, "csrf_token": token(visitor, link)})
    assert asked.status_code == 200 and "Deep learning" in asked.get_data(as_text=True)
    mailed = inbox.link("grace@example.org")
    assert visitor.post(f"{mailed}?course_id={other}&course={other}",
                        data={**CHOSEN, "course_id": other, "csrf_token": csrf(visitor)}
                        ).headers["Location"] == course_url
    grace = user_row(database_url, "grace@example.org")
    assert memberships(database_url, grace.id) == {course_id(course_url): "student"}


# ------------------------------------------------------------------ dead links, on every path

def test_a_dead_link_lets_no_one_in_on_any_path(prof, site, database_url, inbox, signup):
    """Revoked, expired and used-up links: the page, the Join button (signed in), the
    address form and the links mailed while the invitation was alive (a newcomer's, and
    one for an address with an account) all refuse, and nothing (account, member, use,
    session) is made."""
    teacher, course_url = prof
    revoked, expiring, single = (make_link(teacher, course_url), make_link(teacher, course_url, days="1"),
                                 make_link(teacher, course_url, max_uses="1"))
    start = clock.now()
    mailed = {}
    # Asked late in the expiring link's day: the mailed links outlive the invitation.
    with clock.travel(start + timedelta(hours=12)):
        for i, link in enumerate((revoked, expiring, single)):
            asker = site.test_client()
            assert ask(asker, link, email=f"early{i}@example.org").status_code == 200
            assert ask(asker, link, email="bob@example.org").status_code == 200
            mailed[link] = (inbox.links(f"early{i}@example.org")[-1], inbox.links("bob@example.org")[-1])
    teacher.post(f"{course_url}/invitations/{invitation(database_url, revoked).id}/revoke",
                 data={"csrf_token": token(teacher, course_url)})
    assert signup(site.test_client(), single, email="first@example.org").status_code == 303
    bob = signed_in(site, "bob@example.org")
    bob_csrf = token(bob, "/exercises")
    before, members = accounts(database_url), member_count(database_url, course_url)
    with clock.travel(start + timedelta(days=1, seconds=5)):
        for link in (revoked, expiring, single):
            visitor = site.test_client()
            visitor_csrf = csrf(visitor)
            assert visitor.get(link).status_code == 410
            assert bob.post(link, data={"csrf_token": bob_csrf}).status_code == 410
            for email in ("late@example.org", "LATE2@example.org", "ada@example.org"):
                answer = visitor.post(f"{link}/account", data={**NEWCOMER, "email": email, "csrf_token": visitor_csrf})
                assert answer.status_code == 410, (link, answer.status_code)
            # A mistake in the form on a dead link: still refused, still nothing of the course shown
            answer = visitor.post(f"{link}/account", data={**NEWCOMER, "name": " ", "csrf_token": visitor_csrf})
            assert answer.status_code in (410, 422) and "Deep learning" not in answer.get_data(as_text=True)
            assert "Deep learning" not in visitor.get(link).get_data(as_text=True)
            new_link, existing_link = mailed[link]
            # the mailed link's page says the invitation is dead, rather than offer a form that cannot work
            opened = visitor.get(new_link)
            assert opened.status_code == 410 and 'type="password"' not in opened.get_data(as_text=True)
            assert "Deep learning" not in opened.get_data(as_text=True)
            assert follow(visitor, new_link, **CHOSEN).status_code == 410
            assert follow(visitor, existing_link).status_code == 410
            assert visitor.get(course_url).status_code == 302  # signed in as no one, Bob least of all
    assert accounts(database_url) == before and member_count(database_url, course_url) == members
    assert role_of(database_url, "bob@example.org", course_url) is None
    assert invitation(database_url, single).uses == 1
    assert inbox.recipients() == {"early0@example.org", "early1@example.org", "early2@example.org",
                                  "bob@example.org", "first@example.org"}  # the dead links mailed no one


def test_a_link_that_expires_between_the_check_and_the_count_makes_nothing(prof, site, database_url, inbox,
                                                                           monkeypatch):
    """A newcomer's mailed link passes its invitation's check, then the clock passes the
    invitation's expiry (not the mailed link's) before the place is counted: the
    database's own condition refuses, and the new account is rolled back."""
    teacher, course_url = prof
    link = make_link(teacher, course_url, days="1")
    start = clock.now()
    visitor = site.test_client()
    with clock.travel(start + timedelta(hours=12)):  # the mailed link lives until 36 hours from now
        assert ask(visitor, link).status_code == 200
    mailed = inbox.link("grace@example.org")
    visitor_csrf = csrf(visitor)
    reached, go = hold(monkeypatch, invitations, "_open")
    before = accounts(database_url)
    outcome = {}
    worker = threading.Thread(target=lambda: outcome.setdefault(
        "answer", visitor.post(mailed, data={**CHOSEN, "csrf_token": visitor_csrf})), name="race-0")
    worker.start()
    assert reached.wait(20)
    with clock.travel(start + timedelta(days=1, minutes=1)):
        go.set()
        worker.join(60)
    assert outcome["answer"].status_code == 410
    assert accounts(database_url) == before and invitation(database_url, link).uses == 0
    assert visitor.get(course_url).status_code == 302


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
@pytest.mark.parametrize("who", ["grace@example.org", "bob@example.org"])
def test_a_link_revoked_between_the_check_and_the_count_makes_nothing(prof, site, database_url, inbox, monkeypatch,
                                                                      who):
    """On PostgreSQL (where the revoke can commit while the join's transaction is open):
    the invitation is revoked after a mailed link's check of it and before its place is
    counted; a newcomer's link (which makes an account) and Bob's (which signs in)."""
    teacher, course_url = prof
    link = make_link(teacher, course_url)
    visitor = site.test_client()
    assert ask(visitor, link, email=who).status_code == 200
    mailed = inbox.link(who)
    visitor_csrf = csrf(visitor)
    reached, go = hold(monkeypatch, invitations, "_open")
    before, members = accounts(database_url), member_count(database_url, course_url)
    outcome = {}
    worker = threading.Thread(target=lambda: outcome.setdefault(
        "answer", visitor.post(mailed, data={**CHOSEN, "csrf_token": visitor_csrf})), name="race-0")
    worker.start()
    assert reached.wait(20)
    gone = teacher.post(f"{course_url}/invitations/{invitation(database_url, link).id}/revoke",
                        data={"csrf_token": token(teacher, course_url)})
    assert gone.status_code == 303
    go.set()
    worker.join(60)
    assert outcome["answer"].status_code == 410
    assert accounts(database_url) == before and invitation(database_url, link).uses == 0
    assert member_count(database_url, course_url) == members and visitor.get(course_url).status_code == 302


@pytest.mark.slow  # takes seconds: left out of the fast loop
def test_racing_sign_ups_never_make_more_accounts_than_the_link_allows(prof, site, database_url, inbox,
                                                                       monkeypatch):
    """Eight newcomers send their mailed links' forms for a two-use invitation at once,
    every one of them past the invitation's check before any place is counted: two join,
    six are refused (410), none gets a 500, and no account is left behind for the refused
    ones."""
    teacher, course_url = prof
    link = make_link(teacher, course_url, max_uses="2")
    n = 8
    clients = [site.test_client() for _ in range(n)]
    for i, client in enumerate(clients):
        assert ask(client, link, email=f"racer{i}@example.org").status_code == 200
    mailed = [inbox.link(f"racer{i}@example.org") for i in range(n)]
    csrfs = [csrf(c) for c in clients]
    before, members = accounts(database_url), member_count(database_url, course_url)
    assert accounts(database_url) == before  # asking made nothing
    stall_mailed_join(monkeypatch, threading.Barrier(n))
    answers = race(n, lambda i: clients[i].post(mailed[i], data={**CHOSEN, "csrf_token": csrfs[i]}))
    codes = sorted(status(a) for a in answers)
    assert codes == [303, 303] + [410] * (n - 2), codes
    assert accounts(database_url) == before + 2
    assert member_count(database_url, course_url) == members + 2
    assert invitation(database_url, link).uses == 2


def test_racing_joins_of_signed_in_users_never_pass_the_last_place(prof, site, database_url, monkeypatch):
    """Five members of the site press Join on a one-use link together: one joins."""
    teacher, course_url = prof
    link = make_link(teacher, course_url, max_uses="1")
    n = 5
    with db.transaction(database_url) as s:
        for i in range(n):
            users.create_user(s, email=f"j{i}@example.org", password=PASSWORD)
    clients = [signed_in(site, f"j{i}@example.org") for i in range(n)]
    csrfs = [token(c, link) for c in clients]
    members = member_count(database_url, course_url)
    stall_find(monkeypatch, threading.Barrier(n), call=1)
    answers = race(n, lambda i: clients[i].post(link, data={"csrf_token": csrfs[i]}))
    codes = sorted(status(a) for a in answers)
    assert codes == [303] + [410] * (n - 1), codes
    assert member_count(database_url, course_url) == members + 1 and invitation(database_url, link).uses == 1


def test_one_user_pressing_join_twice_at_once_gets_no_error_and_takes_one_place(prof, site, database_url,
                                                                                 monkeypatch):
    """A double click (two tabs, a retried request) by one user on a link with places to
    spare: both answers are the course (no 500 from the second membership row) and the user
    takes one place, not two."""
    teacher, course_url = prof
    link = make_link(teacher, course_url, max_uses="10")
    clients = [signed_in(site, "bob@example.org") for _ in range(2)]
    csrfs = [token(c, link) for c in clients]
    stall_find(monkeypatch, threading.Barrier(2), call=1)
    answers = race(2, lambda i: clients[i].post(link, data={"csrf_token": csrfs[i]}))
    assert [status(a) for a in answers] == [303, 303], [status(a) for a in answers]
    assert role_of(database_url, "bob@example.org", course_url) == "student"
    assert invitation(database_url, link).uses == 1


def test_a_student_raised_by_a_ta_link_twice_at_once_takes_one_place(prof, site, database_url, monkeypatch):
    """Ada (a student) presses Join on a two-place TA link in two tabs at once: she is a
    TA, and one place is left for the other TA it was meant for."""
    teacher, course_url = prof
    link = make_link(teacher, course_url, role="ta", max_uses="2")
    clients = [signed_in(site, "ada@example.org") for _ in range(2)]
    csrfs = [token(c, link) for c in clients]
    stall_find(monkeypatch, threading.Barrier(2), call=1)
    answers = race(2, lambda i: clients[i].post(link, data={"csrf_token": csrfs[i]}))
    assert all(status(a) in (303, 410) for a in answers), [status(a) for a in answers]
    assert role_of(database_url, "ada@example.org", course_url) == "ta"
    assert invitation(database_url, link).uses == 1


def test_racing_sign_ups_with_one_address_make_one_account_and_no_error(prof, site, database_url, inbox,
                                                                        monkeypatch):
    """Four asks with the same address in different spellings mail four links to the one
    address; their forms sent at once make one account, the others told the address is
    taken (409), none a 500."""
    teacher, course_url = prof
    link = make_link(teacher, course_url)
    spellings = ["dup@example.org", "DUP@example.org", " dup@example.org", "Dup@Example.org "]
    clients = [site.test_client() for _ in spellings]
    for client, spelling in zip(clients, spellings):
        assert ask(client, link, email=spelling).status_code == 200
    mailed = inbox.links("dup@example.org")
    assert len(set(mailed)) == len(spellings) and inbox.recipients() == {"dup@example.org"}
    csrfs = [csrf(c) for c in clients]
    stall_mailed_join(monkeypatch, threading.Barrier(len(spellings)))
    answers = race(len(spellings), lambda i: clients[i].post(mailed[i], data={**CHOSEN, "csrf_token": csrfs[i]}))
    codes = sorted(status(a) for a in answers)
    assert codes == [303, 409, 409, 409], codes
    with db.transaction(database_url) as s:
        assert s.scalar(select(func.count(User.id)).where(func.lower(User.email).like("%dup@example.org%"))) == 1
    assert invitation(database_url, link).uses == 1


@pytest.mark.parametrize("purpose", ["join_new", "join_existing", "reset"])
def test_racing_posts_on_one_mailed_link_use_it_once(prof, site, database_url, inbox, monkeypatch, purpose):
    """One mailed link's form sent from four browsers at once (a double click, a copied
    link), every request past the link's check before any spends it: one gets in, the
    others are refused (410, or 409 where the account was made a moment ago), none a 500;
    one account, one place, one password."""
    teacher, course_url = prof
    link = make_link(teacher, course_url, max_uses="10")
    asker = site.test_client()
    address = "grace@example.org" if purpose == "join_new" else "bob@example.org"
    if purpose == "reset":
        assert forgot(asker, address).status_code == 200
    else:
        assert ask(asker, link, email=address).status_code == 200
    mailed = inbox.link(address)
    n = 4
    clients = [site.test_client() for _ in range(n)]
    csrfs = [csrf(c) for c in clients]
    before = accounts(database_url)
    stall(monkeypatch, account_links, "find", threading.Barrier(n), call=2)  # the check before it is spent
    answers = race(n, lambda i: clients[i].post(mailed, data={
        "password": f"racer {i} password", "password_again": f"racer {i} password", "csrf_token": csrfs[i]}))
    codes = [status(a) for a in answers]
    assert sorted(codes)[0] == 303 and all(c in (409, 410) for c in sorted(codes)[1:]), codes
    winner = codes.index(303)
    assert accounts(database_url) == before + (purpose == "join_new")
    assert invitation(database_url, link).uses == (purpose != "reset")
    with db.transaction(database_url) as s:
        assert s.scalar(select(AccountLink.used_at).where(AccountLink.email == address)) is not None
    if purpose != "join_existing":  # the winner's password, and no loser's
        for i in range(n):
            assert (sign_in(site.test_client(), address, f"racer {i} password").status_code == 302) == (i == winner)
    for i, client in enumerate(clients):
        assert (client.get("/courses").status_code == 200) == (i == winner)


def test_one_users_two_mailed_join_links_and_a_join_at_once_take_one_place(prof, site, database_url, inbox,
                                                                           monkeypatch):
    """Bob asked twice (two mails) and, signed in elsewhere, presses Join too: the three
    sent at once make him a student once, and take one place of the link's three."""
    teacher, course_url = prof
    link = make_link(teacher, course_url, max_uses="3")
    asker = site.test_client()
    for _ in range(2):
        assert ask(asker, link, email="bob@example.org").status_code == 200
    mailed = inbox.links("bob@example.org")
    assert len(mailed) == 2
    clients = [site.test_client(), site.test_client(), signed_in(site, "bob@example.org")]
    csrfs = [csrf(c) for c in clients]
    stall(monkeypatch, invitations, "_open", threading.Barrier(3))  # in join_by_mail, and in find for the Join
    targets = [mailed[0], mailed[1], link]
    answers = race(3, lambda i: clients[i].post(targets[i], data={"csrf_token": csrfs[i]}))
    assert [status(a) for a in answers] == [303, 303, 303], [status(a) for a in answers]
    assert role_of(database_url, "bob@example.org", course_url) == "student"
    assert invitation(database_url, link).uses == 1


# ------------------------------------------------------------------ taking over an account

@pytest.mark.parametrize("email", ["ada@example.org", "ADA@EXAMPLE.ORG", "Ada@Example.Org", " ada@example.org",
                                   "ada@example.org ", "\tada@example.org\n", "ines@example.org",
                                   "prof@example.org"])
def test_sign_up_takes_no_existing_account_in_any_spelling(prof, site, database_url, inbox, email):
    """A newcomer gives an existing user's address (case and whitespace variants, an
    admin's, the instructor's) on a TA link: the answer is the one a new address gets;
    nothing is made, nobody is signed in, the one mail goes to the owner's address (not
    naming the asker's made-up name), and the owner's password, role and seat are as
    they were until the owner follows it."""
    teacher, course_url = prof
    link = make_link(teacher, course_url, role="ta")
    visitor = site.test_client()
    before = accounts(database_url)
    asked = ask(visitor, link, email=email, name="Mallory Attacker")
    fresh = ask(visitor, link, email="fresh@example.org", name="Mallory Attacker")
    assert asked.status_code == fresh.status_code == 200
    assert page_of(asked) == page_of(fresh)
    assert accounts(database_url) == before
    assert visitor.get(course_url).status_code == 302  # not signed in as anyone
    victim = email.strip().lower()
    assert inbox.recipients() == {victim, "fresh@example.org"}
    [to_victim] = inbox.mails(victim)
    assert "already has an account" in text_of(to_victim) and "Mallory" not in text_of(to_victim)
    assert accounts(database_url) == before
    assert visitor.post(f"{link}/account", data={**NEWCOMER, "email": email, "password": "attacker pw",
                                                 "password_again": "attacker pw",
                                                 "csrf_token": csrf(visitor)}).status_code == 200
    assert sign_in(site.test_client(), victim, "attacker pw").status_code == 401  # a password field sets nothing
    assert sign_in(site.test_client(), victim, PASSWORD).status_code == 302
    row = user_row(database_url, victim)
    assert not row.self_registered and row.name != "Mallory Attacker"
    if victim == "ada@example.org":
        assert role_of(database_url, victim, course_url) == "student"  # the TA link did not raise her
    if victim == "prof@example.org":
        assert role_of(database_url, victim, course_url) == "instructor"
    assert invitation(database_url, link).uses == 0


@pytest.mark.parametrize("email", ["\u0430da@example.org",      # Cyrillic a
                                   "ada@example.org.",           # a trailing dot
                                   "ada@example.org\u200b",      # a zero-width space
                                   "\u200bada@example.org",
                                   "\uff41da@example.org",       # a fullwidth a
                                   "ada@exampl\u0435.org",       # a Cyrillic e
                                   "ada@EXAMPLE.ORG.",
                                   "a\u0301da@example.org"])     # a combining accent
def test_a_look_alike_address_gets_none_of_the_real_accounts_things(prof, site, database_url, inbox, email):
    """A newcomer gives a look-alike of Ada's address, and (owning that mailbox) follows
    the link mailed to it: whatever happens (refused, or an account of its own, for the
    look-alike address), Ada gets no mail, they get no session of Ada's, none of her
    courses but the link's, and her password is hers; a roster line of Ada's address
    finds Ada."""
    teacher, course_url = prof
    _other_email, other_url = second_course(database_url)
    link = make_link(teacher, course_url)
    visitor = site.test_client()
    with db.transaction(database_url) as s:
        last_id = s.scalar(select(func.max(User.id)))
    answer = ask(visitor, link, email=email)
    assert answer.status_code in (200, 422)
    got = inbox.recipients()
    assert "ada@example.org" not in got and len(got) <= 1
    squatter = None
    if got:
        [address] = got
        joined = follow(visitor, inbox.link(address), **CHOSEN, email="ada@example.org")
        assert joined.status_code in (303, 409, 422), joined.status_code
        with db.transaction(database_url) as s:
            squatter = s.scalar(select(User).where(User.id > last_id))
        assert (squatter is not None) == (joined.status_code == 303)
    ada_row = user_row(database_url, "ada@example.org")
    assert memberships(database_url, ada_row.id) == {course_id(course_url): "student"}
    assert sign_in(site.test_client(), "ada@example.org", NEWCOMER["password"]).status_code == 401
    assert sign_in(site.test_client(), "ada@example.org", PASSWORD).status_code == 302
    if squatter is not None:
        assert squatter.id != ada_row.id and squatter.role == "student" and squatter.email != "ada@example.org"
        assert squatter.email == users.normalise_email(email)  # the address the mail went to, as typed
        assert memberships(database_url, squatter.id) == {course_id(course_url): "student"}
        assert visitor.get(other_url).status_code == 404  # signed in as the look-alike, with nothing of Ada's
    with db.transaction(database_url) as s:  # Ada's real address on a roster is Ada
        courses.import_roster(s, s.get(Course, course_id(other_url)), [{"email": "ada@example.org", "role": "ta"}])
    assert role_of(database_url, "ada@example.org", other_url) == "ta"
    if squatter is not None:
        assert memberships(database_url, squatter.id) == {course_id(course_url): "student"}


@pytest.mark.parametrize("listed", ["dana@example.org", "Dana@Example.org", " dana@example.org"])
@pytest.mark.parametrize("typed", ["dana@example.org", "DANA@EXAMPLE.ORG", "dana@example.org "])
def test_a_passwordless_roster_account_cannot_be_claimed_through_a_link(prof, site, database_url, inbox, listed,
                                                                        typed):
    """DL201's roster made a passwordless account for Dana; a newcomer gives Dana's
    address through DL101's link: the same answer as for any address, and nothing else for
    them: no account, no session, no password of theirs on Dana's account, no DL201
    seat; the only mail goes to Dana."""
    teacher, course_url = prof
    _other_email, other_url = second_course(database_url)
    with db.transaction(database_url) as s:
        courses.import_roster(s, s.get(Course, course_id(other_url)), [{"email": listed, "role": "ta"}])
    link = make_link(teacher, course_url)
    visitor = site.test_client()
    before = accounts(database_url)
    asked = ask(visitor, link, email=typed)
    assert asked.status_code == 200 and page_of(asked) == page_of(ask(visitor, link, email="x@example.org"))
    assert accounts(database_url) == before
    assert visitor.get(other_url).status_code in (302, 404)
    assert inbox.recipients() == {"dana@example.org", "x@example.org"}  # Dana's welcome, and her join link
    with db.transaction(database_url) as s:
        dana = s.scalar(select(User).where(func.lower(User.email) == "dana@example.org"))
        assert dana.password_hash is None and not dana.self_registered
    assert sign_in(site.test_client(), "dana@example.org", NEWCOMER["password"]).status_code == 401
    assert role_of(database_url, "dana@example.org", course_url) is None


def test_a_unicode_cased_roster_account_is_not_claimed_either(prof, site, database_url, inbox):
    """The roster names Émile@Example.org; a newcomer types it in lower case. Whether or
    not the database's lower() folds É, the newcomer gets no seat of Émile's and no
    session: the mail (if any) goes to the address alone, and only its owner follows it."""
    teacher, course_url = prof
    _other_email, other_url = second_course(database_url)
    with db.transaction(database_url) as s:
        courses.import_roster(s, s.get(Course, course_id(other_url)), [{"email": "Émile@Example.org", "role": "ta"}])
    link = make_link(teacher, course_url)
    visitor = site.test_client()
    before = accounts(database_url)
    assert ask(visitor, link, email="émile@example.org").status_code == 200
    assert accounts(database_url) == before and visitor.get(other_url).status_code in (302, 404)
    assert inbox.recipients() <= {"émile@example.org", "Émile@Example.org"}
    with db.transaction(database_url) as s:
        original = s.scalar(select(User).where(func.lower(User.email).in_(["émile@example.org",
                                                                            "Émile@example.org"])))
        assert original.password_hash is None and not original.self_registered
        for row in s.scalars(select(User).where(User.id != original.id, User.email != "other@example.org")):
            assert course_id(other_url) not in memberships(database_url, row.id)


@pytest.mark.parametrize("listed", ["{}@example.org", "{}@EXAMPLE.org", "  {}@Example.org  "])
def test_a_squatted_address_on_another_courses_roster_is_refused_whole(prof, site, database_url, inbox, listed):
    """Mallory gives victim@example.org through DL101's link: nothing is made, so no
    address is squatted: DL201's instructor uploads a roster naming it (any case, padded)
    as an instructor, which makes the victim's own passwordless account, mailed to the
    victim alone; Mallory gets nothing of DL201. An account self-registered before
    addresses were confirmed by mail is still refused: that whole import changes nothing."""
    teacher, course_url = prof
    other_email, other_url = second_course(database_url)
    mallory = site.test_client()
    assert ask(mallory, make_link(teacher, course_url), email="victim@example.org", name="Victim").status_code == 200
    assert user_row(database_url, "victim@example.org") is None
    other = signed_in(site, other_email)
    roster = f"email,name,role\ncarol@example.org,Carol,student\n{listed.format('Victim')},Victim,instructor\n"
    made = other.post(f"{other_url}/members", data={"roster_text": roster, "csrf_token": token(other, other_url)})
    assert made.status_code == 200, made.get_data(as_text=True)[-1500:]
    victim = user_row(database_url, "victim@example.org")
    assert victim.password_hash is None and role_of(database_url, "victim@example.org", other_url) == "instructor"
    assert inbox.recipients() == {"victim@example.org", "carol@example.org"}
    assert mallory.get(other_url).status_code == 302
    assert sign_in(site.test_client(), "victim@example.org", NEWCOMER["password"]).status_code == 401
    # The join link mailed to the victim, followed now: the address has its account, none is made twice.
    asked_for = inbox.link("victim@example.org", says="make your account")
    assert follow(site.test_client(), asked_for, **CHOSEN).status_code == 409

    with db.transaction(database_url) as s:  # made through a link before the mail confirmed addresses
        users.create_user(s, email="squat@example.org", password="mallory pw").self_registered = True
    roster = f"email,name,role\ncarol2@example.org,Carol,student\n{listed.format('Squat')},Squat,instructor\n"
    refused = other.post(f"{other_url}/members", data={"roster_text": roster, "csrf_token": token(other, other_url)})
    assert refused.status_code == 422 and "invitation link" in refused.get_data(as_text=True)
    assert role_of(database_url, "squat@example.org", other_url) is None
    assert user_row(database_url, "carol2@example.org") is None
    assert signed_in(site, "squat@example.org", "mallory pw").get(other_url).status_code == 404


def test_the_command_line_roster_refuses_a_squatted_address_too(prof, site, database_url, inbox, monkeypatch,
                                                                tmp_path):
    """`grader course create --roster` naming an account self-registered before addresses
    were confirmed: refused, and no course with that member. An address Mallory only gave
    through a link is no account: the roster makes its owner's, which Mallory cannot open."""
    from grader.cli import main

    teacher, course_url = prof
    with db.transaction(database_url) as s:
        users.create_user(s, email="squat@example.org", password="mallory pw").self_registered = True
    mallory = site.test_client()
    assert ask(mallory, make_link(teacher, course_url), email="victim@example.org").status_code == 200
    monkeypatch.setenv("GRADER_DATABASE_URL", database_url)
    roster = tmp_path / "roster.csv"
    roster.write_text("email,name,role\nSquat@example.org,S,instructor\n", encoding="utf-8")
    ran = CliRunner().invoke(main, ["course", "create", "--title", "T", "--code", "T1", "--roster", str(roster)])
    assert ran.exit_code != 0
    assert memberships(database_url, user_row(database_url, "squat@example.org").id) == {}
    roster.write_text("email,name,role\nVictim@example.org,V,instructor\n", encoding="utf-8")
    ran = CliRunner().invoke(main, ["course", "create", "--title", "T", "--code", "T2", "--roster", str(roster)])
    assert ran.exit_code == 0, ran.output
    victim = user_row(database_url, "victim@example.org")
    assert victim.password_hash is None and not victim.self_registered
    assert sign_in(site.test_client(), "victim@example.org", NEWCOMER["password"]).status_code == 401
    assert mallory.get("/courses").status_code == 302
    assert inbox.recipients() <= {"victim@example.org"}


# ------------------------------------------------------------------ sessions

@pytest.mark.parametrize("purpose", ["join_new", "join_existing", "reset"])
def test_sign_up_gives_a_fresh_session_and_the_old_cookie_gains_nothing(prof, site, database_url, inbox, purpose):
    """Session fixation: a visitor's anonymous cookie (which an attacker may have planted)
    is not signed in by following a mailed link (a newcomer's, one for an address with an
    account, a new password's); the new session's CSRF token is new too."""
    teacher, course_url = prof
    link = make_link(teacher, course_url)
    visitor = site.test_client()
    old_csrf = token(visitor, link)
    old_cookie = visitor.get_cookie("session").value
    address = "grace@example.org" if purpose == "join_new" else "bob@example.org"
    if purpose == "reset":
        assert visitor.post("/password/forgot", data={"email": address, "csrf_token": old_csrf}).status_code == 200
    else:
        assert visitor.post(f"{link}/account", data={**NEWCOMER, "email": address,
                                                     "csrf_token": old_csrf}).status_code == 200
    assert visitor.get_cookie("session").value == old_cookie  # asking signs no one in
    mailed = inbox.link(address)
    assert visitor.get(mailed).status_code == 200
    assert visitor.post(mailed, data={**CHOSEN, "csrf_token": old_csrf}).status_code == 303
    new_cookie = visitor.get_cookie("session").value
    assert new_cookie != old_cookie
    with visitor.session_transaction() as session:
        assert "csrf_token" not in session or session["csrf_token"] != old_csrf
    planted = site.test_client()
    planted.set_cookie("session", old_cookie)
    assert planted.get("/courses").status_code == 302  # the attacker's copy is still signed out
    assert planted.post(f"{course_url}/invitations", data={"days": "3", "csrf_token": old_csrf}).status_code in (302, 400)
    # The old session's CSRF token is no good for the new session either.
    assert visitor.post("/logout", data={"csrf_token": old_csrf}).status_code == 400
    assert visitor.get("/courses").status_code == 200


def test_a_signed_in_user_signing_up_again_carries_nothing_over(prof, site, ada, database_url, inbox):
    """Ada, signed in, gives another address and follows its mailed link in her browser:
    the new account is a new student, not Ada, and the session is the new account's alone."""
    teacher, course_url = prof
    _other_email, other_url = second_course(database_url)
    with db.transaction(database_url) as s:
        courses.import_roster(s, s.get(Course, course_id(other_url)), [{"email": "ada@example.org", "role": "ta"}])
    link = make_link(teacher, course_url)
    assert ada.post(f"{link}/account", data={**NEWCOMER, "email": "ada2@example.org",
                                             "csrf_token": csrf(ada)}).status_code == 200
    assert ada.get(other_url).status_code == 200  # asking changed nothing: still Ada
    assert follow(ada, inbox.link("ada2@example.org"), **CHOSEN).status_code == 303
    assert ada.get(other_url).status_code == 404  # the session is ada2's: none of Ada's TA seat
    assert memberships(database_url, user_row(database_url, "ada2@example.org").id) == {course_id(course_url): "student"}
    assert memberships(database_url, user_row(database_url, "ada@example.org").id) == {
        course_id(course_url): "student", course_id(other_url): "ta"}


def test_a_join_existing_link_signs_in_its_own_account_only(prof, site, ada, database_url, inbox):
    """Bob's mailed join link (for an address with an account), sent from Ada's signed-in
    browser with Ada's address and id forged into the form: Bob is signed in and joins, as
    the TA the link makes; Ada is neither raised nor kept signed in, and her password is
    hers."""
    teacher, course_url = prof
    _other_email, other_url = second_course(database_url)
    with db.transaction(database_url) as s:
        courses.import_roster(s, s.get(Course, course_id(other_url)), [{"email": "ada@example.org", "role": "ta"}])
    link = make_link(teacher, course_url, role="ta")
    assert ask(site.test_client(), link, email="bob@example.org", name="Ada").status_code == 200
    mailed = inbox.link("bob@example.org")
    ada_row = user_row(database_url, "ada@example.org")
    page = ada.get(mailed).get_data(as_text=True)
    assert "bob@example.org" in page and "ada@example.org" not in page.split("<main")[-1]
    joined = ada.post(mailed, data={"email": "ada@example.org", "user_id": str(ada_row.id), **CHOSEN,
                                    "csrf_token": csrf(ada)})
    assert joined.status_code == 303 and joined.headers["Location"] == course_url
    assert role_of(database_url, "bob@example.org", course_url) == "ta"
    assert role_of(database_url, "ada@example.org", course_url) == "student"
    assert ada.get(other_url).status_code == 404  # the browser is Bob's now
    assert user_row(database_url, "bob@example.org").name == "bob"  # the asker's name changed nothing
    for email in ("ada@example.org", "bob@example.org"):  # the form's password set nothing
        assert sign_in(site.test_client(), email, NEWCOMER["password"]).status_code == 401
        assert sign_in(site.test_client(), email, PASSWORD).status_code == 302


# ------------------------------------------------------------------ CSRF

def test_every_invitation_form_needs_this_sessions_csrf_token(prof, site, ada, database_url, inbox):
    """Create, revoke, Join, the address form, every mailed link's form and "forgot your
    password?" without a CSRF token, with a forged one, with another session's, or as
    JSON: 400 and nothing changes (no account, no member, no mail, no link spent)."""
    teacher, course_url = prof
    link = make_link(teacher, course_url)
    row = invitation(database_url, link)
    bob = signed_in(site, "bob@example.org")
    bobs = token(bob, "/exercises")
    visitor = site.test_client()
    visitor.get(link)
    assert ask(visitor, link).status_code == 200
    assert ask(visitor, link, email="bob@example.org").status_code == 200
    assert forgot(visitor, "ines@example.org").status_code == 200
    mailed = [inbox.link("grace@example.org"), inbox.link("bob@example.org"), inbox.link("ines@example.org")]
    for one in mailed:
        visitor.get(one)  # the page of each, opened first: its form is the one forged below
    before, open_links, members = accounts(database_url), unspent(database_url), member_count(database_url, course_url)
    for i, forged in enumerate((None, "forged", bobs)):
        extra = {} if forged is None else {"csrf_token": forged}
        assert teacher.post(f"{course_url}/invitations", data={"role": "ta", "days": "3", **extra}).status_code == 400
        assert teacher.post(f"{course_url}/invitations/{row.id}/revoke", data=extra).status_code == 400
        assert ada.post(link, data=extra).status_code == 400
        assert visitor.post(f"{link}/account", data={**NEWCOMER, "email": f"x{i}@example.org", **extra}) \
            .status_code == 400
        for one in mailed:
            assert visitor.post(one, data={**CHOSEN, **extra}).status_code == 400
        assert visitor.post("/password/forgot", data={"email": "ada@example.org", **extra}).status_code == 400
    assert teacher.post(f"{course_url}/invitations", json={"role": "ta", "days": "3"}).status_code == 400
    assert visitor.post(f"{link}/account", json=NEWCOMER).status_code == 400
    for one in mailed:
        assert visitor.post(one, json=CHOSEN).status_code == 400
    assert visitor.post("/password/forgot", json={"email": "ada@example.org"}).status_code == 400
    assert teacher.get(f"{course_url}/invitations/{row.id}/revoke").status_code == 405
    assert invitation_count(database_url) == 1 and invitation(database_url, link).revoked_at is None
    assert accounts(database_url) == before and unspent(database_url) == open_links
    assert member_count(database_url, course_url) == members
    assert inbox.recipients() == {"grace@example.org", "bob@example.org", "ines@example.org"}
    assert len(inbox.mails("ines@example.org")) == 1 and not inbox.mails("ada@example.org")
    assert visitor.get("/courses").status_code == 302
    assert sign_in(site.test_client(), "ines@example.org").status_code == 302


def test_a_get_never_joins_or_signs_up(prof, site, ada, database_url, inbox):
    """A join link or a mailed link opened by an image tag, a link preview or a mail
    scanner (GET, HEAD, with the form's fields in the query) makes no member, no account,
    no session, spends nothing; and "forgot your password?" opened mails no one."""
    teacher, course_url = prof
    link = make_link(teacher, course_url)
    bob = signed_in(site, "bob@example.org")
    for method in (bob.get, bob.head):
        assert method(link).status_code == 200
    assert bob.get(f"{link}/account").status_code == 405
    assert bob.get(f"{link}/account", query_string={**NEWCOMER}).status_code == 405
    assert ask(site.test_client(), link).status_code == 200
    assert ask(site.test_client(), link, email="bob@example.org").status_code == 200
    mailed = [inbox.link("grace@example.org"), inbox.link("bob@example.org")]
    scanner = site.test_client()
    before, open_links = accounts(database_url), unspent(database_url)
    for one in mailed:
        for method in (scanner.get, scanner.head, bob.get):
            assert method(one, query_string=CHOSEN).status_code == 200
    assert scanner.get("/password/forgot", query_string={"email": "ada@example.org"}).status_code == 200
    assert scanner.get("/courses").status_code == 302
    assert role_of(database_url, "bob@example.org", course_url) is None
    assert invitation(database_url, link).uses == 0
    assert accounts(database_url) == before and unspent(database_url) == open_links
    assert not inbox.mails("ada@example.org")
    assert follow(scanner, mailed[0], **CHOSEN).status_code == 303  # and the link still works


# ------------------------------------------------------------------ redirects

def test_the_join_pages_never_send_anyone_to_another_site(prof, site, database_url, inbox):
    """Open redirects: a `next` on the join URLs, the sign-in link of the join page, the
    redirect of a signed-out Join, the address form and the mailed link's redirect all
    stay on the site."""
    teacher, course_url = prof
    link = make_link(teacher, course_url)
    evil = ("https://evil.example/", "//evil.example", "/\\evil.example", "\\\\evil.example", "https:evil.example")
    visitor = site.test_client()
    for target in evil:
        page = visitor.get(link, query_string={"next": target}).get_data(as_text=True)
        hrefs = re.findall(r'(?:href|action)="([^"]*)"', page)
        assert all("evil.example" not in h for h in hrefs), hrefs
        sign_in_link = re.search(r'href="(/login\?next=[^"]*)"', page).group(1).replace("&amp;", "&")
        assert "evil" not in sign_in_link
    # The signed-out Join: sent to sign in, and back to the link (on this site) after it.
    bounced = visitor.post(f"{link}?next=https://evil.example/", data={"csrf_token": token(visitor, link)})
    assert bounced.status_code == 302 and bounced.location.startswith("/login?next=")
    after = visitor.post(bounced.location, data={"email": "bob@example.org", "password": PASSWORD,
                                                "csrf_token": token(visitor, "/login")})
    assert after.status_code == 302 and after.location.startswith("/join/")
    assert not urlsplit(after.location).netloc and not urlsplit(after.location).scheme
    assert visitor.get(after.location).status_code == 200  # the join page itself: it redirects nowhere
    for i, target in enumerate(evil):
        made = site.test_client()
        email = f"n{i}@example.org"
        asked = made.post(f"{link}/account", query_string={"next": target}, data={
            **NEWCOMER, "email": email, "next": target, "csrf_token": token(made, link)})
        assert asked.status_code == 200 and "Location" not in asked.headers
        assert all("evil.example" not in h for h in re.findall(r'(?:href|action)="([^"]*)"', page_of(asked)))
        mailed = inbox.link(email)
        shown = made.get(mailed, query_string={"next": target}).get_data(as_text=True)
        assert all("evil.example" not in h for h in re.findall(r'(?:href|action)="([^"]*)"', shown))
        answer = made.post(mailed, query_string={"next": target}, data={**CHOSEN, "next": target,
                                                                       "csrf_token": csrf(made)})
        assert answer.status_code == 303 and answer.headers["Location"] == course_url
    for target in evil:
        refused = site.test_client().get(f"/join/{target}")
        assert refused.status_code in (404, 308)  # 308: werkzeug merging the slashes, on this site
        assert urlsplit(refused.headers.get("Location", "")).netloc in ("", "localhost")


# ------------------------------------------------------------------ the link leaking

def test_the_new_link_is_kept_by_no_cache_and_in_no_cookie(prof, site):
    """The page that shows a new link once must not be kept by the browser or a proxy
    (Cache-Control: no-store, as the personal tokens' page), nor carry it in the signed,
    readable session cookie or a header."""
    teacher, course_url = prof
    made = teacher.post(f"{course_url}/invitations", data={"role": "student", "days": "14",
                                                          "csrf_token": token(teacher, course_url)})
    link = re.search(r"http://localhost(/join/[A-Za-z0-9_-]+)", made.get_data(as_text=True)).group(1)
    assert all(secret(link) not in value for _name, value in made.headers.items())
    with teacher.session_transaction() as session:
        assert secret(link) not in repr(dict(session))
    assert made.headers.get("Cache-Control") == "no-store"


def test_a_mailed_link_is_in_no_cookie_header_cache_or_page_but_its_own(prof, site, ada, database_url, inbox):
    """A mailed link's token (a newcomer's, Bob's join, Bob's new password) is in no
    answer's header or cookie, no session, the asker's "check your mail" page, the course
    pages of the instructor, an admin or a student, nor the administrators' mail pages; its
    own page is kept by no cache."""
    teacher, course_url = prof
    link = make_link(teacher, course_url)
    asker = site.test_client()
    answers = [ask(asker, link), ask(asker, link, email="bob@example.org"), forgot(asker, "bob@example.org")]
    mailed = [inbox.link("grace@example.org"), inbox.link("bob@example.org", says="already has an account"),
              inbox.link("bob@example.org", says="new password")]
    tokens = [secret(m) for m in mailed]
    opener = site.test_client()
    own = [opener.get(m) for m in mailed]
    for shown in own:
        assert shown.status_code == 200 and shown.headers["Cache-Control"] == "no-store"
    own.append(follow(opener, mailed[0], password="x", password_again="y"))  # a 422: the first link's page again
    answers += own
    ines = signed_in(site, "ines@example.org")
    with db.transaction(database_url) as s:
        mail_ids = list(s.scalars(select(Mail.id)))
    for client, path in ((teacher, course_url), (ines, course_url), (ada, course_url), (ines, "/instructor/mail"),
                         *((ines, f"/instructor/mail/{i}") for i in mail_ids)):
        answers.append(client.get(path))
    assert len(answers) > 10 and all(a.status_code in (200, 422) for a in answers)
    for answer in answers:
        headers = "\n".join(f"{k}: {v}" for k, v in answer.headers.items())
        body = answer.get_data(as_text=True)
        mine = [t for t, shown in zip(tokens + tokens[:1], own) if answer is shown]
        for t in tokens:
            assert t not in headers and (t in mine or t not in body), (answer.request.path, t[:8])
    for client in (asker, opener, ines):
        with client.session_transaction() as session:
            assert all(t not in repr(dict(session)) for t in tokens)


def test_no_one_but_the_maker_sees_a_link_or_its_start(prof, site, ada, database_url):
    """After the one showing: the course page (the instructor's), a student's, a TA's, an
    admin's and another instructor's pages never hold the whole link; only the course's
    staff of rank instructor (and admins) see its first 8 characters."""
    teacher, course_url = prof
    link = make_link(teacher, course_url, role="ta")
    ta_link = make_link(teacher, course_url)
    with db.transaction(database_url) as s:
        users.create_user(s, email="tom@example.org", password=PASSWORD)
    tom = signed_in(site, "tom@example.org")
    assert tom.post(ta_link, data={"csrf_token": token(tom, ta_link)}).status_code == 303
    other_email, _other_url = second_course(database_url)
    ines = signed_in(site, "ines@example.org")
    for who, client, sees_prefix in (("prof", teacher, True), ("ines", ines, True), ("ada", ada, False),
                                     ("tom", tom, False), ("other", signed_in(site, other_email), False)):
        for path in (course_url, "/courses", "/exercises", f"{course_url}/gradebook", "/admin"):
            page = client.get(path).get_data(as_text=True)
            assert secret(link) not in page, (who, path)
            if not sees_prefix:
                assert secret(link)[:8] not in page, (who, path)


def test_the_join_pages_send_no_referer_with_the_link_to_other_sites(prof, site, database_url, inbox):
    """The join URL is the invitation, and a mailed link's URL opens an account: their
    pages, their refusals, the "check your mail" page and the course page a join leads to
    ask browsers to send no full URL to other origins, and load nothing from them."""
    teacher, course_url = prof
    link = make_link(teacher, course_url)
    revoked = make_link(teacher, course_url)
    teacher.post(f"{course_url}/invitations/{invitation(database_url, revoked).id}/revoke",
                 data={"csrf_token": token(teacher, course_url)})
    visitor = site.test_client()
    asked = ask(visitor, link)
    mailed = inbox.link("grace@example.org")
    safe = {"no-referrer", "same-origin", "strict-origin", "strict-origin-when-cross-origin"}
    for answer in (visitor.get(link), visitor.get(revoked), visitor.get("/join/" + "x" * 32),
                   ask(visitor, link, name="  "), asked, visitor.get(mailed),
                   follow(visitor, mailed, password="differs!!", password_again="differs??"),
                   visitor.get(mailed[:-1] + "A"), follow(visitor, mailed[:-1] + "A", **CHOSEN),
                   visitor.get("/password/forgot"), forgot(visitor, "grace@example.org"),
                   follow(visitor, mailed, **CHOSEN), visitor.get(course_url),
                   signed_in(site, "ada@example.org").get(link)):
        assert answer.headers.get("Referrer-Policy") in safe, answer.headers.get("Referrer-Policy")
        page = answer.get_data(as_text=True)
        outside = [u for u in re.findall(r'(?:src|href|action)="([^"]*)"', page)
                   if re.match(r"(?i)^(https?:)?//", u) and not u.startswith("http://localhost/")]
        assert outside == [], outside


def test_the_apps_log_lines_never_hold_a_whole_link(prof, site, ada, database_url, inbox, caplog):
    """Every step of a link's life (made, opened, joined, answered with an address, its
    mail queued and sent, the mailed link opened, refused, used, used again, refused,
    revoked, its sign-in bounce) and of a new password's link, logged at DEBUG: no whole
    token is in any record."""
    caplog.set_level(logging.DEBUG)
    teacher, course_url = prof
    link = make_link(teacher, course_url, max_uses="3")
    visitor = site.test_client()
    visitor.get(link)
    ask(visitor, link, email="not-an-address")
    ask(visitor, link, name=" ")
    ask(visitor, link)
    ask(visitor, link, email="bob@example.org")
    forgot(visitor, "ines@example.org")
    mailed = [inbox.link("grace@example.org"), inbox.link("bob@example.org"), inbox.link("ines@example.org")]
    for one in mailed:
        visitor.get(one)
        follow(visitor, one, password="differs!!", password_again="differs??")
        follow(visitor, one, **CHOSEN)
        follow(site.test_client(), one, **CHOSEN)  # used: 410
    ada.post(link, data={"csrf_token": token(ada, link)})
    site.test_client().post(link, data={})  # signed out: bounced to the sign-in, and a CSRF refusal
    with db.transaction(database_url) as s:
        users.create_user(s, email="carl@example.org", password=PASSWORD)
    carl = signed_in(site, "carl@example.org")
    carl.post(link, data={"csrf_token": token(carl, link)})  # the last place
    carl.post(link, data={"csrf_token": token(carl, "/exercises")})
    site.test_client().get(link)  # 410
    teacher.post(f"{course_url}/invitations/{invitation(database_url, link).id}/revoke",
                 data={"csrf_token": token(teacher, course_url)})
    site.test_client().get(link[:-1])  # 404
    records = "\n".join(f"{r.name} {r.getMessage()} {r.exc_text or ''}" for r in caplog.records
                        if not r.name.startswith("mail.log"))  # the tests' SMTP server (aiosmtpd), not the service
    for whole in [link] + mailed:
        assert secret(whole) not in records and secret(whole)[8:] not in records, whole[:20]


def test_access_log_lines_naming_a_link_anywhere_are_masked(prof, site, inbox):
    """Werkzeug's access logger, as the app configures it: an invitation link or a mailed
    link in the path, in the `next` of the sign-in link and of a signed-out Join's bounce
    (as the app writes them), and in the Referer is masked."""
    teacher, course_url = prof
    link = make_link(teacher, course_url)
    page = site.test_client().get(link).get_data(as_text=True)
    sign_in_href = re.search(r'href="(/login\?next=[^"]*)"', page).group(1).replace("&amp;", "&")
    bounce = site.test_client().post(link, data={}).location  # a signed-out Join's way to the sign-in
    assert ask(site.test_client(), link).status_code == 200
    mailed = inbox.link("grace@example.org")
    lines = [f'"GET {link} HTTP/1.1" 200 -', f'"POST {link}/account HTTP/1.1" 200 -',
             f'"GET {sign_in_href} HTTP/1.1" 200 -', f'"GET {bounce} HTTP/1.1" 200 -',
             f'"GET /static/site.css HTTP/1.1" 200 - "http://localhost{link}"',
             f'"GET {mailed} HTTP/1.1" 200 -', f'"POST {mailed}?next=/ HTTP/1.1" 303 -',
             f'"GET /static/site.css HTTP/1.1" 200 - "https://grader.example.edu{mailed}"',
             f'"GET /courses/1 HTTP/1.1" 200 - "https://grader.example.edu{mailed}" "Mozilla/5.0"']
    logger = logging.getLogger("werkzeug")
    seen: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record):
            seen.append(record.getMessage())

    keep = Keep()
    logger.addHandler(keep)
    try:
        for line in lines:
            logger.warning("%s", line)  # werkzeug logs at INFO; WARNING passes whatever the level
    finally:
        logger.removeHandler(keep)
    assert len(seen) == len(lines)
    for line in seen:
        assert secret(link) not in line and secret(mailed) not in line, line
        assert secret(mailed)[8:] not in line and secret(link)[8:] not in line, line


def test_an_internal_error_on_a_join_url_leaks_the_link_nowhere(prof, database_url, redis, inbox, monkeypatch,
                                                                caplog):
    """The database fails while a join page is drawn, an address is sent, or a mailed
    link's page is drawn or its form sent (a 500): the error log line (Flask's "Exception
    on <path> [GET]", in the default text log format) must not hold the whole link."""
    from grader.app import create_app
    from sqlalchemy.exc import OperationalError

    caplog.set_level(logging.DEBUG)
    teacher, course_url = prof
    link = make_link(teacher, course_url)
    app = create_app({"TESTING": False, "PROPAGATE_EXCEPTIONS": False, "DATABASE_URL": database_url})
    visitor = app.test_client()
    assert ask(visitor, link).status_code == 200
    mailed = inbox.link("grace@example.org")
    visitor_csrf = csrf(visitor)

    def broken(*_args, **_kwargs):
        raise OperationalError("SELECT ...", {}, Exception("server closed the connection unexpectedly"))

    monkeypatch.setattr(invitations, "find", broken)
    monkeypatch.setattr(account_links, "find", broken)
    for answer in (visitor.get(link), visitor.post(f"{link}/account", data={**NEWCOMER, "csrf_token": visitor_csrf}),
                   visitor.get(mailed), visitor.post(mailed, data={**CHOSEN, "csrf_token": visitor_csrf})):
        assert answer.status_code == 500
        assert "Traceback" not in answer.get_data(as_text=True)
    records = "\n".join(f"{r.name} {r.getMessage()} {r.exc_text or ''}" for r in caplog.records
                        if not r.name.startswith("mail.log"))  # the tests' SMTP server (aiosmtpd), not the service
    for whole in (link, mailed):
        assert secret(whole) not in records, [r.getMessage() for r in caplog.records if secret(whole) in r.getMessage()]


# ------------------------------------------------------------------ guessing, odd tokens

def test_a_token_near_the_real_one_opens_nothing_and_looks_like_any_unknown_one(prof, site, database_url):
    """Enumeration: the real token's first 8 characters (what the instructor's list
    shows), all but its last, one more, another case, padding: each refused exactly like a
    random token (same status, same page), so no answer tells how close a guess came."""
    teacher, course_url = prof
    link = make_link(teacher, course_url)
    real = secret(link)
    visitor = site.test_client()
    baseline = visitor.get("/join/" + "A" * len(real))
    assert baseline.status_code == 404
    said = ALERT.findall(baseline.get_data(as_text=True))
    assert said
    for guess in (real[:8], real[:-1], real + "A", real.swapcase(), real + "=", real + "%3D", f" {real}",
                  f"{real}%00", real[:8] + "A" * (len(real) - 8)):
        answer = visitor.get(f"/join/{guess}")
        assert answer.status_code == 404, guess
        assert ALERT.findall(answer.get_data(as_text=True)) == said, guess
        assert "Deep learning" not in answer.get_data(as_text=True)
    with db.transaction(database_url) as s:  # the database holds no usable form of it
        stored = s.scalar(select(Invitation))
        assert real not in (stored.token_hash, stored.prefix) and len(stored.prefix) <= 8


ODD_PATHS = [
    "/join/" + "a" * 101, "/join/" + "a" * 10_000, "/join/%00", "/join/%ff%fe", "/join/%c0%af", "/join/..%2F..%2Fadmin",
    "/join/%EF%BF%BD" * 3, "/join/" + "\u00fc" * 60, "/join/%3Cscript%3Ealert(1)%3C%2Fscript%3E",
    "/join/%0d%0aSet-Cookie:%20x=1", "/join/%ED%A0%80", "/join/" + "%F0%9F%98%80" * 30, "/join/%20",
    "/join/'%20OR%201=1--", "/join/%25s%25s%25n"]


def test_odd_and_huge_tokens_are_unknown_links_never_errors(prof, site, database_url):
    """Odd characters, encoded NULs, lone surrogates, invalid UTF-8, SQL and format
    strings, a 10,000-character token: every join route answers 404 (or 405), never a 500,
    makes nothing and reflects nothing as markup."""
    teacher, course_url = prof
    make_link(teacher, course_url)
    before = accounts(database_url)
    bob = signed_in(site, "bob@example.org")
    bob_csrf = token(bob, "/exercises")
    # One course and link for every path (the 15 tries stay far below the sign-up limit);
    # a fresh visitor for each, and nothing made is checked after each.
    for path in ODD_PATHS:
        visitor = site.test_client()
        csrf = token(visitor, "/login")
        for answer in (visitor.get(path), visitor.post(f"{path}/account", data={**NEWCOMER, "csrf_token": csrf}),
                       bob.post(path, data={"csrf_token": bob_csrf})):
            assert answer.status_code in (404, 405), (path[:60], answer.status_code)
            text = answer.get_data(as_text=True)
            assert "<script>alert(1)" not in text and "Set-Cookie: x=1" not in str(answer.headers), path[:60]
        assert accounts(database_url) == before, path[:60]
        assert role_of(database_url, "bob@example.org", course_url) is None, path[:60]


# ------------------------------------------------------------------ LMS courses

def test_an_lms_course_takes_no_link_from_its_instructor_an_admin_or_the_command_line(prof, site, database_url,
                                                                                     monkeypatch):
    """An LMS course (platform_id set): its instructor's form, an admin's and `grader
    course invite` all refuse, and no link is stored."""
    from grader.cli import main

    teacher, _course_url = prof
    lms_url = lms_course(database_url, "prof@example.org")
    ines = signed_in(site, "ines@example.org")
    for client in (teacher, ines):
        refused = client.post(f"{lms_url}/invitations", data={"role": "student", "days": "3",
                                                              "csrf_token": token(client, lms_url)})
        assert refused.status_code == 422
    monkeypatch.setenv("GRADER_DATABASE_URL", database_url)
    ran = CliRunner().invoke(main, ["course", "invite", "--course", lms_url.rsplit("/", 1)[1]])
    assert ran.exit_code == 1 and "/join/" not in ran.output
    assert invitation_count(database_url) == 0


def test_the_command_line_makes_no_instructor_or_out_of_range_link(prof, database_url, monkeypatch):
    """`grader course invite` with --role instructor/admin, days or uses out of range, or a
    course id that is no course: refused, nothing printed that opens anything, no row."""
    from grader.cli import main

    _teacher, course_url = prof
    monkeypatch.setenv("GRADER_DATABASE_URL", database_url)
    cid = course_url.rsplit("/", 1)[1]
    for args in (["--role", "instructor"], ["--role", "admin"], ["--days", "0"], ["--days", "181"],
                 ["--days", "-3"], ["--uses", "0"], ["--uses", "-1"], ["--uses", "10001"]):
        ran = CliRunner().invoke(main, ["course", "invite", "--course", cid, *args])
        assert ran.exit_code != 0 and "/join/" not in ran.output, (args, ran.output)
    for bad in ("0", "-1", "2147483648", "99999999999999999999"):
        ran = CliRunner().invoke(main, ["course", "invite", "--course", bad])
        assert ran.exit_code != 0 and "/join/" not in ran.output and "Traceback" not in ran.output, (bad, ran.output)
    assert invitation_count(database_url) == 0


# ------------------------------------------------------------------ huge inputs, the sign-up limit

@pytest.mark.parametrize("field,value", [
    ("name", "N" * 10_000),
    ("name", "N" * 201),
    ("email", "x@example.org" + "o" * 10_000),
    ("email", "a" * 400 + "@example.org"),
    ("password", "p" * (1 << 20)),
    ("password", "p" * 1001),
    ("name", "Grace\x00Hopper"),
    ("email", "grace\x00@example.org"),
    ("email", "grace@example.org\r\nBcc: mallory@evil.example"),
])
def test_huge_or_broken_sign_up_fields_are_refused_and_store_nothing(prof, site, database_url, inbox, field, value):
    """A 10k-character name or address, a 1 MB password, a NUL, a header smuggled in: a
    clear 4xx (422, or 413 for a body too large), never a 500, never an account (not a
    silently shortened one), never a mail for a broken address or name; a password refused
    on the mailed link's page spends nothing of it."""
    teacher, course_url = prof
    link = make_link(teacher, course_url)
    visitor = site.test_client()
    before = accounts(database_url)
    if field == "password":
        assert ask(visitor, link).status_code == 200
        mailed = inbox.link("grace@example.org")
        answer = follow(visitor, mailed, password=value, password_again=value)
    else:
        answer = ask(visitor, link, **{field: value})
    assert 400 <= answer.status_code < 500, answer.status_code
    assert accounts(database_url) == before
    assert value not in answer.get_data(as_text=True) or field != "password"
    assert invitation(database_url, link).uses == 0
    if field == "password":
        assert follow(visitor, mailed, **CHOSEN).status_code == 303  # the link still works
    else:
        assert inbox.recipients() == set()


def test_an_invisible_name_is_refused_like_a_blank_one(prof, site, database_url, inbox):
    """The address form refuses a blank name ("Give your name"); a name of zero-width or
    blank looking characters only (which str.split() does not count as space) must not be
    mailed nor make an account that shows on the course's member list as nobody."""
    teacher, course_url = prof
    link = make_link(teacher, course_url)
    before = accounts(database_url)
    # One link for every name: each refusal is checked to have made and mailed nothing.
    for name in ("\u200b", "\u200b\u200c\u2060", "\u2800", "\u3164", "\u202e", "\u3164 \u200b\ufeff"):
        answer = ask(site.test_client(), link, name=name)
        assert answer.status_code == 422, (ascii(name), answer.status_code)
        assert accounts(database_url) == before and inbox.recipients() == set(), ascii(name)


@pytest.mark.parametrize("name", ["이다", "محمد", "José Zoë", "李", "क्षि\u200d"])
def test_names_in_any_script_are_taken(prof, site, database_url, signup, name):
    teacher, course_url = prof
    before = accounts(database_url)
    answer = signup(site.test_client(), make_link(teacher, course_url), name=name)
    assert answer.status_code == 303, answer.status_code
    assert accounts(database_url) == before + 1
    assert user_row(database_url, "grace@example.org").name == name


def test_the_sign_up_limit_counts_refusals_and_is_not_reset_by_a_forged_address(prof, database_url, redis, inbox):
    """One client: refused asks count against the limit, another link or another
    X-Forwarded-For / X-Real-IP header does not reset it, the refusal mails nothing and is
    the same whatever the address; and the one mail that went still lets its owner in."""
    from grader.app import create_app

    teacher, course_url = prof
    two = [make_link(teacher, course_url), make_link(teacher, course_url)]
    strict = create_app({"TESTING": True, "DATABASE_URL": database_url, "SIGNUP_ADDRESS_LIMIT": "3 per hour"})
    visitor = strict.test_client()
    before = accounts(database_url)
    assert ask(visitor, two[0], email="bad").status_code == 422
    assert ask(visitor, two[1], name="  ").status_code == 422
    assert ask(visitor, two[0], email="ok1@example.org").status_code == 200
    refused = []
    for i, email in enumerate(("more0@example.org", "more1@example.org", "ada@example.org")):
        fresh = strict.test_client()  # a new browser each time, a forged client address each time
        refused.append(fresh.post(f"{two[i % 2]}/account", data={**NEWCOMER, "email": email,
                                                                  "csrf_token": token(fresh, two[i % 2])},
                                  headers={"X-Forwarded-For": f"203.0.113.{i}", "X-Real-IP": f"198.51.100.{i}"}))
    assert [r.status_code for r in refused] == [429, 429, 429]
    assert page_of(refused[0]) == page_of(refused[2])  # the same link: a new address, Ada's
    assert "Retry-After" in refused[0].headers
    assert accounts(database_url) == before
    assert inbox.recipients() == {"ok1@example.org"}
    assert follow(visitor, inbox.link("ok1@example.org"), **CHOSEN).status_code == 303
    assert accounts(database_url) == before + 1
