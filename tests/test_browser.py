"""End to end in a real browser: Debian's Chromium, driven by Playwright, against the
web app served over HTTP, a real Celery worker and a real database and Redis."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from grader import db
from grader.accounts import users
from tests.forms import sign_in_page as sign_in
from tests.live import publish_basics, serve, shared_worker, stop

ROOT = Path(__file__).resolve().parent.parent
BASICS = ROOT / "exercises" / "autograd-basics"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# Slow enough (1 s a call) that the progress bar is seen moving before the report, whose polls
# come at most two seconds apart, even on a loaded machine.
SLOW_WRONG = (BASICS / "mutants" / "backward_twice.py").read_text().replace(
    "def grad_2xtx(x):", "def grad_2xtx(x):\n    __import__('time').sleep(1)", 1)
RIGHT = (BASICS / "solution.py").read_text()

pytestmark = [pytest.mark.slow, pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)]


@pytest.fixture
def browser():
    playwright_api = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed (scripts/test installs it)")
    with playwright_api.sync_playwright() as playwright:
        # --no-sandbox: the tests may run as root, where Chromium's own sandbox refuses to start;
        # the rest keep it from reaching for the network (closed here) at every start.
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync"])
        yield browser
        browser.close()


@pytest.fixture
def live_site(app, database_url, monkeypatch, tmp_path):
    monkeypatch.setenv("GRADER_DATABASE_URL", database_url)
    publish_basics(database_url)
    with db.transaction(database_url) as session:
        users.create_user(session, email="ada@example.org", password="correct horse", name="Ada")
    worker = shared_worker(tmp_path)
    try:
        with serve(app) as url:
            yield url
    finally:
        stop(worker)


def test_a_student_signs_in_submits_wrong_then_right_and_reads_the_hint_in_korean(browser, live_site):
    from playwright.sync_api import expect

    page = browser.new_page(locale="en-US")
    page.set_default_timeout(60_000)
    page.goto(live_site + "/exercises/autograd-basics")
    page.get_by_label("Email").fill("ada@example.org")
    page.get_by_label("Password").fill("correct horse")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("Your first gradient")

    page.get_by_label("Your code (Python)").fill(SLOW_WRONG)
    page.get_by_role("button", name="Submit", exact=True).click()
    bar = page.locator("progress#bar")
    expect(bar).to_be_visible()
    # The bar moves as the worker reports tests done, before the report replaces it.
    page.wait_for_function("() => { const b = document.getElementById('bar'); return b && b.value >= 1; }")
    expect(page.locator(".score")).to_contain_text("Score: 0 / 6", timeout=60_000)
    expect(page.locator(".hint").first).to_contain_text("accumulate")
    wrong = page.url

    page.get_by_role("link", name="Back to the exercise").click()
    page.get_by_label("Your code (Python)").fill(RIGHT)
    page.get_by_role("button", name="Submit", exact=True).click()
    expect(page.locator(".score")).to_contain_text("Score: 6 / 6", timeout=60_000)

    page.goto(wrong)  # the wrong submission's report again, and the interface in Korean
    page.get_by_label("Language").select_option("ko")
    page.get_by_role("button", name="Change").click()
    expect(page.locator("html")).to_have_attribute("lang", "ko")
    expect(page.locator(".score")).to_contain_text("점수: 0 / 6")
    expect(page.locator(".hint").first).to_contain_text("힌트")
    expect(page.get_by_role("link", name="문제 목록").first).to_be_visible()


def test_an_instructor_runs_a_course_page_and_sees_the_students_grade_in_the_gradebook(browser, live_site,
                                                                                       database_url, tmp_path):
    from playwright.sync_api import expect

    with db.transaction(database_url) as session:
        users.create_user(session, email="prof@example.org", password="correct horse", role="instructor",
                          name="Prof")
    roster = tmp_path / "roster.csv"
    roster.write_text("email,name,role\nada@example.org,Ada,student\n")
    prof = browser.new_page(locale="en-US")
    prof.set_default_timeout(60_000)
    sign_in(prof, live_site + "/courses", "prof@example.org")
    prof.get_by_label("Title", exact=True).fill("Deep learning")
    prof.get_by_label("Code (such as DL101)").fill("DL101")
    prof.get_by_label("Time zone (an IANA name such as Asia/Seoul)").fill("Asia/Seoul")
    prof.get_by_role("button", name="Create course").click()
    expect(prof.get_by_role("heading", level=1)).to_have_text("Deep learning")
    prof.get_by_label("Add members from a CSV file (columns email,name,role)").set_input_files(str(roster))
    prof.get_by_role("button", name="Import").click()
    expect(prof.get_by_role("status")).to_contain_text("1 members added")
    prof.get_by_label("Due at (course time)").fill("2099-12-10T23:59")
    prof.get_by_label("Attempts allowed (empty: no limit)").fill("2")
    prof.get_by_role("button", name="Create assignment").click()
    expect(prof.locator("dl.facts")).to_contain_text("2099-12-10 23:59 KST (Asia/Seoul)")

    ada = browser.new_page(locale="en-US")
    ada.set_default_timeout(60_000)
    sign_in(ada, live_site + "/courses", "ada@example.org")
    ada.get_by_role("link", name="Deep learning").click()
    ada.get_by_role("link", name="Your first gradient with backward()").click()
    expect(ada.locator("dl.facts")).to_contain_text("0 / 2")
    ada.get_by_label("Your code (Python)").fill(RIGHT)
    ada.get_by_role("button", name="Submit", exact=True).click()
    expect(ada.locator(".score")).to_contain_text("Score: 6 / 6", timeout=60_000)

    prof.goto(prof.url.split("/assignments/")[0] + "/courses/1/gradebook")
    expect(prof.locator("table.gradebook")).to_contain_text("Ada")
    expect(prof.locator("table.gradebook tbody")).to_contain_text("6")


def test_code_is_never_lost_through_a_refusal_and_a_draft_comes_back(browser, live_site, app):
    """Ctrl+Enter submits, focus lands on the result, "Edit and resubmit" opens the code sent, a
    rate-limited submission keeps it, and what was typed but never sent is offered back."""
    from playwright.sync_api import expect

    app.config["SUBMISSION_RATE_LIMIT"] = "1 per minute"  # the served app is this one
    page = browser.new_page(locale="en-US")
    page.set_default_timeout(60_000)
    sign_in(page, live_site + "/exercises/autograd-basics", "ada@example.org")
    editor = page.get_by_label("Your code (Python)")
    assert "raise NotImplementedError" in editor.input_value()  # the starter, to begin with
    editor.fill("# try one\n" + RIGHT)
    editor.press("Control+Enter")
    expect(page.locator("#result")).to_contain_text("Score: 6 / 6", timeout=60_000)
    expect(page.locator("#result")).to_be_focused()  # read out, and where the keyboard starts

    page.get_by_role("link", name="Edit and resubmit").click()
    editor = page.get_by_label("Your code (Python)")
    assert editor.input_value().startswith("# try one")
    page.get_by_role("button", name="Run visible tests").click()  # a practice run: counts for nothing
    expect(page.locator("#result")).to_contain_text("Visible tests: 2 / 2", timeout=60_000)
    page.get_by_role("link", name="Back to the exercise").click()
    editor = page.get_by_label("Your code (Python)")
    assert editor.input_value().startswith("# try one")  # a practice run is no submission: still the latest
    editor.fill("# try two\n" + RIGHT)
    page.get_by_role("button", name="Submit", exact=True).click()
    expect(page.locator("#submit-error")).to_contain_text("send it again in")  # one a minute
    assert page.get_by_label("Your code (Python)").input_value().startswith("# try two")

    page.get_by_label("Your code (Python)").fill("# try three, never sent\n" + RIGHT)
    page.wait_for_timeout(600)  # the draft is kept a moment after typing stops
    page.goto(live_site + "/exercises/autograd-basics?from=starter")
    assert "raise NotImplementedError" in page.get_by_label("Your code (Python)").input_value()
    expect(page.locator("#draft-offer")).to_contain_text("You have unsent code")
    page.get_by_role("button", name="Restore it").click()
    assert page.get_by_label("Your code (Python)").input_value().startswith("# try three, never sent")


def test_focus_lands_on_a_result_graded_before_its_page_was_drawn(browser, live_site, app, database_url):
    """A fast grade can be done before the page a submission lands on is drawn: no progress to
    follow, and still the result is read out. A send the server refused leaves no mark that
    would move focus on a later page."""
    from playwright.sync_api import expect

    from tests.live import wait_until_done

    app.config["SUBMISSION_RATE_LIMIT"] = "1 per minute"  # the second send is refused
    page = browser.new_page(locale="en-US")
    page.set_default_timeout(60_000)
    sign_in(page, live_site + "/exercises/autograd-basics", "ada@example.org")

    def when_graded(route):  # the send is answered only once its grade is stored
        answer = route.fetch(max_redirects=0)
        wait_until_done(database_url, [answer.headers["location"].rsplit("/", 1)[1]])
        route.fulfill(response=answer)

    sent = "**/exercises/autograd-basics/submissions"
    page.route(sent, when_graded)
    polls = []
    page.on("request", lambda request: polls.append(request.url) if request.url.endswith("/status") else None)
    page.get_by_label("Your code (Python)").fill(RIGHT)
    page.get_by_role("button", name="Submit", exact=True).click()
    expect(page.locator("#result")).to_contain_text("Score: 6 / 6")
    assert not polls  # drawn done: there was no grade to follow
    expect(page.locator("#result")).to_be_focused()
    graded = page.url
    page.unroute(sent)

    page.get_by_role("link", name="Back to the exercise").click()
    page.get_by_role("button", name="Submit", exact=True).click()
    expect(page.locator("#submit-error")).to_contain_text("send it again in")
    page.goto(graded)
    expect(page.locator("#result")).to_contain_text("Score: 6 / 6")
    expect(page.locator("#result")).not_to_be_focused()


def test_code_typed_with_newlines_is_shown_as_typed_without_carriage_returns(browser, live_site):
    """A browser sends a textarea's line ends as CRLF; the result page shows the lines typed, no \\x0d."""
    from playwright.sync_api import expect

    page = browser.new_page(locale="en-US")
    page.set_default_timeout(60_000)
    sign_in(page, live_site + "/exercises/autograd-basics", "ada@example.org")
    editor = page.get_by_label("Your code (Python)")
    editor.fill("")
    editor.press_sequentially("import torch\n\ndef grad_2xtx(x):\n    return 4 * x\n")
    page.get_by_role("button", name="Submit", exact=True).click()
    page.wait_for_url("**/submissions/*")
    code = page.locator("pre.source")
    expect(code).to_contain_text("return 4 * x")
    assert code.locator(".line").count() == 4
    shown = code.inner_text() + page.content()
    assert "\\x0d" not in shown and "&#13;" not in shown and "\r" not in shown


def test_no_draft_is_offered_when_there_is_none(browser, live_site):
    from playwright.sync_api import expect

    page = browser.new_page(locale="en-US")
    sign_in(page, live_site + "/exercises/autograd-basics", "ada@example.org")
    expect(page.get_by_label("Your code (Python)")).to_be_visible()
    expect(page.locator("#draft-offer")).to_be_hidden()


def test_a_roster_student_follows_the_welcome_mail_sets_a_password_and_is_in_the_course(
        browser, mailbox, live_site, database_url, tmp_path):
    """The whole way in for a student a roster made: the instructor imports the roster in
    the page, the worker mails the welcome to a real SMTP server, the student follows its
    link, chooses a password and lands in the course, then signs in with it."""
    import time

    from playwright.sync_api import expect

    from grader import courses
    from tests.mailbox import link_in

    with db.transaction(database_url) as session:
        prof = users.create_user(session, email="prof@example.org", password="correct horse", role="instructor",
                                 name="Prof")
        courses.create_course(session, title="Deep learning", code="DL101", instructor=prof)
    roster = tmp_path / "roster.csv"
    roster.write_text("email,name,role\ngrace@example.org,Grace Hopper,student\n")
    teacher = browser.new_page(locale="en-US")
    teacher.set_default_timeout(60_000)
    sign_in(teacher, live_site + "/courses", "prof@example.org")
    teacher.get_by_role("link", name="Deep learning").click()
    teacher.get_by_label("Add members from a CSV file (columns email,name,role)").set_input_files(str(roster))
    teacher.get_by_role("button", name="Import").click()
    expect(teacher.get_by_role("status")).to_contain_text("mailed a link")

    deadline = time.monotonic() + 60
    while not mailbox.to("grace@example.org"):  # the worker's task, not this process, sends it
        assert time.monotonic() < deadline, "no welcome mail reached the SMTP server"
        time.sleep(0.2)
    link = link_in(mailbox.to("grace@example.org")[0])
    grace = browser.new_page(locale="en-US")
    grace.set_default_timeout(60_000)
    grace.goto(live_site + link)
    expect(grace.get_by_role("heading", level=1)).to_have_text("Welcome: choose your password")
    grace.get_by_label("Password (at least 8 characters)").fill("analytical engine")
    grace.get_by_label("The same password again").fill("analytical engine")
    grace.get_by_role("button", name="Set my password and sign in").click()
    expect(grace.get_by_role("heading", level=1)).to_contain_text("Deep learning")

    again = browser.new_page(locale="en-US")
    sign_in(again, live_site + "/courses", "grace@example.org", "analytical engine")
    expect(again.get_by_role("link", name="Deep learning")).to_be_visible()
