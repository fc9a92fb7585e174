"""Where the class is stuck, on a hand-made class whose every number is worked out here by
hand: six students of DL101 (Seoul) on one assignment due 2026-12-10 23:59 there, with
reports written by hand (one visible and three hidden tests, the hints failed tests
gave), an extension that spares a late penalty, another that moves a due date, an
override, a late penalty, a failed grading, a student with nothing, and a TA whose work
never counts. The numbers are checked as computed, as JSON from /api/v1 and on the page
(tables, charts); only staff of the course see them. The service's clock is fixed."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from html.parser import HTMLParser

import pytest

from grader.courses.models import Assignment
from grader import db
from grader.accounts import keys, users
from grader.catalog.models import Exercise
from grader import courses
from grader.courses.analytics import analytics, as_json
from grader.courses.roster import set_role
from grader.submissions.models import Submission
from tests.forms import sign_in, token

DUE = datetime(2026, 12, 10, 14, 59, tzinfo=timezone.utc)  # 23:59 in Seoul
NOW = DUE + timedelta(hours=2)                             # 2026-12-11 01:59 in Seoul
HOUR, DAY = timedelta(hours=1), timedelta(days=1)

VISIBLE = "test_grad.py::test_returns_4x"
LEFT_IN_GRAD, DTYPE = "test_grad.py::test_left_in_grad", "test_grad.py::test_dtype"
IN_PLACE = "test_grad.py::test_in_place"
TESTS = [  # id, name, Korean name, visible, points: 6 in all
    (VISIBLE, "returns 4x", "4x를 반환", True, 2),
    (LEFT_IN_GRAD, "x.grad holds 4x", "x.grad에 4x가 들어 있음", False, 2),
    (DTYPE, "float64 in, float64 out", "float64를 넣으면 float64", False, 1),
    (IN_PLACE, "x is left as it was", "x가 그대로 남음", False, 1),
]
TWICE = "backward() ran twice, so x.grad doubled <script>alert(1)</script>"
HINTS = {
    LEFT_IN_GRAD: (TWICE, "backward()가 두 번 실행되어 x.grad가 두 배입니다"),
    DTYPE: ("the gradient came back as float32: keep the dtype of x", "기울기가 float32로 나왔습니다"),
    IN_PLACE: ("x was changed in place", "x가 제자리에서 바뀌었습니다"),
}
EVERY = (VISIBLE, LEFT_IN_GRAD, DTYPE, IN_PLACE)


def report(passed=(), hinted=(), hints=HINTS) -> dict:
    """A report as Report.to_dict() stores it: the tests not ``passed`` fail, those in
    ``hinted`` with their hint."""
    tests = [{"id": id_, "name": name, "visible": visible, "passed": id_ in passed,
              "points": points if id_ in passed else 0, "max_points": points, "message": None,
              "hint": hints[id_][0] if id_ in hinted else None, "duration_ms": 100.0,
              "i18n": {"ko": {"name": ko, **({"hint": hints[id_][1]} if id_ in hinted else {})}}}
             for id_, name, ko, visible, points in TESTS]
    score = sum(t["points"] for t in tests)
    return {"exercise": "autograd-basics", "version": 1, "status": "graded", "score": score, "max_score": 6,
            "duration_ms": 400.0, "tests": tests, "output": "", "output_truncated": False, "message": None,
            "sandbox": "bubblewrap", "device": "cpu", "warnings": []}


# Who submitted what, when (relative to the due date). Percent of 6 that counts, worked out:
#   ada   2, 5, 6 points                      best 6               -> 100
#   bo    3, 4 (extension: due a day later)   best 4               -> 66.67
#   cy    4, a failed grading, 6 an hour late (extension: 3 days)  -> 6, no penalty: 100
#   dee   2, then set to 4.5 by hand           override 4.5         -> 75
#   eve   nothing                                                   -> no score
#   fay   6 an hour late: 10% off a day         5.4                 -> 90
#   tess  (the TA) 0: never counts
SUBMITTED = {
    "ada@uni.edu": [(-3 * DAY, report({VISIBLE}, {LEFT_IN_GRAD, DTYPE})),
                    (-2 * DAY, report({VISIBLE, LEFT_IN_GRAD, DTYPE}, {IN_PLACE})),
                    (-DAY, report(EVERY))],
    "bo@uni.edu": [(-2 * DAY + HOUR, report({VISIBLE, DTYPE}, {LEFT_IN_GRAD, IN_PLACE})),
                   (-2 * DAY + 3 * HOUR, report({VISIBLE, DTYPE, IN_PLACE}, {LEFT_IN_GRAD}))],
    "cy@uni.edu": [(-10 * HOUR, report({VISIBLE, DTYPE, IN_PLACE}, {LEFT_IN_GRAD})),
                   (-9 * HOUR, None),  # the grader failed: no attempt, no report
                   (HOUR, report(EVERY))],
    "dee@uni.edu": [(-DAY, report({VISIBLE}, {LEFT_IN_GRAD, DTYPE, IN_PLACE}))],
    "fay@uni.edu": [(HOUR, report(EVERY))],
    "tess@uni.edu": [(-DAY, report((), {LEFT_IN_GRAD, DTYPE, IN_PLACE}))],
}


@pytest.fixture
def klass(app, database_url, monkeypatch):
    """The class above, in a course an API key made; returns (assignment id, the key)."""
    monkeypatch.setenv("GRADER_NOW", NOW.isoformat())
    with db.transaction(database_url) as s:
        s.add(Exercise(slug="autograd-basics", version=1, title={"en": "Your first gradient"}, device="any",
                       max_score=6.0, functions=["grad_2xtx"], published=True))
        key, secret = keys.create(s, ["grades:read"], name="lms")
        people = {email: users.create_user(s, email=email, password="correct horse", name=email.split("@")[0].title())
                  for email in ("ines@uni.edu", "ada@uni.edu", "bo@uni.edu", "cy@uni.edu", "dee@uni.edu",
                                "eve@uni.edu", "fay@uni.edu", "tess@uni.edu", "otto@uni.edu", "tom@uni.edu")}
        course = courses.create_course(s, title="Deep learning", code="DL101", time_zone="Asia/Seoul",
                                       api_key_id=key.id, instructor=people["ines@uni.edu"])
        for email in ("ada", "bo", "cy", "dee", "eve", "fay"):
            set_role(s, course.id, people[f"{email}@uni.edu"].id, "student")
        set_role(s, course.id, people["tess@uni.edu"].id, "ta")
        other = courses.create_course(s, title="Vision", code="CV200", time_zone="Asia/Seoul")
        set_role(s, other.id, people["otto@uni.edu"].id, "instructor")
        set_role(s, other.id, people["tom@uni.edu"].id, "ta")
        assignment = courses.create_assignment(
            s, course, exercise="autograd-basics", due_at=DUE.isoformat(), late_until=(DUE + 2 * DAY).isoformat(),
            late_policy="per_day", late_percent=10)
        for email, made in SUBMITTED.items():
            for offset, graded in made:
                s.add(Submission(user_id=people[email].id, exercise_slug="autograd-basics", exercise_version=1,
                                 assignment_id=assignment.id, source="def grad_2xtx(x): ...\n",
                                 status="graded" if graded else "failed", created_at=DUE + offset,
                                 score=graded and graded["score"], max_score=graded and 6.0, report=graded))
        courses.grant_extension(s, assignment, people["cy@uni.edu"], due_at=(DUE + 3 * DAY).isoformat(),
                                reason="ill", by="ines@uni.edu")
        courses.grant_extension(s, assignment, people["bo@uni.edu"], due_at=(DUE + DAY).isoformat(),
                                reason="exchange semester", by="ines@uni.edu")
        courses.set_override(s, assignment, people["dee@uni.edu"], score=4.5, reason="oral exam", by="ines@uni.edu")
        return assignment.id, secret


def test_the_numbers_are_the_ones_worked_out_by_hand(klass, database_url):
    assignment_id, _ = klass
    with db.transaction(database_url) as s:
        found = analytics(s, s.get(Assignment, assignment_id), at=NOW)
    assert found.students == 6  # the TA is no student of it
    scores = found.scores
    assert (scores.scored, scores.unscored, scores.max_score) == (5, 1, 6)
    assert [b.students for b in scores.bins] == [0, 0, 0, 0, 0, 0, 1, 1, 0, 3]  # bo; dee; ada, cy, fay
    assert scores.mean == pytest.approx((100 + 66.666667 + 100 + 75 + 90) / 5)
    assert scores.median == 90
    # Every test, the visible one first as it came first in the reports. Counting submissions: ada's,
    # bo's, cy's and fay's last (dee's score was set by hand); 9 graded in all.
    assert [(t.id, t.visible, t.passed_counting, t.counting, t.passed_graded, t.graded) for t in found.tests] == [
        (VISIBLE, True, 4, 4, 9, 9), (LEFT_IN_GRAD, False, 3, 4, 4, 9), (DTYPE, False, 4, 4, 7, 9),
        (IN_PLACE, False, 4, 4, 5, 9)]
    assert found.tests[1].names == {"ko": "x.grad에 4x가 들어 있음"}
    # The doubled gradient: ada and cy passed it later, bo kept hitting it, dee never tried again.
    assert [(m.hint, [t.id for t in m.tests], m.students, m.got_past) for m in found.misconceptions] == [
        (TWICE, [LEFT_IN_GRAD], 4, 2), ("x was changed in place", [IN_PLACE], 3, 2),
        (HINTS[DTYPE][0], [DTYPE], 2, 1)]
    # Full marks: ada at her 3rd attempt after 2 days, cy at his 2nd (the failed grading is none) after
    # 11 hours, fay at once.
    full = found.full_marks
    assert (full.reached, full.never, full.attempts_median, full.attempts_max) == (3, 3, 2, 3)
    assert (full.time_median, full.time_max) == (11 * HOUR, 2 * DAY)
    # Not there yet, soonest due first: bo's extension puts him last.
    assert [(p.user.email, p.due_at, p.left, p.extended, p.counted.score, p.attempts) for p in found.pending] == [
        ("dee@uni.edu", DUE, -2 * HOUR, False, 4.5, 1), ("eve@uni.edu", DUE, -2 * HOUR, False, None, 0),
        ("bo@uni.edu", DUE + DAY, 22 * HOUR, True, 4, 2)]


# One mistake fails two tests with the same hint: backward() run twice doubles both what
# grad_2xtx returns (the visible test) and x.grad (a hidden one).
DOUBLED = HINTS | {VISIBLE: HINTS[LEFT_IN_GRAD]}
ONE_MISTAKE_TWO_TESTS = {
    # gus: both tests give it, then he passes both: got past it.
    "gus@uni.edu": [(-2 * DAY, report({DTYPE, IN_PLACE}, {VISIBLE, LEFT_IN_GRAD}, DOUBLED)),
                    (-DAY, report(EVERY))],
    # hal: only the hidden test gives it (his x.grad doubles, his return value does not), then he passes it.
    "hal@uni.edu": [(-2 * DAY, report({VISIBLE, DTYPE, IN_PLACE}, {LEFT_IN_GRAD}, DOUBLED)),
                    (-DAY, report(EVERY))],
    # ivy: both give it, then she passes the hidden one but not the visible one: not past it.
    "ivy@uni.edu": [(-2 * DAY, report({IN_PLACE}, {VISIBLE, LEFT_IN_GRAD, DTYPE}, DOUBLED)),
                    (-DAY, report({LEFT_IN_GRAD, DTYPE, IN_PLACE}))],
}


def test_a_hint_that_several_tests_gave_is_one_misconception_naming_them_all(app, database_url):
    with db.transaction(database_url) as s:
        s.add(Exercise(slug="autograd-basics", version=1, title={"en": "Your first gradient"}, device="any",
                       max_score=6.0, functions=["grad_2xtx"], published=True))
        course = courses.create_course(s, title="Deep learning", code="DL102", time_zone="Asia/Seoul",
                                       instructor=users.create_user(s, email="ines@uni.edu", password="correct horse"))
        assignment = courses.create_assignment(s, course, exercise="autograd-basics", due_at=DUE.isoformat())
        for email, made in ONE_MISTAKE_TWO_TESTS.items():
            student = users.create_user(s, email=email, password="correct horse")
            set_role(s, course.id, student.id, "student")
            for offset, graded in made:
                s.add(Submission(user_id=student.id, exercise_slug="autograd-basics", exercise_version=1,
                                 assignment_id=assignment.id, source="def grad_2xtx(x): ...\n", status="graded",
                                 created_at=DUE + offset, score=graded["score"], max_score=6.0, report=graded))
        s.flush()
        found = analytics(s, assignment, at=NOW)
        body = as_json(found)
    # One row for the doubled gradient, however many tests gave it: the tests in the order the
    # reports list them, each student counted once.
    assert [(m.hint, [t.id for t in m.tests], m.students, m.got_past) for m in found.misconceptions] == [
        (TWICE, [VISIBLE, LEFT_IN_GRAD], 3, 2), (HINTS[DTYPE][0], [DTYPE], 1, 1)]
    assert found.misconceptions[0].hints == {"ko": HINTS[LEFT_IN_GRAD][1]}
    assert [(t.name, t.names) for t in found.misconceptions[0].tests] == [
        ("returns 4x", {"ko": "4x를 반환"}), ("x.grad holds 4x", {"ko": "x.grad에 4x가 들어 있음"})]
    assert [t["id"] for t in body["misconceptions"][0]["tests"]] == [VISIBLE, LEFT_IN_GRAD]
    # The visible test's pass rate beside the hidden ones': gus's and hal's last passed it, ivy's did not.
    assert [(t.id, t.visible, t.passed_counting, t.counting, t.passed_graded, t.graded) for t in found.tests][0] == (
        VISIBLE, True, 2, 3, 3, 6)


def test_the_api_returns_the_same_numbers_as_json(klass, client):
    assignment_id, secret = klass
    response = client.get(f"/api/v1/assignments/{assignment_id}/analytics",
                          headers={"Authorization": f"Bearer {secret}"})
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert body["at"] == "2026-12-11 01:59 KST (Asia/Seoul)" and body["students"] == 6
    assert body["scores"] | {"bins": None} == {"max_score": 6, "scored": 5, "unscored": 1, "mean_percent": 86.33,
                                               "median_percent": 90, "bins": None}
    assert body["scores"]["bins"][9] == {"from_percent": 90, "to_percent": 100, "students": 3}
    assert [(t["id"], t["visible"]) for t in body["tests"]] == [
        (VISIBLE, True), (LEFT_IN_GRAD, False), (DTYPE, False), (IN_PLACE, False)]
    assert body["tests"][1] == {"id": LEFT_IN_GRAD, "name": "x.grad holds 4x", "i18n": {"ko": "x.grad에 4x가 들어 있음"},
                                "visible": False, "counting": {"passed": 3, "of": 4, "percent": 75},
                                "graded": {"passed": 4, "of": 9, "percent": 44.44}}
    assert body["misconceptions"][0] == {
        "hint": TWICE, "i18n": {"ko": HINTS[LEFT_IN_GRAD][1]},
        "tests": [{"id": LEFT_IN_GRAD, "name": "x.grad holds 4x", "i18n": {"ko": "x.grad에 4x가 들어 있음"}}],
        "students": 4, "got_past": 2}
    assert body["full_marks"] == {"reached": 3, "never": 3, "attempts": {"median": 2, "max": 3},
                                  "seconds_to_full_marks": {"median": 11 * 3600, "max": 2 * 86400}}
    assert body["not_yet_full_marks"] == [
        {"student": "dee@uni.edu", "name": "Dee", "due_at": "2026-12-10 23:59 KST (Asia/Seoul)", "seconds_left": -7200,
         "extension": False, "score": 4.5, "attempts": 1},
        {"student": "eve@uni.edu", "name": "Eve", "due_at": "2026-12-10 23:59 KST (Asia/Seoul)", "seconds_left": -7200,
         "extension": False, "score": None, "attempts": 0},
        {"student": "bo@uni.edu", "name": "Bo", "due_at": "2026-12-11 23:59 KST (Asia/Seoul)", "seconds_left": 79200,
         "extension": True, "score": 4, "attempts": 2}]


class _Tables(HTMLParser):
    """Each <table id=...> of a page as rows of cell texts."""

    def __init__(self):
        super().__init__()
        self.tables, self._table, self._cell = {}, None, None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self._table = self.tables.setdefault(dict(attrs).get("id"), [])
        elif tag == "tr" and self._table is not None:
            self._table.append([])
        elif tag in ("td", "th") and self._table is not None:
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self._table[-1].append(" ".join(" ".join(self._cell).split()))
            self._cell = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def tables(page: str) -> dict[str, list[list[str]]]:
    parser = _Tables()
    parser.feed(page)
    return parser.tables


def signed_in(app, email: str):
    client = app.test_client()
    assert sign_in(client, email).status_code == 302
    return client


def test_staff_read_the_numbers_in_tables_beside_the_charts(klass, app):
    assignment_id, _ = klass
    ines = signed_in(app, "ines@uni.edu")
    assert f"/assignments/{assignment_id}/analytics" in ines.get(f"/assignments/{assignment_id}").get_data(as_text=True)
    response = ines.get(f"/assignments/{assignment_id}/analytics")
    assert response.status_code == 200
    page = response.get_data(as_text=True)
    assert "2026-12-11 01:59 KST (Asia/Seoul)" in page
    found = tables(page)
    assert found["scores-table"][1:] == [[f"{low}–{low + 10}%", str(n)]
                                         for low, n in zip(range(0, 100, 10), [0, 0, 0, 0, 0, 0, 1, 1, 0, 3])]
    assert found["tests-table"][1:] == [["returns 4x visible", "4 of 4 (100.0%)", "9 of 9 (100.0%)"],
                                        ["x.grad holds 4x hidden", "3 of 4 (75.0%)", "4 of 9 (44.4%)"],
                                        ["float64 in, float64 out hidden", "4 of 4 (100.0%)", "7 of 9 (77.8%)"],
                                        ["x is left as it was hidden", "4 of 4 (100.0%)", "5 of 9 (55.6%)"]]
    assert found["misconceptions-table"][1:] == [[TWICE, "x.grad holds 4x", "4", "2"],
                                                 ["x was changed in place", "x is left as it was", "3", "2"],
                                                 [HINTS[DTYPE][0], "float64 in, float64 out", "2", "1"]]
    assert [row[:3] for row in found["pending-table"][1:]] == [
        ["Dee dee@uni.edu", "2026-12-10 23:59 KST (Asia/Seoul)", "past"],
        ["Eve eve@uni.edu", "2026-12-10 23:59 KST (Asia/Seoul)", "past"],
        ["Bo bo@uni.edu", "2026-12-11 23:59 KST (Asia/Seoul) extension", "22 hours left"]]
    assert "86.3%" in page and "90.0%" in page and "11 hours, 2 days" in page  # time to full marks
    charts = re.findall(r"<svg\b.*?</svg>", page, re.S)
    assert len(charts) == 3
    for chart in charts:
        ident = re.search(r'aria-labelledby="([\w-]+)-title \1-desc"', chart).group(1)
        assert 'role="img"' in chart and f'<title id="{ident}-title">' in chart and f'<desc id="{ident}-desc">' in chart
    assert ">3</text>" in charts[0] and ">75%</text>" in charts[1] and ">4</text>" in charts[2]
    assert ">hidden</text>" in charts[1] and ">From: x.grad holds 4x</text>" in charts[2]
    # The hint's markup is text everywhere: in the table and in the chart's titles.
    assert "<script>alert" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in charts[2]


def test_the_page_speaks_korean_with_the_reports_korean_names_and_hints(klass, app):
    assignment_id, _ = klass
    ines = signed_in(app, "ines@uni.edu")
    url = f"/assignments/{assignment_id}/analytics"
    ines.post("/language", data={"lang": "ko", "next": url, "csrf_token": token(ines, url)})
    page = ines.get(url).get_data(as_text=True)
    assert "반영 점수" in page  # "Score that counts", already translated
    assert [row[:2] for row in tables(page)["misconceptions-table"][2:]] == [
        [HINTS[IN_PLACE][1], "x가 그대로 남음"], [HINTS[DTYPE][1], "float64를 넣으면 float64"]]
    assert "11시간, 2일" in page  # time to full marks, in Korean units


def test_only_staff_of_the_course_see_it(klass, app):
    assignment_id, _ = klass
    url = f"/assignments/{assignment_id}/analytics"
    assert signed_in(app, "ada@uni.edu").get(url).status_code == 403   # a student of the course
    assert signed_in(app, "tess@uni.edu").get(url).status_code == 200  # its TA
    assert signed_in(app, "tom@uni.edu").get(url).status_code == 404   # a TA of another course
    assert signed_in(app, "otto@uni.edu").get(url).status_code == 404  # its instructor
    assert signed_in(app, "ines@uni.edu").get("/assignments/999999/analytics").status_code == 404
    assert app.test_client().get(url).status_code == 302  # signed out: to the sign-in page


def test_the_api_needs_grades_read_and_the_courses_own_key(klass, client, database_url):
    from tests.test_api import assert_error

    assignment_id, _ = klass
    with db.transaction(database_url) as s:
        other_scopes = keys.create(s, [scope for scope in keys.SCOPES if scope != "grades:read"])[1]
        other_key = keys.create(s, ["grades:read"])[1]
    url = f"/api/v1/assignments/{assignment_id}/analytics"
    assert_error(client.get(url, headers={"Authorization": f"Bearer {other_scopes}"}), 403, "insufficient_scope")
    assert_error(client.get(url, headers={"Authorization": f"Bearer {other_key}"}), 404, "assignment_not_found")
