"""Mail: a real SMTP server (aiosmtpd on loopback) receives what the service sends, in
plain SMTP, through STARTTLS and with a sign-in; the outbox where no server is set; tries
recorded and retried; and the ways in that mail opens (a roster's welcome link, "forgot
your password?", an invitation answered with an address)."""

from __future__ import annotations

import re
import time
from datetime import timedelta

import pytest
from sqlalchemy import func, select

from grader import clock, db
from grader.accounts import users
from grader.accounts.models import AccountLink, ApiKey, User
from grader.mail import Mail, MailAttempt, transport
from tests.forms import sign_in, token
from tests.mailbox import Mailbox, deliver_queued, html_of, link_in, queued_mail, text_of
from tests.test_web import site  # noqa: F401  (a fixture)


def _message(**headers):
    from email.message import EmailMessage

    out = EmailMessage()
    out["From"], out["To"], out["Subject"] = "grader@example.edu", headers.get("to", "ann@example.org"), "hi"
    out.set_content("hello")
    return out


# ------------------------------------------------------------------ the transport

def test_plain_smtp_to_a_server_that_offers_no_starttls_is_sent(tmp_path):
    box = Mailbox(tmp_path).start()
    try:
        transport.send(transport.server_from(box.url), _message())
        [got] = box.received
        assert got.recipients == ["ann@example.org"] and not got.tls
    finally:
        box.stop()


def test_starttls_is_used_where_offered_and_the_sign_in_goes_over_it(tmp_path):
    box = Mailbox(tmp_path, starttls=True, login=("grader", "s3cret-pass")).start()
    try:
        transport.send(transport.server_from(box.url), _message())
        [got] = box.received
        assert got.tls and got.login == "grader"
    finally:
        box.stop()


def test_starttls_required_refuses_a_server_without_it_and_sends_nothing(tmp_path):
    box = Mailbox(tmp_path).start()
    try:
        with pytest.raises(transport.NotSent, match="offers no STARTTLS"):
            transport.send(transport.server_from(box.url + "?starttls=require"), _message())
        assert box.received == []
    finally:
        box.stop()


def test_an_untrusted_certificate_is_not_sent_to(tmp_path):
    box = Mailbox(tmp_path, starttls=True).start()
    try:
        untrusted = box.url.split("?")[0]
        with pytest.raises(transport.NotSent) as refused:
            transport.send(transport.server_from(untrusted), _message())
        assert not refused.value.lasting and box.received == []
    finally:
        box.stop()


def test_a_refused_address_is_refused_for_good_and_a_server_down_for_now(tmp_path):
    box = Mailbox(tmp_path, refuse={"gone@example.org"}).start()
    try:
        with pytest.raises(transport.NotSent) as refused:
            transport.send(transport.server_from(box.url), _message(to="gone@example.org"))
        assert refused.value.lasting
    finally:
        box.stop()
    with pytest.raises(transport.NotSent) as down:
        transport.send(transport.server_from(box.url), _message())
    assert not down.value.lasting


@pytest.mark.parametrize("url, says", [("http://host", "smtp://host"), ("smtp://", "smtp://host"),
                                       ("smtp://h?starttls=maybe", "'auto' or 'require'")])
def test_a_wrong_smtp_url_says_what_is_wrong_without_its_password(url, says):
    with pytest.raises(ValueError, match=re.escape(says)):
        transport.server_from(url)
    assert "hunter22" not in repr(transport.server_from("smtp://u:hunter22@host"))


def test_the_smtp_password_is_masked_in_logs(monkeypatch):
    from grader import logs

    monkeypatch.setenv("GRADER_SMTP_URL", "smtps://grader:a-long-smtp-secret@mail.example.edu")
    assert "a-long-smtp-secret" not in logs.mask("connecting with a-long-smtp-secret")


# ------------------------------------------------------------------ the task: sent, retried, recorded

def _queue(database_url, *, kind="reset", to="ann@example.org", link="https://grader.example.edu/account/link/x"):
    from grader import mail

    with db.transaction(database_url) as s:
        user = users.create_user(s, email=to, password=None, name="Ann") if kind == "reset" else None
        row = mail.send(s, kind=kind, to=to, user_id=user.id if user else None, link=link,
                        values={"name": "Ann", "email": to})
        return row.id


def test_a_mail_leaves_only_after_its_transaction_commits(database_url, redis):
    from grader import mail

    with pytest.raises(RuntimeError):
        with db.transaction(database_url) as s:
            mail.send(s, kind="reset", to="ann@example.org", values={"name": "Ann", "email": "ann@example.org"})
            assert queued_mail(redis) == []
            raise RuntimeError("the request failed after queuing a mail")
    assert queued_mail(redis) == []
    _queue(database_url)
    [[mail_id, link]] = queued_mail(redis)
    assert link.endswith("/account/link/x")


def test_the_link_travels_with_the_task_and_is_never_stored(database_url, redis, mailbox, deliver):
    mail_id = _queue(database_url, link="https://grader.example.edu/account/link/the-secret-token")
    with db.transaction(database_url) as s:
        row = s.get(Mail, mail_id)
        assert "the-secret-token" not in row.text + row.html and row.has_link
    assert deliver() == 1
    [got] = mailbox.to("ann@example.org")
    assert "https://grader.example.edu/account/link/the-secret-token" in text_of(got)
    assert 'href="https://grader.example.edu/account/link/the-secret-token"' in html_of(got)
    assert got["Auto-Submitted"] == "auto-generated"
    with db.transaction(database_url) as s:
        row = s.get(Mail, mail_id)
        assert (row.status, row.attempts) == ("sent", 1)
        assert "the-secret-token" not in row.text + row.html


def test_a_server_that_is_down_is_tried_again_and_every_try_recorded(database_url, redis, mailbox, monkeypatch):
    from grader.mail import tasks

    mailbox.stop()
    mail_id = _queue(database_url)
    [args] = queued_mail(redis)
    monkeypatch.setenv("GRADER_DATABASE_URL", database_url)
    retried = []
    monkeypatch.setattr(tasks.deliver, "retry", lambda countdown, **_: retried.append(countdown) or
                        RuntimeError("retry"))
    with pytest.raises(RuntimeError, match="retry"):
        tasks.deliver.run(*args)
    assert retried and retried[0] <= 30  # the first retry within half a minute
    mailbox.start()
    tasks.deliver.run(*args)
    with db.transaction(database_url) as s:
        tries = s.scalars(select(MailAttempt).where(MailAttempt.mail_id == mail_id).order_by(MailAttempt.id)).all()
        assert [t.ok for t in tries] == [False, True] and "ConnectionRefused" in tries[0].error
        assert s.get(Mail, mail_id).status == "sent"
    assert len(mailbox.received) == 1


def test_an_address_the_server_refuses_is_failed_for_good_not_retried(database_url, redis, mailbox, deliver):
    mailbox.refuse.add("gone@example.org")
    mail_id = _queue(database_url, to="gone@example.org")
    assert deliver() == 1
    with db.transaction(database_url) as s:
        row = s.get(Mail, mail_id)
        assert (row.status, row.attempts) == ("failed", 1) and "550" in row.last_error


def test_with_no_server_set_mail_goes_to_the_outbox(database_url, redis, tmp_path, monkeypatch):
    monkeypatch.delenv("GRADER_SMTP_URL", raising=False)
    monkeypatch.setenv("GRADER_INSTANCE_DIR", str(tmp_path / "inst"))
    mail_id = _queue(database_url, link="http://127.0.0.1:8000/account/link/abc")
    deliver_queued(redis, database_url, monkeypatch)
    [written] = (tmp_path / "inst" / "outbox").iterdir()
    assert "http://127.0.0.1:8000/account/link/abc" in written.read_text()
    assert written.stat().st_mode & 0o077 == 0
    with db.transaction(database_url) as s:
        assert s.get(Mail, mail_id).status == "outbox"


def test_one_address_gets_at_most_ten_mails_an_hour_that_others_can_ask_for(database_url, redis):
    from grader import mail

    with db.transaction(database_url) as s:
        sent = [mail.send(s, kind="reset", to="Ann@example.org", values={"name": "A", "email": "a"}).status
                for _ in range(12)]
    assert sent.count("queued") == mail.ACCESS_PER_ADDRESS_HOUR and sent[-1] == "dropped"
    assert len(queued_mail(redis)) == mail.ACCESS_PER_ADDRESS_HOUR


def _notice(s, email: str, exercise: str):
    from grader.accounts import notices

    user = s.scalar(select(User).where(User.email == email))
    return notices.notify(s, user, "graded", values={
        "exercise": exercise, "when": "today", "failed": False, "submission_url": f"https://x/{exercise}"})


def test_notices_over_the_hours_limit_wait_and_go_as_one_digest(site, database_url, mailbox, deliver, monkeypatch):
    from grader import mail
    from grader.mail.tasks import send_digests

    with db.transaction(database_url) as s:
        statuses = [_notice(s, "ada@example.org", f"exercise-{n}").status for n in range(13)]
    assert statuses.count("queued") == mail.PER_ADDRESS_HOUR and statuses[-3:] == ["held"] * 3
    assert send_digests(database_url) == 0  # the hour is full: they keep waiting
    assert deliver() == mail.PER_ADDRESS_HOUR

    monkeypatch.setenv("GRADER_NOW", (clock.now() + timedelta(minutes=61)).isoformat())
    assert send_digests(database_url) == 1 and send_digests(database_url) == 0  # sent once
    deliver()
    [digest] = [m for m in mailbox.to("ada@example.org") if "courses" in m["Subject"]]
    body = text_of(digest)
    assert all(f"exercise-{n}" in body for n in (10, 11, 12)) and "exercise-9" not in body
    assert "/account/mail" in body and "List-Unsubscribe" not in digest
    with db.transaction(database_url) as s:
        assert s.scalar(select(func.count(Mail.id)).where(Mail.status == "held")) == 0
        assert s.scalar(select(func.count(Mail.id)).where(Mail.status == "digested")) == 3


def test_mails_anyone_can_ask_for_use_none_of_a_students_notices(site, database_url, redis):
    """Join links asked for ada's address from a class link, over and over (from as many
    addresses as an outsider has), fill the budget of such mails, not the one her course
    news goes by."""
    from grader import mail

    with db.transaction(database_url) as s:
        asked = [mail.send(s, kind="join_existing", to="ada@example.org", link="https://x/account/link/t",
                           values={"name": "Ada", "email": "ada@example.org", "course": "DL101", "hours": 24}).status
                 for _ in range(mail.ACCESS_PER_ADDRESS_HOUR + 2)]
        assert asked[-1] == "dropped"
        assert _notice(s, "ada@example.org", "autograd-basics").status == "queued"


# ------------------------------------------------------------------ getting in: the roster's welcome

def _instructor_course(site, database_url):
    from grader import courses

    with db.transaction(database_url) as s:
        ines = s.scalar(select(User).where(User.email == "ines@example.org"))
        course = courses.create_course(s, title="Deep Learning", code="DL101", instructor=ines)
        return course.id


def test_a_roster_student_gets_a_welcome_link_sets_a_password_and_signs_in(site, database_url, mailbox, deliver):
    course_id = _instructor_course(site, database_url)
    teacher = site.test_client()
    sign_in(teacher, "ines@example.org")
    started = time.monotonic()
    answer = teacher.post(f"/courses/{course_id}/members", data={
        "csrf_token": token(teacher, f"/courses/{course_id}"),
        "roster_text": "email,name,role\nnew.student@example.org,New Student,student\n"})
    took = time.monotonic() - started
    assert answer.status_code == 200 and "mailed a link" in answer.get_data(as_text=True)
    assert deliver() == 1
    [welcome] = mailbox.to("new.student@example.org")
    assert "Deep Learning" in text_of(welcome) and "7 days" in text_of(welcome)
    link = link_in(welcome)
    assert text_of(welcome).split(link)[0].rstrip().endswith("https://grader.example.edu")
    student = site.test_client()
    page = student.get(link)
    assert page.status_code == 200 and page.headers["Cache-Control"] == "no-store"
    assert student.get(link).status_code == 200  # opening the page (a mail scanner) spends nothing
    mismatch = student.post(link, data={"csrf_token": token(student, link), "password": "a new password",
                                        "password_again": "another one"})
    assert mismatch.status_code == 422
    done = student.post(link, data={"csrf_token": token(student, link), "password": "a new password",
                                    "password_again": "a new password"})
    assert done.status_code == 303
    assert student.get("/courses").status_code == 200 and "Deep Learning" in student.get("/courses").get_data(True)
    again = site.test_client()
    assert again.get(link).status_code == 410  # once only
    assert sign_in(again, "new.student@example.org", "a new password").status_code == 302
    assert took < 5  # nothing of the mail's sending inside the request (a bound, not a timing claim)


def test_a_roster_line_naming_an_existing_account_makes_no_account_and_tells_it_it_was_added(
        site, database_url, mailbox, deliver):
    from grader import courses

    course_id = _instructor_course(site, database_url)
    with db.transaction(database_url) as s:
        result = courses.import_roster(s, courses.course_by_id(s, course_id),
                                       [{"email": "ADA@example.org", "role": "ta"}])
        assert result.new_accounts == []
    assert deliver() == 1
    [added] = mailbox.to("ada@example.org")
    assert "Deep Learning" in added["Subject"] and "as a teaching assistant" in text_of(added)
    assert "/account/link/" not in text_of(added)  # she has her password: no link into the account
    assert added["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"


def test_a_welcome_link_expires_after_seven_days_on_the_service_clock(site, database_url, mailbox, deliver,
                                                                      monkeypatch):
    with db.transaction(database_url) as s:
        users.welcome(s, users.create_user(s, email="late@example.org", password=None, name="Late"))
    deliver()
    link = link_in(mailbox.to("late@example.org")[0])
    monkeypatch.setenv("GRADER_NOW", (clock.now() + timedelta(days=7, minutes=1)).isoformat())
    client = site.test_client()
    assert client.get(link).status_code == 410


def test_create_user_with_mail_link_mails_a_welcome(database_url, redis, mailbox, deliver, monkeypatch):
    from click.testing import CliRunner

    from grader.cli import main

    monkeypatch.setenv("GRADER_DATABASE_URL", database_url)
    made = CliRunner().invoke(main, ["create-user", "--email", "ta@example.org", "--mail-link", "--language", "ko"])
    assert made.exit_code == 0, made.output
    deliver()
    [mail] = mailbox.to("ta@example.org")
    assert "비밀번호" in text_of(mail) and mail["Content-Language"] == "ko"


# ------------------------------------------------------------------ forgot your password?

def same_page(one, other) -> bool:
    """Two answers alike but for the session's form token (signed anew each time)."""
    strip = lambda answer: re.sub(r'name="csrf_token" value="[^"]+"', "", answer.get_data(as_text=True))
    return strip(one) == strip(other)


def _forgot(client, email: str):
    return client.post("/password/forgot", data={"csrf_token": token(client, "/password/forgot"), "email": email})


def test_forgot_password_answers_alike_and_mails_only_an_account(site, database_url, mailbox, deliver):
    client = site.test_client()
    assert 'href="/password/forgot"' in client.get("/login").get_data(as_text=True)
    known, unknown = _forgot(client, "ada@example.org"), _forgot(client, "nobody@example.org")
    assert known.status_code == unknown.status_code == 200
    assert same_page(known, unknown)
    assert deliver() == 1 and mailbox.to("nobody@example.org") == []
    [mail] = mailbox.to("ada@example.org")
    assert "one hour" in text_of(mail)


def test_a_reset_link_works_once_ends_other_sessions_and_tokens(site, database_url, mailbox, deliver):
    from grader.accounts import keys

    elsewhere = site.test_client()
    sign_in(elsewhere, "ada@example.org")
    with db.transaction(database_url) as s:
        ada = s.scalar(select(User).where(User.email == "ada@example.org"))
        keys.personal(s, ada.id, "laptop")
    client = site.test_client()
    _forgot(client, "ada@example.org")
    deliver()
    link = link_in(mailbox.to("ada@example.org")[0])
    set_it = client.post(link, data={"csrf_token": token(client, link), "password": "brand new pass",
                                     "password_again": "brand new pass"})
    assert set_it.status_code == 303
    assert elsewhere.get("/submissions").status_code in (302, 401)  # the other session is over
    with db.transaction(database_url) as s:
        assert all(k.revoked_at is not None for k in s.scalars(select(ApiKey).where(ApiKey.user_id == ada.id)))
    again = site.test_client()
    assert again.post(link, data={"csrf_token": token(again, "/login"), "password": "third password",
                                  "password_again": "third password"}).status_code == 410
    assert sign_in(again, "ada@example.org", "brand new pass").status_code == 302


def test_a_reset_link_is_dead_after_its_hour(site, database_url, mailbox, deliver, monkeypatch):
    _forgot(site.test_client(), "ada@example.org")
    deliver()
    link = link_in(mailbox.to("ada@example.org")[0])
    monkeypatch.setenv("GRADER_NOW", (clock.now() + timedelta(minutes=61)).isoformat())
    client = site.test_client()
    assert client.get(link).status_code == 410
    assert client.post(link, data={"csrf_token": token(client, "/login"), "password": "brand new pass",
                                   "password_again": "brand new pass"}).status_code == 410


def test_forgot_password_is_limited_per_address_asked_about(site, database_url, mailbox, deliver):
    client = site.test_client()
    answers = [_forgot(client, "ada@example.org").status_code for _ in range(5)]
    assert answers[:3] == [200, 200, 200] and answers[3] == 429
    assert deliver() == 3


def test_korean_readers_get_korean_mail(site, database_url, mailbox, deliver):
    client = site.test_client()
    client.post("/language", data={"csrf_token": token(client, "/login"), "lang": "ko", "next": "/login"})
    _forgot(client, "bob@example.org")
    deliver()
    [mail] = mailbox.to("bob@example.org")
    assert mail["Content-Language"] == "ko" and "비밀번호" in mail["Subject"] + text_of(mail)


def test_an_lms_user_gets_no_reset_mail(site, database_url, mailbox, deliver):
    with db.transaction(database_url) as s:
        s.add(User(email="lms@example.org", name="L", external_id="lti:1|abc"))
    _forgot(site.test_client(), "lms@example.org")
    assert deliver() == 0


def test_link_tokens_are_stored_as_hashes_only(site, database_url, mailbox, deliver):
    _forgot(site.test_client(), "ada@example.org")
    deliver()
    secret = link_in(mailbox.to("ada@example.org")[0]).rsplit("/", 1)[1]
    with db.transaction(database_url) as s:
        stored = [(r.token_hash, str(r.data)) for r in s.scalars(select(AccountLink))]
        mails = [m.text + m.html for m in s.scalars(select(Mail))]
    assert stored and all(secret not in h + d for h, d in stored)
    assert all(secret not in m for m in mails)


def test_the_mail_page_is_for_administrators_and_shows_no_link(site, database_url, mailbox, deliver):
    _forgot(site.test_client(), "ada@example.org")
    deliver()
    secret = link_in(mailbox.to("ada@example.org")[0]).rsplit("/", 1)[1]
    student = site.test_client()
    sign_in(student, "bob@example.org")
    assert student.get("/instructor/mail").status_code == 403
    admin = site.test_client()
    sign_in(admin, "ines@example.org")
    listed = admin.get("/instructor/mail").get_data(as_text=True)
    assert "ada@example.org" in listed
    with db.transaction(database_url) as s:
        mail_id = s.scalar(select(Mail.id))
    one = admin.get(f"/instructor/mail/{mail_id}").get_data(as_text=True)
    assert "sent in the mail only" in one and secret not in one + listed


# ------------------------------------------------------------------ notices, and switching them off

def _assignment(database_url, *, due_in: timedelta, title="Gradients", attempts=None):
    from grader import courses

    with db.transaction(database_url) as s:
        ines = s.scalar(select(User).where(User.email == "ines@example.org"))
        course = courses.create_course(s, title="Deep Learning", code="DL101", instructor=ines)
        for email in ("ada@example.org", "bob@example.org"):
            courses.set_role(s, course.id, s.scalar(select(User.id).where(User.email == email)), "student")
        assignment = courses.create_assignment(s, course, exercise="autograd-basics", title=title,
                                               due_at=(clock.now() + due_in).isoformat(), attempts=attempts)
        return course.id, assignment.id


def _graded(database_url, email: str, *, assignment_id=None, took: timedelta, status="graded", score=6.0):
    from grader import submissions

    with db.transaction(database_url) as s:
        user = s.scalar(select(User).where(User.email == email))
        row = submissions.create(s, user=user, exercise_slug="autograd-basics", source="x = 1\n",
                                 assignment_id=assignment_id)
        row.status, row.score, row.max_score = status, score if status == "graded" else None, 6.0
        row.created_at = clock.now() - took
        row.finished_at = clock.now()
        return row.id


def test_a_slow_or_failed_grade_is_mailed_and_a_quick_one_is_not(site, database_url, mailbox, deliver):
    from grader.submissions.notify import after_grade

    quick = _graded(database_url, "ada@example.org", took=timedelta(seconds=1))
    slow = _graded(database_url, "ada@example.org", took=timedelta(minutes=5))
    broken = _graded(database_url, "bob@example.org", took=timedelta(seconds=1), status="failed")
    for submission_id in (quick, slow, broken, slow):  # the slow one told twice: mailed once
        after_grade(submission_id, database_url)
    assert deliver() == 2
    [to_ada] = mailbox.to("ada@example.org")
    assert "is graded" in to_ada["Subject"] and f"https://grader.example.edu/submissions/{slow}" in text_of(to_ada)
    assert "x = 1" not in text_of(to_ada) + html_of(to_ada)  # never the source
    [to_bob] = mailbox.to("bob@example.org")
    assert "could not be graded" in to_bob["Subject"]


def test_a_held_result_is_in_no_mail(site, database_url, mailbox, deliver):
    """A regrade that changed a held score says only that it changed, and when it shows."""
    from grader.courses import notices
    from grader.courses.models import Assignment
    from grader.courses.regrades import StudentChange
    from grader.courses.rules import Counted

    _course_id, assignment_id = _assignment(database_url, due_in=timedelta(days=2))
    with db.transaction(database_url) as s:
        assignment = s.get(Assignment, assignment_id)
        assignment.feedback = "after_due"
        ada = s.scalar(select(User).where(User.email == "ada@example.org"))
        notices.regraded(s, assignment, [StudentChange(ada, Counted(3.0, 6.0), Counted(5.0, 6.0))])
    deliver()
    [mail] = mailbox.to("ada@example.org")
    body = text_of(mail) + html_of(mail)
    assert "regraded" in mail["Subject"] and "5 / 6" not in body and "3 / 6" not in body
    assert "show after" in body


def test_a_regrade_that_changed_a_released_score_says_before_and_after(site, database_url, mailbox, deliver):
    from grader.courses import notices
    from grader.courses.models import Assignment
    from grader.courses.regrades import StudentChange
    from grader.courses.rules import Counted

    _course_id, assignment_id = _assignment(database_url, due_in=timedelta(days=2))
    with db.transaction(database_url) as s:
        ada = s.scalar(select(User).where(User.email == "ada@example.org"))
        bob = s.scalar(select(User).where(User.email == "bob@example.org"))
        notices.regraded(s, s.get(Assignment, assignment_id), [
            StudentChange(ada, Counted(3.0, 6.0), Counted(5.0, 6.0)),
            StudentChange(bob, Counted(6.0, 6.0), Counted(6.0, 6.0))])  # unchanged: no mail
    assert deliver() == 1
    assert "now 5 / 6 (it was 3 / 6)" in text_of(mailbox.to("ada@example.org")[0])


def test_an_extension_is_told_with_its_new_due_date(site, database_url, mailbox, deliver):
    from grader import courses
    from grader.courses.models import Assignment
    from grader.submissions.notify import after_standing_change

    course_id, assignment_id = _assignment(database_url, due_in=timedelta(days=2))
    with db.transaction(database_url) as s:
        ada = s.scalar(select(User).where(User.email == "ada@example.org"))
        courses.grant_extension(s, s.get(Assignment, assignment_id), ada, due_at=(clock.now() + timedelta(days=5))
                                .isoformat(), reason="ill", by="ines")
    after_standing_change(assignment_id, ada.id, clock.now().isoformat(), database_url)
    assert deliver() == 1
    [mail] = mailbox.to("ada@example.org")
    assert "extension" in text_of(mail) and "due at" in text_of(mail)


def test_a_due_date_reminder_goes_once_to_students_with_attempts_left_in_one_mail(site, database_url, mailbox,
                                                                                 deliver):
    from grader import courses
    from grader.courses import notices

    _c, first = _assignment(database_url, due_in=timedelta(hours=10), title="First")
    with db.transaction(database_url) as s:
        course = courses.course_by_id(s, _c)
        second = courses.create_assignment(s, course, exercise="autograd-basics", title="Second",
                                           due_at=(clock.now() + timedelta(hours=20)).isoformat()).id
        courses.create_assignment(s, course, exercise="autograd-basics", title="Later",
                                  due_at=(clock.now() + timedelta(days=3)).isoformat())
    _graded(database_url, "bob@example.org", assignment_id=first, took=timedelta(seconds=1), score=6.0)
    _graded(database_url, "bob@example.org", assignment_id=second, took=timedelta(seconds=1), score=6.0)
    with db.transaction(database_url) as s:
        assert notices.remind_due(s) == 1  # Ada: both due; Bob has full marks on both
    with db.transaction(database_url) as s:
        assert notices.remind_due(s) == 0  # once
    deliver()
    [mail] = mailbox.to("ada@example.org")
    assert "2 assignments are due within a day" == mail["Subject"]
    assert "First" in text_of(mail) and "Second" in text_of(mail) and "Later" not in text_of(mail)
    assert mailbox.to("bob@example.org") == []


def test_an_unsubscribe_link_works_signed_out_and_stops_that_kind_only(site, database_url, mailbox, deliver):
    from grader.courses import notices

    from grader.submissions.notify import after_grade

    _assignment(database_url, due_in=timedelta(hours=10))
    with db.transaction(database_url) as s:
        notices.remind_due(s)
    deliver()
    [reminder] = mailbox.to("ada@example.org")
    stop = "".join(reminder["List-Unsubscribe"].split()).strip("<>")
    assert stop in text_of(reminder) and stop.startswith("https://grader.example.edu/mail/stop/")
    path = stop.removeprefix("https://grader.example.edu")
    visitor = site.test_client()  # signed out
    asked = visitor.get(path)
    assert asked.status_code == 200 and "Stop these mails" in asked.get_data(as_text=True)
    with db.transaction(database_url) as s:  # opening the page (a mail scanner) changed nothing
        assert s.scalar(select(User.mail_off).where(User.email == "ada@example.org")) == []
    # a mail program's one-click POST (RFC 8058): no session, no form token
    assert visitor.post(path, data={"List-Unsubscribe": "One-Click"}).status_code == 200
    with db.transaction(database_url) as s:
        assert s.scalar(select(User.mail_off).where(User.email == "ada@example.org")) == ["due_soon"]
    forged = path.rsplit("/", 1)[0] + "/not-the-key"
    assert visitor.post(forged).status_code == 404
    assert visitor.post(path.replace("/due_soon/", "/graded/").rsplit("/", 1)[0] + "/x").status_code == 404
    slow = _graded(database_url, "ada@example.org", took=timedelta(minutes=5))
    after_grade(slow, database_url)
    assert deliver() == 1  # a grade notice still comes: only reminders stopped


def test_the_mail_page_switches_notices_off_and_on(site, database_url, mailbox, deliver):
    from grader.accounts import notices
    from grader.submissions.notify import after_grade

    ada = site.test_client()
    sign_in(ada, "ada@example.org")
    page = ada.get("/account/mail").get_data(as_text=True)
    kinds = len(notices.KINDS)  # one box for each kind of notice, all on at first
    assert kinds == 6 and page.count('type="checkbox"') == kinds and page.count("checked") == kinds
    saved = ada.post("/account/mail", data={"csrf_token": token(ada, "/account/mail"), "on": ["added", "due_soon"]})
    assert saved.status_code == 200 and saved.get_data(as_text=True).count("checked") == 2
    after_grade(_graded(database_url, "ada@example.org", took=timedelta(minutes=5)), database_url)
    assert deliver() == 0
    assert ada.post("/account/mail", data={"csrf_token": token(ada, "/account/mail"), "on": ["graded"]}).status_code == 200
    after_grade(_graded(database_url, "ada@example.org", took=timedelta(minutes=5)), database_url)
    assert deliver() == 1


def test_an_administrator_makes_an_account_whose_owner_gets_in_by_the_welcome_link(site, database_url, mailbox,
                                                                                   deliver):
    student = site.test_client()
    sign_in(student, "bob@example.org")
    assert student.get("/instructor/people").status_code == 403
    admin = site.test_client()
    sign_in(admin, "ines@example.org")
    made = admin.post("/instructor/people", data={"csrf_token": token(admin, "/instructor/people"),
                                                  "email": "New.TA@example.org", "name": "New TA",
                                                  "role": "instructor"})
    assert made.status_code == 201 and "new.ta@example.org was made" in made.get_data(as_text=True)
    assert "not chosen yet" in made.get_data(as_text=True)
    again = admin.post("/instructor/people", data={"csrf_token": token(admin, "/instructor/people"),
                                                   "email": "ada@example.org", "name": "Ada"})
    assert again.status_code == 409 and "already an account" in again.get_data(as_text=True)
    assert deliver() == 1
    link = link_in(mailbox.to("new.ta@example.org")[0])
    owner = site.test_client()
    assert owner.post(link, data={"csrf_token": token(owner, link), "password": "teaching now",
                                  "password_again": "teaching now"}).status_code == 303
    with db.transaction(database_url) as s:
        assert s.scalar(select(User.role).where(User.email == "new.ta@example.org")) == "instructor"
