"""The pages students and instructors use, through Flask's test client, on a real
database (SQLite and PostgreSQL) and a real Redis. No worker runs here: a graded
submission's report comes from the engine, stored as a worker would store it."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from sqlalchemy import select

from grader import catalog, db
from grader.accounts import users
from grader.engine import grade
from grader.catalog.models import Exercise
from grader.db import now
from grader.submissions.models import Submission
from grader.settings import MAX_SOURCE_BYTES
from grader.web.views import code_in_text
from tests.forms import sign_in, token
from tests.live import publish_basics

ROOT = Path(__file__).resolve().parent.parent
BASICS = ROOT / "exercises" / "autograd-basics"
GOOD = (BASICS / "solution.py").read_text(encoding="utf-8")
TWICE = (BASICS / "mutants" / "backward_twice.py").read_text(encoding="utf-8")


@pytest.fixture
def site(app, database_url):
    """The app with autograd-basics published and three accounts."""
    publish_basics(database_url)
    with db.transaction(database_url) as session:
        for email, role in (("ada@example.org", "student"), ("bob@example.org", "student"),
                            ("ines@example.org", "admin")):
            users.create_user(session, email=email, password="correct horse", role=role, name=email.split("@")[0])
    return app


@pytest.fixture
def ada(site):
    client = site.test_client()
    assert sign_in(client, "ada@example.org").status_code == 302
    return client


def submit(client, source: str | None = GOOD, file: bytes | None = None, slug: str = "autograd-basics"):
    data = {"source": source or "", "csrf_token": token(client, f"/exercises/{slug}")}
    if file is not None:
        data["file"] = (io.BytesIO(file), "solution.py")
    return client.post(f"/exercises/{slug}/submissions", data=data, content_type="multipart/form-data")


def rows(database_url) -> list[Submission]:
    with db.transaction(database_url) as session:
        return session.scalars(select(Submission).order_by(Submission.created_at)).all()


def store_grade(database_url, submission_id: str, source: str) -> None:
    """What the worker does once the engine has graded."""
    report = grade(catalog.find("autograd-basics"), source)
    with db.transaction(database_url) as session:
        row = session.get(Submission, submission_id)
        row.status, row.finished_at = "graded", now()
        row.score, row.max_score, row.report = report.score, report.max_score, report.to_dict()
        row.progress_done = row.progress_total = len(report.tests)


# ------------------------------------------------------------------ signing in

def test_pages_ask_for_sign_in_and_come_back_after_it(site):
    client = site.test_client()
    response = client.get("/exercises/autograd-basics")
    assert response.status_code == 302 and response.location.startswith("/login?next=")
    response = client.post(response.location, data={"email": "ada@example.org", "password": "correct horse",
                                                    "csrf_token": token(client)})
    assert response.status_code == 302 and response.location == "/exercises/autograd-basics"


def test_a_wrong_password_is_refused_without_saying_which_part_was_wrong(site):
    client = site.test_client()
    for email, password in (("ada@example.org", "wrong horse"), ("nobody@example.org", "correct horse")):
        response = sign_in(client, email, password)
        assert response.status_code == 401
        assert "do not match an account" in response.get_data(as_text=True)
    assert client.get("/exercises").status_code == 302


def test_sign_in_never_redirects_to_another_site(site):
    client = site.test_client()
    for target in ("https://evil.example/", "//evil.example/", "/\\evil.example"):
        response = client.post(f"/login?next={target}", data={"email": "ada@example.org",
                                                               "password": "correct horse", "csrf_token": token(client)})
        assert response.location == "/"  # home: a course member's course, else the catalogue


def test_a_form_without_its_csrf_token_is_refused(ada, database_url):
    response = ada.post("/exercises/autograd-basics/submissions", data={"source": GOOD})
    assert response.status_code == 400 and "CSRF" in response.get_data(as_text=True)
    response = ada.post("/exercises/autograd-basics/submissions", data={"source": GOOD, "csrf_token": "forged"})
    assert response.status_code == 400
    assert rows(database_url) == []


def test_signing_out_ends_the_session(ada):
    assert ada.post("/logout", data={"csrf_token": token(ada, "/exercises")}).status_code == 302
    assert ada.get("/exercises").status_code == 302


def test_passwords_are_stored_hashed(site, database_url):
    with db.transaction(database_url) as session:
        user = users.authenticate(session, "ADA@example.org ", "correct horse")
        assert user is not None and "correct horse" not in user.password_hash
        with pytest.raises(users.AccountError, match="already an account"):
            users.create_user(session, email="ada@example.org", password="another one")
        with pytest.raises(users.AccountError, match="at least 8"):
            users.create_user(session, email="new@example.org", password="short")


# ------------------------------------------------------------------ exercises

def test_the_exercise_list_shows_points_and_the_students_best_score(ada, database_url):
    page = ada.get("/exercises").get_data(as_text=True)
    assert "Your first gradient" in page and "not yet" in page
    first = submit(ada).location.rsplit("/", 1)[1]
    store_grade(database_url, first, TWICE)
    second = submit(ada).location.rsplit("/", 1)[1]
    store_grade(database_url, second, GOOD)
    page = ada.get("/exercises").get_data(as_text=True)
    assert re.search(r"<td>6</td>\s*<td>6 / 6</td>", page), page  # the best, out of the most


def test_the_statement_is_rendered_from_markdown_in_the_chosen_language(ada):
    page = ada.get("/exercises/autograd-basics").get_data(as_text=True)
    assert "<code>backward()</code>" in page and 'lang="en"' in page
    ada.post("/language", data={"lang": "ko", "next": "/exercises/autograd-basics",
                                "csrf_token": token(ada, "/exercises")})
    page = ada.get("/exercises/autograd-basics").get_data(as_text=True)
    assert "<code>backward()</code>로 구하는 첫 번째 기울기" in page  # README.ko.md
    assert "풀이 제출" in page and 'lang="ko"' in page  # the interface too


def test_the_browser_language_is_used_until_the_user_chooses(site):
    client = site.test_client()
    page = client.get("/login", headers={"Accept-Language": "ko-KR,ko;q=0.9,en;q=0.5"}).get_data(as_text=True)
    assert "로그인" in page
    page = client.get("/login", headers={"Accept-Language": "fr-FR,fr"}).get_data(as_text=True)
    assert "Sign in" in page


def test_statement_markdown_cannot_inject_script():
    from grader.web.render import markdown_html

    html = str(markdown_html("# T\n<script>alert(1)</script>\n[x](javascript:alert(1))\n"
                             '<img src="x" onerror="alert(1)">\n\n```python\nx = 1\n```'))
    assert "<script" not in html and "javascript:" not in html and "onerror" not in html
    assert "<h1>T</h1>" in html and 'class="language-python"' in html


def test_an_unknown_or_unpublished_exercise_is_not_found(ada, database_url):
    assert ada.get("/exercises/no-such-thing").status_code == 404
    assert ada.get("/exercises/..%2Fetc").status_code == 404
    with db.transaction(database_url) as session:
        session.get(Exercise, "autograd-basics").published = False
    assert ada.get("/exercises/autograd-basics").status_code == 404


# ------------------------------------------------------------------ submitting

def test_a_pasted_solution_is_stored_queued_and_sent_to_the_cpu_queue(ada, database_url, redis):
    response = submit(ada)
    assert response.status_code == 303
    [row] = rows(database_url)
    assert response.location == f"/submissions/{row.id}"
    assert row.status == "queued" and row.source == GOOD and row.exercise_version == 1
    [message] = [json.loads(raw) for raw in redis.lrange("cpu", 0, -1)]
    assert message["headers"]["task"] == "grader.grade_submission" and row.id in message["headers"]["argsrepr"]


def test_an_uploaded_file_is_used_instead_of_the_pasted_code(ada, database_url):
    assert submit(ada, source="ignored = True\n", file=GOOD.encode()).status_code == 303
    assert rows(database_url)[0].source == GOOD


@pytest.mark.parametrize("source, file, says", [
    ("   \n", None, "Your submission is empty"),
    ("", b"x = '\xff'\n", "not UTF-8 text"),
    ("", b"x = 1\n" * (MAX_SOURCE_BYTES // 6 + 1), "larger than 256 KiB"),
    ("x = '\x00'\n", None, "NUL character"),
])
def test_a_bad_submission_says_what_is_wrong_and_stores_nothing(ada, database_url, redis, source, file, says):
    response = submit(ada, source=source, file=file)
    assert response.status_code == (413 if "larger" in says else 422)  # the API's status for the same code
    assert says in response.get_data(as_text=True)
    assert rows(database_url) == [] and redis.llen("cpu") == 0


def test_a_syntax_error_is_refused_where_it_is_kept_in_the_editor_and_nothing_is_stored(ada, database_url,
                                                                                       redis):
    response = submit(ada, source="def grad_2xtx(x):  # <mine>\r\n    return x +\r\n")
    assert response.status_code == 422
    page = response.get_data(as_text=True)
    assert ("Your code has a syntax error on line 2: invalid syntax. Nothing was submitted; "
            "no attempt was used.") in page
    assert "# &lt;mine&gt;" in page  # the code, still there to fix
    assert rows(database_url) == [] and redis.llen("cpu") == 0
    ada.post("/language", data={"lang": "ko", "next": "/exercises", "csrf_token": token(ada, "/exercises")})
    page = submit(ada, source="x = (\n").get_data(as_text=True)
    assert "1행에 문법 오류가 있습니다" in page


@pytest.mark.parametrize("source, file", [
    (GOOD.replace("\n", "\r\n"), None),                                 # a browser's textarea
    ("", b"\xef\xbb\xbf" + GOOD.replace("\n", "\r\n").encode()),         # a Windows editor's file
])
def test_a_crlf_source_is_stored_and_shown_with_lf(ada, database_url, source, file):
    location = submit(ada, source=source, file=file).location
    [row] = rows(database_url)
    assert row.source == GOOD
    store_grade(database_url, row.id, row.source)
    page = ada.get(location).get_data(as_text=True)
    assert "\\x0d" not in page and "&#13;" not in page and "\r" not in page
    assert ada.get(f"{location}/source.py").get_data() == GOOD.encode()


def test_a_rejected_paste_is_kept_in_the_editor(ada):
    page = submit(ada, source="x = '\x00' # <mine>\n").get_data(as_text=True)
    assert "# &lt;mine&gt;" in page  # escaped, and still there to fix


def test_submissions_past_the_rate_limit_get_429_with_retry_after(site, database_url):
    site.config["SUBMISSION_RATE_LIMIT"] = "2 per minute"
    client = site.test_client()
    sign_in(client, "ada@example.org")
    assert submit(client, source="").status_code == 422  # refused submissions do not count
    assert [submit(client).status_code for _ in range(2)] == [303, 303]
    limited = submit(client)
    assert limited.status_code == 429 and int(limited.headers["Retry-After"]) > 0
    assert len(rows(database_url)) == 2
    other = site.test_client()  # the limit is per user
    sign_in(other, "bob@example.org")
    assert submit(other).status_code == 303


# ------------------------------------------------------------------ the submission page

def test_a_pending_submission_shows_a_progress_bar_that_works_without_javascript(ada, database_url):
    location = submit(ada).location
    page = ada.get(location).get_data(as_text=True)
    assert "<progress" in page and "Waiting for a grader" in page
    assert '<noscript><meta http-equiv="refresh" content="2"></noscript>' in page
    with db.transaction(database_url) as session:
        row = session.get(Submission, location.rsplit("/", 1)[1])
        row.status, row.progress_done, row.progress_total = "running", 1, 4
    assert ada.get(location + "/status").get_json() == {"status": "running", "done": 1, "total": 4,
                                                         "score": None, "max_score": None, "delayed": True}


def test_a_pending_submission_says_when_no_grader_is_up_to_take_it(ada, database_url):
    """No worker runs in this test, as when the only one was killed: the page says the
    grade waits for one, and the status its script polls says so too."""
    location = submit(ada).location
    page = ada.get(location).get_data(as_text=True)
    assert re.search(r'<p id="delayed" role="status">A grader stopped; your submission will be graded when it is '
                     r'back', page), page
    assert ada.get(location + "/status").get_json()["delayed"] is True


def test_a_graded_submission_shows_each_test_its_hint_and_the_score(ada, database_url):
    location = submit(ada, TWICE).location
    store_grade(database_url, location.rsplit("/", 1)[1], TWICE)
    page = ada.get(location).get_data(as_text=True)
    assert "<progress" not in page and "refresh" not in page
    assert re.search(r"Score: 0 / 6", page)
    assert "accumulate" in page  # the hint that names the misconception
    ada.post("/language", data={"lang": "ko", "next": location, "csrf_token": token(ada, "/exercises")})
    page = ada.get(location).get_data(as_text=True)
    assert "힌트" in page and "실패" in page


def test_a_report_reads_at_a_glance_failures_first_and_each_hint_once(ada, database_url):
    source = (BASICS / "mutants" / "backward_twice.py").read_text(encoding="utf-8")
    location = submit(ada, source).location
    store_grade(database_url, location.rsplit("/", 1)[1], source)
    page = ada.get(location).get_data(as_text=True)
    with db.transaction(database_url) as session:
        report = session.get(Submission, location.rsplit("/", 1)[1]).report
    failed = [t for t in report["tests"] if not t["passed"]]
    assert f"{len(report['tests']) - len(failed)} of {len(report['tests'])} tests passed" in page
    rows = re.findall(r'<tr class="(pass|fail)">', page)
    assert rows == sorted(rows, key=lambda r: r == "pass")  # every failure before any pass
    hints = [t["hint"] for t in failed if t["hint"]]
    repeated = len(hints) - len(set(hints))
    assert repeated and page.count("The hint above explains this one too.") == repeated
    for hint in set(hints):  # as the page sets it: the code in it as code
        assert page.count(str(code_in_text(hint))) == 1


def test_control_and_bidi_characters_from_a_submission_are_shown_escaped(ada, database_url):
    # A right-to-left override in the code (it reads differently from what runs), and
    # escapes in what it prints; the report is stored raw, as a report from before the
    # engine escaped its strings would be.
    source = GOOD.replace("    y = 2 * torch.dot(x, x)", "    # \u202eevil\u202c\n"
                          "    print('\\x1b[2J\\u2066forged\\u2069')\n    y = 2 * torch.dot(x, x)")
    assert "evil" in source
    location = submit(ada, source).location
    store_grade(database_url, location.rsplit("/", 1)[1], source)
    with db.transaction(database_url) as session:
        row = session.get(Submission, location.rsplit("/", 1)[1])
        row.report = {**row.report, "output": "\x1b[31mred\u202e", "message": "\x1b]0;title\x07"}
    page = ada.get(location).get_data(as_text=True)
    for raw in ("\x1b", "\u202e", "\u202c", "\u2066", "\x07"):
        assert raw not in page, repr(raw)
    assert "\\u202eevil\\u202c" in page and "\\x1b[31mred\\u202e" in page


def test_a_submission_that_could_not_be_graded_is_not_shown_as_a_score(ada, database_url):
    location = submit(ada).location
    with db.transaction(database_url) as session:
        row = session.get(Submission, location.rsplit("/", 1)[1])
        row.status, row.failure_reason = "failed", "the sandbox could not start: bwrap: secret detail"
    page = ada.get(location).get_data(as_text=True)
    assert "could not grade" in page and "costs you nothing" in page
    assert "Score" not in page and "secret detail" not in page


def test_students_see_only_their_own_submissions(site, ada, database_url):
    location = submit(ada).location
    bob = site.test_client()
    sign_in(bob, "bob@example.org")
    assert bob.get(location).status_code == 404
    assert bob.get(location + "/status").status_code == 404
    assert "autograd-basics" not in bob.get("/submissions").get_data(as_text=True).split("<main")[1]
    assert "autograd-basics" in ada.get("/submissions").get_data(as_text=True).split("<main")[1]
    assert bob.get("/instructor/submissions").status_code == 403


def test_administrators_see_every_submission_and_filter_by_exercise_and_student(site, ada, database_url):
    mine = submit(ada).location
    bob = site.test_client()
    sign_in(bob, "bob@example.org")
    submit(bob)
    ines = site.test_client()
    sign_in(ines, "ines@example.org")
    page = ines.get("/instructor/submissions").get_data(as_text=True)
    assert "ada@example.org" in page and "bob@example.org" in page
    page = ines.get("/instructor/submissions?student=bob").get_data(as_text=True)
    assert "bob@example.org" in page and "ada@example.org" not in page
    page = ines.get("/instructor/submissions?student=%25").get_data(as_text=True)  # a literal %, not "all"
    assert "ada@example.org" not in page
    page = ines.get("/instructor/submissions?exercise=zero-grad").get_data(as_text=True)
    assert "No submissions match" in page
    assert ines.get(mine).status_code == 200


def test_every_interface_string_has_a_korean_translation():
    from babel.messages.extract import extract_from_dir
    from babel.messages.mofile import read_mo
    from babel.messages.pofile import read_po

    translations = ROOT / "grader" / "translations" / "ko" / "LC_MESSAGES"
    po = read_po((translations / "messages.po").open("rb"))
    mo = read_mo((translations / "messages.mo").open("rb"))
    method_map = [("web/**.py", "python"), ("lti/**.py", "python"), ("refusals.py", "python"),
                  ("templates/**.html", "jinja2"), ("templates/mail/**.txt", "jinja2")]
    used = {message for _, _, message, *_ in extract_from_dir(ROOT / "grader", method_map)}
    untranslated = sorted(m for m in used if not (po.get(m) and po.get(m).string))
    assert not untranslated, f"add these to messages.po: {untranslated}"
    stale = sorted(m.id for m in po if m.id and (mo.get(m.id) is None or mo.get(m.id).string != m.string))
    assert not stale, "messages.mo is older than messages.po: run pybabel compile -d grader/translations"


def test_every_korean_translation_formats_as_its_english_does():
    """Pages format every message (Jinja's gettext applies % even with no values), so a stray
    % in a translation is a 500 in Korean only; and a placeholder the English lacks is one too."""
    from babel.messages.pofile import read_po

    po = read_po((ROOT / "grader" / "translations" / "ko" / "LC_MESSAGES" / "messages.po").open("rb"))
    broken = []
    for message in po:
        if not message.id or not isinstance(message.id, str):
            continue
        values = {name: 1 for name in re.findall(r"%\((\w+)\)", message.id)}
        try:
            message.id % values
            message.string % values
        except (ValueError, KeyError, TypeError) as exc:
            broken.append(f"{message.id!r}: {exc}")
    assert not broken, broken


def test_grader_create_user_makes_an_account_that_can_sign_in(site, database_url, monkeypatch):
    from click.testing import CliRunner

    from grader.cli import main

    monkeypatch.setenv("GRADER_DATABASE_URL", database_url)
    made = CliRunner().invoke(main, ["create-user", "--email", "Teacher@Example.org", "--role", "admin"],
                              input="a long password\na long password\n")
    assert made.exit_code == 0, made.output
    again = CliRunner().invoke(main, ["create-user", "--email", "teacher@example.org", "--password", "whatever1"])
    assert again.exit_code == 1 and "already an account" in again.output
    short = CliRunner().invoke(main, ["create-user", "--email", "x@example.org", "--password", "short"])
    assert short.exit_code == 1 and "at least 8" in short.output
    client = site.test_client()
    assert sign_in(client, "teacher@example.org", "a long password").status_code == 302
    assert client.get("/instructor/submissions").status_code == 200


def test_a_traceback_links_to_the_numbered_line_and_code_in_a_hint_is_code(ada, database_url):
    source = "import torch\n\n\ndef grad_2xtx(x):\n    raise RuntimeError('no gradient here')\n"
    location = submit(ada, source).location
    store_grade(database_url, location.rsplit("/", 1)[1], source)
    page = ada.get(location).get_data(as_text=True)
    assert '<a href="#L5">5</a>' in page  # the line that raised, in the message of a visible test
    assert '<span class="line" id="L5"><span class="ln" aria-hidden="true">5</span>' in page
    location = submit(ada, TWICE).location
    store_grade(database_url, location.rsplit("/", 1)[1], TWICE)
    hint = re.search(r'<p class="hint"><strong>Hint:</strong>(.*?)</p>', ada.get(location).get_data(as_text=True), re.S)
    assert "<code>backward()</code>" in hint.group(1) or "<code>x.grad</code>" in hint.group(1), hint.group(1)
