"""Every page, in English and Korean, at a phone's size and a desktop's, in a real browser
(Debian's Chromium): axe-core finds no violation, and nothing makes the page scroll sideways.

The site is filled as a course would leave it: a student's wrong and right submissions with
their reports, a practice run, a personal token, a course with an assignment (an extension and
a score set by hand in its staff's tables), its gradebook, analytics and similar submissions,
an upload being checked, error pages."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select

from grader import catalog, db
from grader.accounts import users
from grader.accounts.models import User
from grader import courses
from grader.courses import comments, invitations
from grader.engine import grade
from grader.submissions import practice as runs
from grader.submissions.models import PracticeRun, Submission
from tests.forms import sign_in as sign_in_client
from tests.forms import sign_in_page as sign_in
from tests.live import publish_basics, serve
from tests.test_browser import browser  # noqa: F401  (a fixture)
from tests.test_bundles import bundle_folder, zipped
from tests.test_bundles import upload

ROOT = Path(__file__).resolve().parent.parent
BASICS = ROOT / "exercises" / "autograd-basics"
RIGHT = (BASICS / "solution.py").read_text()
WRONG = (BASICS / "mutants" / "backward_twice.py").read_text()
SIZES = {"phone": {"width": 390, "height": 844}, "desktop": {"width": 1280, "height": 800}}

pytestmark = [pytest.mark.slow, pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)]


def graded(database_url: str, row_id: str, source: str, model=Submission, **kw) -> None:
    report = grade(catalog.find("autograd-basics"), source, **kw)
    with db.transaction(database_url) as session:
        row = session.get(model, row_id)
        row.status, row.score, row.max_score, row.report = "graded", report.score, report.max_score, report.to_dict()
        row.progress_done = row.progress_total = len(report.tests)


@pytest.fixture
def filled(app, database_url, monkeypatch, tmp_path):
    """The site with everything a page shows; yields (base url, the pages by who sees them)."""
    monkeypatch.setenv("GRADER_DATABASE_URL", database_url)
    monkeypatch.setenv("GRADER_BUNDLE_CACHE", str(tmp_path / "cache"))
    publish_basics(database_url)
    with db.transaction(database_url) as session:
        for email, role in (("ada@example.org", "student"), ("bo@example.org", "student"),
                            ("prof@example.org", "instructor"), ("ines@example.org", "admin")):
            users.create_user(session, email=email, password="correct horse", role=role, name=email.split("@")[0])
    with db.transaction(database_url) as session:
        ada, bo, prof = (session.scalar(select(User).where(User.email == e))
                         for e in ("ada@example.org", "bo@example.org", "prof@example.org"))
        course = courses.create_course(session, title="Deep learning", code="DL101", time_zone="Asia/Seoul",
                                       instructor=prof)
        courses.import_roster(session, course, [{"email": ada.email}, {"email": bo.email}])
        assignment = courses.create_assignment(session, course, exercise="autograd-basics",
                                               due_at="2099-01-01T00:00+09:00", attempts=3)
        made = [courses.submit(session, user=who, assignment=assignment, source=source)
                for who, source in ((ada, WRONG), (ada, RIGHT), (bo, WRONG))]
        courses.grant_extension(session, assignment, ada, extra_attempts=1, reason="ill", by=prof.email)
        courses.set_override(session, assignment, bo, score=3, reason="partial credit", by=prof.email)
        practice = runs.start(session, user=ada, exercise_slug="autograd-basics", source=WRONG)
        _link, invitation = invitations.create(session, course, role="student", days=14, max_uses=30)
        ids = [row.id for row in made]
        course_id, assignment_id, practice_id = course.id, assignment.id, practice.id
        for line in (None, 2):  # staff's comments: above the report and beside line 2
            comments.add(session, made[0], "Look at how often backward() runs.", line, author=prof)
    for row_id, source in zip(ids, (WRONG, RIGHT, WRONG)):
        graded(database_url, row_id, source)
    graded(database_url, practice_id, WRONG, model=PracticeRun, visible_only=True)
    admin = app.test_client()
    assert sign_in_client(admin, "ines@example.org").status_code == 302
    folder = bundle_folder(tmp_path)
    checking = upload(admin, zipped({str(p.relative_to(folder)): p.read_bytes()
                                     for p in folder.rglob("*") if p.is_file()})).location
    student = ["/exercises", "/exercises/autograd-basics", f"/submissions/{ids[0]}", f"/submissions/{ids[1]}",
               "/submissions", f"/practice/{practice_id}", "/account/tokens", "/courses",
               f"/assignments/{assignment_id}", f"/join/{invitation}", "/no-such-page"]
    staff = [f"/courses/{course_id}", f"/courses/{course_id}/gradebook", f"/assignments/{assignment_id}",
             f"/submissions/{ids[0]}",
             f"/assignments/{assignment_id}/analytics", f"/assignments/{assignment_id}/similarity",
             f"/assignments/{assignment_id}/similarity/{ids[1]}/{ids[2]}", "/instructor/submissions",
             "/instructor/lti/platforms"]
    admin_pages = ["/instructor/exercises", checking, "/instructor/lti/deliveries"]
    with serve(app) as url:
        yield url, {None: ["/login", f"/join/{invitation}"], "ada@example.org": student, "prof@example.org": staff, "ines@example.org": admin_pages}


@pytest.mark.parametrize("size", SIZES)
def test_every_page_passes_axe_and_fits_the_screen_in_both_languages(browser, filled, size):
    from axe_playwright_python.sync_playwright import Axe

    base, pages = filled
    axe, problems = Axe(), []
    for lang in ("en", "ko"):
        def fresh():  # one per user: a browser's cookies are one user's
            return browser.new_context(viewport=SIZES[size], locale="ko-KR" if lang == "ko" else "en-US")

        for email, paths in pages.items():
            context = fresh()
            page = context.new_page()
            page.set_default_timeout(30_000)
            if email is not None:  # None: pages seen before signing in
                sign_in(page, base + "/login", email)
            for path in paths:
                page.goto(base + path)
                assert page.locator("html").get_attribute("lang") == lang, (lang, path)
                problems += check(axe, page, f"{lang} {path}")
            context.close()
    assert not problems, "\n\n".join(problems)


def check(axe, page, where: str) -> list[str]:
    found = []
    results = axe.run(page)
    if results.violations_count:
        found.append(f"{where}: {results.generate_report()}")
    overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
    if overflow > 0:
        wide = page.evaluate("""() => [...document.querySelectorAll('body *')]
            .filter(e => e.getBoundingClientRect().right > window.innerWidth + 1)
            .slice(0, 5).map(e => e.tagName + '.' + e.className + ': ' + (e.textContent || '').slice(0, 60))""")
        found.append(f"{where}: the page scrolls sideways by {overflow}px: {wide}")
    return found


def test_where_the_class_is_stuck_reads_whole_at_both_widths_in_both_languages(browser, filled):
    """The analytics page: one row per distinct hint (the wrong submissions' one mistake fails
    several tests with the same hint), every test's pass rate with the visible ones marked,
    every chart label written whole and inside its chart, the tables the page's width, and
    nothing that scrolls sideways; axe finds nothing."""
    from axe_playwright_python.sync_playwright import Axe

    base, pages = filled
    path = next(p for p in pages["prof@example.org"] if p.endswith("/analytics"))
    axe, problems = Axe(), []
    for lang in ("en", "ko"):
        for size in SIZES:
            context = browser.new_context(viewport=SIZES[size], locale="ko-KR" if lang == "ko" else "en-US")
            page = context.new_page()
            page.set_default_timeout(30_000)
            sign_in(page, base + "/login", "prof@example.org")
            page.goto(base + path)
            where = f"{lang} {size} {path}"
            problems += check(axe, page, where)
            hints = page.locator("#misconceptions-table tbody th").all_inner_texts()
            assert hints and len(hints) == len(set(hints)), (where, hints)
            assert any(page.locator("#misconceptions-table tbody tr").nth(i).locator("li").count() > 1
                       for i in range(len(hints))), where  # one hint, from several tests, each named
            kinds = page.locator("#tests-table tbody .kind").all_inner_texts()
            assert len(set(kinds)) == 2, (where, kinds)  # the visible tests beside the hidden ones
            labels = page.evaluate("""() => [...document.querySelectorAll('svg.chart text')].map(t => {
                const chart = t.ownerSVGElement.getBoundingClientRect(), box = t.getBoundingClientRect();
                return {text: t.textContent, inside: box.left >= chart.left - 1 && box.right <= chart.right + 1};
            })""")
            assert labels, where
            problems += [f"{where}: a chart's text is cut: {label['text']!r}" for label in labels
                         if label["text"].endswith("…") or not label["inside"]]
            main, tables = page.evaluate("""() => [document.querySelector('main').clientWidth,
                [...document.querySelectorAll('table.numbers')].map(t => t.parentElement.clientWidth)]""")
            padding = page.evaluate("""() => { const s = getComputedStyle(document.querySelector('main'));
                return parseFloat(s.paddingLeft) + parseFloat(s.paddingRight); }""")
            assert tables and all(width >= main - padding - 1 for width in tables), (where, main, tables)
            context.close()
    assert not problems, "\n\n".join(problems)


def test_a_bundle_being_checked_shows_its_result_without_a_timed_refresh(browser, filled, database_url):
    """No <meta refresh> (a screen reader starts again at every one): the page follows the
    check and, once it ends, shows the result with focus on it."""
    from playwright.sync_api import expect

    from grader.catalog.models import Upload, UploadStatus

    base, pages = filled
    checking = pages["ines@example.org"][1]
    page = browser.new_page()
    sign_in(page, base + "/login", "ines@example.org")
    page.goto(base + checking)
    expect(page.locator("#bundle-status")).to_contain_text("Checking")
    assert page.locator('meta[http-equiv="refresh"]').count() == 0  # only inside <noscript>, for pages without JS
    with db.transaction(database_url) as session:
        row = session.scalar(select(Upload))
        row.status, row.error = UploadStatus.REJECTED, "the reference solution scored 0 of 6"
    expect(page.locator("#bundle-status")).to_contain_text("Rejected", timeout=15_000)
    expect(page.locator("#upload-watch")).to_be_focused()
