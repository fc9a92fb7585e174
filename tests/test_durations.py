"""How long, in words: every page says a duration through grader.web.durations, in the
largest unit it needs and the next one down where there is some of it, in the page's
language, never "0 hours 0 minutes". The service's clock is moved, not a library's."""

from __future__ import annotations

from datetime import timedelta

import pytest

from grader import clock
from tests.test_web_courses import DUE, GOOD, course, site, submit  # noqa: F401  (fixtures)
from tests.test_web import ada  # noqa: F401  (fixture)

SECOND, MINUTE, HOUR, DAY = (timedelta(seconds=1), timedelta(minutes=1), timedelta(hours=1), timedelta(days=1))
SPANS = (timedelta(0), timedelta(seconds=45.2), 12 * MINUTE, 4 * MINUTE + 30 * SECOND, HOUR + MINUTE,
         3 * HOUR + 5 * MINUTE + 40 * SECOND, 11 * HOUR + 59 * SECOND, DAY, 2 * DAY + 4 * HOUR + 5 * MINUTE,
         10 * DAY, -HOUR, None)


@pytest.mark.parametrize("lang, words", [
    ("en", ["0 seconds", "45 seconds", "12 minutes", "4 minutes 30 seconds", "1 hour 1 minute", "3 hours 5 minutes",
            "11 hours", "1 day", "2 days 4 hours", "10 days", "0 seconds", "–"]),
    ("ko", ["0초", "45초", "12분", "4분 30초", "1시간 1분", "3시간 5분", "11시간", "1일", "2일 4시간", "10일", "0초", "–"]),
])
def test_a_duration_is_its_largest_unit_then_the_next_where_there_is_some(app, lang, words):
    from grader.web.durations import duration

    with app.test_request_context(headers={"Accept-Language": lang}):
        assert [duration(span) for span in SPANS] == words


def test_a_fraction_of_a_second_is_rounded_and_time_left_is_past_once_gone(app):
    from grader.web.durations import duration, left, minutes

    with app.test_request_context(headers={"Accept-Language": "en"}):
        assert duration(7 * MINUTE - timedelta(milliseconds=3)) == "7 minutes"  # a request's own time never shows
        assert duration(timedelta(seconds=59.6)) == "1 minute"
        assert left(3 * HOUR + 5 * MINUTE) == "3 hours 5 minutes left"
        assert left(timedelta(milliseconds=200)) == left(-SECOND) == "past"
        assert minutes(90) == "1 hour 30 minutes" and minutes(45) == "45 minutes"
    with app.test_request_context(headers={"Accept-Language": "ko"}):
        assert left(2 * DAY + 4 * HOUR) == "2일 4시간 남음" and minutes(90) == "1시간 30분"


@pytest.mark.parametrize("before, en, ko", [
    (45 * SECOND, "45 seconds left", "45초 남음"),
    (12 * MINUTE, "12 minutes left", "12분 남음"),
    (3 * HOUR + 5 * MINUTE, "3 hours 5 minutes left", "3시간 5분 남음"),
    (2 * DAY + 4 * HOUR, "2 days 4 hours left", "2일 4시간 남음"),
])
def test_the_assignment_page_says_the_time_left_in_the_units_it_needs(course, ada, before, en, ko):
    _, course_url, url = course
    with clock.travel(DUE - before, still=True):  # words to the second: a clock that stays put
        english = ada.get(url, headers={"Accept-Language": "en"}).get_data(as_text=True)
        korean = ada.get(url, headers={"Accept-Language": "ko"}).get_data(as_text=True)
        listed = ada.get(course_url, headers={"Accept-Language": "en"}).get_data(as_text=True)
    assert f"({en})" in english and f"({ko})" in korean and en in listed
    assert " 0 hours" not in english and " 0 minutes" not in english and "0시간" not in korean


def test_the_late_warning_and_the_cool_down_say_how_long_in_words(course, ada, database_url):
    from grader import db
    from grader.courses.models import Assignment

    _, _, url = course
    with db.transaction(database_url) as s:
        assignment = s.get(Assignment, int(url.rsplit("/", 1)[1]))
        assignment.late_until, assignment.late_policy, assignment.late_percent = DUE + 2 * DAY, "per_day", 10.0
        assignment.cooldown_seconds, assignment.attempts = 2 * 3600, None
    with clock.travel(DUE + 45 * SECOND, still=True):
        page = ada.get(url).get_data(as_text=True)
    assert "Submitting now is late by 45 seconds: this submission would lose 10% of its score." in page
    with clock.travel(DUE + DAY + 2 * HOUR):
        page = ada.get(url).get_data(as_text=True)
    assert "late by 1 day 2 hours:" in page
    assert submit(ada, url, GOOD, DUE + HOUR).status_code == 303
    # 1 hour 30 minutes 20 seconds left: the service's clock runs on within each request, and
    # on a loaded machine two requests' moments drift apart by more than the rounding's second.
    pause = submit(ada, url, GOOD, DUE + HOUR + 29 * 60 * SECOND + 40 * SECOND)
    assert pause.status_code == 429
    assert "Wait 1 hour 30 minutes, until 2026-12-11 02:59 KST (Asia/Seoul), before your next attempt." in \
        pause.get_data(as_text=True)
