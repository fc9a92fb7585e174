"""Staff comment on a student's submission, on the page and through the API, on a real
database (SQLite and PostgreSQL) and Redis: an overall comment above the report and line
comments beside their lines, shown to the student only once the assignment releases the
feedback (the service's clock is moved with GRADER_NOW), escaped, and mailed to the student
then; their authors take them back."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import func, select

from grader import courses, db
from grader.accounts import keys, users
from grader.accounts.models import User
from grader.courses import comments
from grader.courses.models import SubmissionComment
from grader.submissions.models import Submission
from tests.forms import PASSWORD, csrf_in, sign_in
from tests.mailbox import html_of, text_of
from tests.test_api import make_key  # noqa: F401  (a fixture: make_key(*scopes) -> a key)
from tests.test_web import GOOD, site, store_grade  # noqa: F401  (site is a fixture)

DUE = datetime(2026, 12, 10, 14, 59, tzinfo=timezone.utc)  # 23:59 in Seoul
BEFORE, AFTER = DUE - timedelta(days=1), DUE + timedelta(minutes=1)
SCRIPT = "<script>alert('x')</script> & <b>bold</b>"


def at(monkeypatch, moment: datetime) -> None:
    monkeypatch.setenv("GRADER_NOW", moment.isoformat())


def bearer(key: str) -> dict:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture
def course(site, database_url, monkeypatch):
    """DL101 in Seoul: Ada its student, Tess its TA, Ivy its instructor; Ada submitted GOOD to
    its assignment, which holds the feedback until the due date, and it was graded."""
    at(monkeypatch, BEFORE - timedelta(hours=1))
    with db.transaction(database_url) as s:
        for name, email in (("Tess", "tess@uni.edu"), ("Ivy", "ivy@uni.edu")):
            users.create_user(s, email=email, password=PASSWORD, role="instructor", name=name)
        s.flush()
        user = {e: s.scalar(select(User).where(User.email == e)) for e in ("ada@example.org", "tess@uni.edu",
                                                                           "ivy@uni.edu")}
        course = courses.create_course(s, title="Deep learning", code="DL101", time_zone="Asia/Seoul")
        for email, role in (("ada@example.org", "student"), ("tess@uni.edu", "ta"), ("ivy@uni.edu", "instructor")):
            courses.set_role(s, course.id, user[email].id, role)
        assignment = courses.create_assignment(s, course, exercise="autograd-basics", due_at=DUE.isoformat(),
                                               feedback="after_due")
        tokens = {email: keys.create(s, keys.PERSONAL_SCOPES, name="laptop", user_id=u.id)[1]
                  for email, u in user.items()}
        assignment_id = assignment.id
    clients = {}
    for email in ("ada@example.org", "tess@uni.edu", "ivy@uni.edu"):
        clients[email] = site.test_client()
        assert sign_in(clients[email], email).status_code == 302
    ada = clients["ada@example.org"]
    page = f"/assignments/{assignment_id}"
    made = ada.post(f"{page}/submissions", data={"source": GOOD, "csrf_token": csrf_in(ada.get(page).text)})
    assert made.status_code == 303, made.get_data(as_text=True)
    submission_id = made.headers["Location"].rsplit("/", 1)[1]
    store_grade(database_url, submission_id, GOOD)
    return {"submission": submission_id, "clients": clients, "tokens": tokens, "assignment": assignment_id}


def comment_on_page(client, submission_id: str, body: str, line: int | str | None = None):
    path = f"/submissions/{submission_id}"
    data = {"body": body, "csrf_token": csrf_in(client.get(path).get_data(as_text=True))}
    if line is not None:
        data["line"] = str(line)
    return client.post(f"{path}/comments", data=data)


def stored(database_url) -> list[tuple]:
    with db.transaction(database_url) as s:
        return [(c.line, c.body, c.author_name) for c in s.scalars(select(SubmissionComment)
                                                                    .order_by(SubmissionComment.id))]


def test_staff_comment_on_the_page_and_the_student_sees_them_beside_the_code_once_released(
        course, database_url, monkeypatch):
    submission_id, clients = course["submission"], course["clients"]
    tess, ada = clients["tess@uni.edu"], clients["ada@example.org"]
    staff_page = tess.get(f"/submissions/{submission_id}").get_data(as_text=True)
    assert 'name="line"' in staff_page and 'id="comment-overall"' in staff_page  # the two forms
    overall = comment_on_page(tess, submission_id, "Clear and correct.\nMind the names.")
    assert overall.status_code == 303
    on_line = comment_on_page(tess, submission_id, "Why twice here?", line=2)
    assert on_line.status_code == 303 and on_line.headers["Location"].endswith("#L2")
    assert stored(database_url) == [(None, "Clear and correct.\nMind the names.", "Tess"), (2, "Why twice here?",
                                                                                          "Tess")]

    held = ada.get(f"/submissions/{submission_id}").get_data(as_text=True)
    assert "Clear and correct." not in held and "Why twice here?" not in held and "comment-overall" not in held

    at(monkeypatch, AFTER)
    released = ada.get(f"/submissions/{submission_id}").get_data(as_text=True)
    report = released.index('id="report"') if 'id="report"' in released else released.index("Submitted code")
    assert released.index("Clear and correct.") < report  # the overall comment above the report
    line_two = re.search(r'<span class="line" id="L2">.*?</span></span>(.*?)<span class="line" id="L3">', released,
                         re.S)
    assert line_two and "Why twice here?" in line_two.group(1) and "Tess" in line_two.group(1)
    assert 'id="comment-overall"' not in released  # no forms for the student


def test_a_line_outside_the_source_or_an_empty_comment_is_refused_and_nothing_is_stored(course, database_url):
    submission_id, tess = course["submission"], course["clients"]["tess@uni.edu"]
    lines = comments.source_lines(GOOD)
    refused = comment_on_page(tess, submission_id, "Off the end", line=lines + 1)
    assert refused.status_code == 422
    text = refused.get_data(as_text=True)
    assert f"There is no line {lines + 1} in the submitted code: its lines are 1 to {lines}." in text
    assert "Off the end" in text  # what was typed is still there
    assert comment_on_page(tess, submission_id, "   ").status_code == 422
    assert comment_on_page(tess, submission_id, "x" * (comments.MAX_BODY + 1)).status_code == 422
    assert comment_on_page(tess, submission_id, "zero", line=0).status_code == 422
    assert stored(database_url) == []


def test_a_comment_with_html_or_script_is_shown_escaped(course, database_url, monkeypatch):
    submission_id, clients = course["submission"], course["clients"]
    comment_on_page(clients["ivy@uni.edu"], submission_id, SCRIPT)
    comment_on_page(clients["ivy@uni.edu"], submission_id, SCRIPT + "\u202e", line=1)
    at(monkeypatch, AFTER)
    page = clients["ada@example.org"].get(f"/submissions/{submission_id}").get_data(as_text=True)
    assert "<script>alert" not in page and "<b>bold</b>" not in page
    assert page.count("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &lt;b&gt;bold&lt;/b&gt;") >= 2
    assert "\u202e" not in page and "\\u202e" in page  # a bidi override shown as its escape


def test_staff_delete_their_own_comments_and_no_one_elses(course, database_url):
    submission_id, clients = course["submission"], course["clients"]
    tess, ivy = clients["tess@uni.edu"], clients["ivy@uni.edu"]
    comment_on_page(tess, submission_id, "Tess's")
    with db.transaction(database_url) as s:
        comment_id = s.scalar(select(SubmissionComment.id))
    path = f"/submissions/{submission_id}"
    refused = ivy.post(f"{path}/comments/{comment_id}/delete", data={"csrf_token": csrf_in(ivy.get(path).text)})
    assert refused.status_code == 403 and "only your own comments" in refused.get_data(as_text=True)
    assert len(stored(database_url)) == 1
    done = tess.post(f"{path}/comments/{comment_id}/delete", data={"csrf_token": csrf_in(tess.get(path).text)})
    assert done.status_code == 303 and stored(database_url) == []


def test_staff_comment_through_the_api_and_the_student_reads_them_once_released(course, site, database_url,
                                                                              monkeypatch, make_key):
    api, submission_id, tokens = site.test_client(), course["submission"], course["tokens"]
    url = f"/api/v1/submissions/{submission_id}"
    made = api.post(f"{url}/comments", json={"body": "Well named.", "line": 1}, headers=bearer(tokens["ivy@uni.edu"]))
    assert made.status_code == 201, made.get_json()
    body = made.get_json()
    assert (body["body"], body["line"], body["author"]) == ("Well named.", 1, "Ivy")
    assert datetime.fromisoformat(body["created_at"]).tzinfo is not None
    overall = api.post(f"{url}/comments", json={"body": "Good work.", "line": None},
                       headers=bearer(tokens["tess@uni.edu"]))
    assert overall.status_code == 201 and overall.get_json()["line"] is None
    refused = api.post(f"{url}/comments", json={"body": "Far off", "line": 10_000},
                       headers=bearer(tokens["ivy@uni.edu"]))
    assert refused.status_code == 422 and refused.get_json()["error"]["code"] == "line_not_in_source"
    assert "there is no line 10000" in refused.get_json()["error"]["message"]
    for wrong in ({"body": "x", "line": "3"}, {"body": "x", "line": True}, {"body": 3}, {"line": 1},
                  {"body": "x", "extra": 1}):
        answer = api.post(f"{url}/comments", json=wrong, headers=bearer(tokens["ivy@uni.edu"]))
        assert answer.status_code == 422, wrong

    student = bearer(tokens["ada@example.org"])
    held = api.get(url, headers=student).get_json()
    assert held["comments"] == [] and held["feedback_held_until"]
    at(monkeypatch, AFTER)
    released = api.get(url, headers=student).get_json()
    assert [(c["body"], c["line"], c["author"]) for c in released["comments"]] == [
        ("Good work.", None, "Tess"), ("Well named.", 1, "Ivy")]
    assert "feedback_held_until" not in released


def test_a_key_with_grades_write_comments_on_the_work_of_its_own_course(site, database_url, make_key):
    api = site.test_client()
    key = bearer(make_key("courses:write", "grades:write", "submissions:write", "submissions:read"))
    course_id = api.post("/api/v1/courses", json={"title": "Keyed", "code": "K1"}, headers=key).get_json()["id"]
    api.put(f"/api/v1/courses/{course_id}/members", json={"members": [{"user": "ada", "role": "student"}]},
            headers=key)
    assignment = api.post(f"/api/v1/courses/{course_id}/assignments", headers=key, json={
        "exercise": "autograd-basics", "due_at": "2099-01-01T00:00+00:00"}).get_json()["id"]
    submitted = api.post("/api/v1/submissions", headers=key,
                         json={"assignment": assignment, "source": GOOD, "user": "ada"}).get_json()
    made = api.post(f"/api/v1/submissions/{submitted['id']}/comments", json={"body": "Seen."}, headers=key)
    assert made.status_code == 201 and made.get_json()["author"].startswith("API key ")
    shown = api.get(f"/api/v1/submissions/{submitted['id']}", headers=key).get_json()
    assert [c["body"] for c in shown["comments"]] == ["Seen."]


def test_a_comment_on_released_work_is_mailed_and_one_on_held_work_once_it_is_released(
        course, database_url, mailbox, deliver, monkeypatch):
    submission_id, tess = course["submission"], course["clients"]["tess@uni.edu"]
    deliver()
    mailbox.received.clear()
    comment_on_page(tess, submission_id, "Held with the feedback.")
    comment_on_page(tess, submission_id, "And this line.", line=1)
    assert deliver() == 0 and mailbox.to("ada@example.org") == []  # held: no mail yet

    at(monkeypatch, AFTER)  # released: the beat task tells her, once, in one mail for the submission
    from grader.courses.tasks import COMMENTS_TASK, tell_comments
    from grader.tasks import make_celery

    assert {"task": COMMENTS_TASK, "schedule": 300.0} in make_celery().conf.beat_schedule.values()
    monkeypatch.setenv("GRADER_DATABASE_URL", database_url)
    assert tell_comments() == 1
    assert tell_comments() == 0
    assert deliver() == 1
    [mail] = mailbox.to("ada@example.org")
    assert "commented on your submission" in mail["Subject"]
    body = text_of(mail) + html_of(mail)
    assert f"https://grader.example.edu/submissions/{submission_id}" in body
    assert "Held with the feedback." not in body  # where to read it, not what it says
    assert "https://grader.example.edu/mail/stop/" in text_of(mail) and "/commented/" in text_of(mail)

    comment_on_page(tess, submission_id, "One more, now that it is out.")
    assert deliver() == 1 and len(mailbox.to("ada@example.org")) == 2
    with db.transaction(database_url) as s:
        assert s.scalar(select(func.count()).select_from(SubmissionComment)
                        .where(SubmissionComment.told.is_(False))) == 0


def test_a_student_who_switched_commented_mail_off_gets_none(course, database_url, mailbox, deliver, monkeypatch):
    submission_id = course["submission"]
    with db.transaction(database_url) as s:
        s.scalar(select(User).where(User.email == "ada@example.org")).mail_off = ["commented"]
    deliver()
    mailbox.received.clear()
    at(monkeypatch, AFTER)
    assert comment_on_page(course["clients"]["tess@uni.edu"], submission_id, "Quiet.").status_code == 303
    assert deliver() == 0
    with db.transaction(database_url) as s:
        assert s.get(Submission, submission_id) is not None
