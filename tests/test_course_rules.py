"""An assignment's rules, worked through by hand: windows, late penalties, attempts,
cool-downs, extensions, which attempt counts."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from grader.courses.rules import Attempt, Refusal, Rules, counting, feedback_released, late_penalty, may_submit

DUE = datetime(2026, 12, 10, 14, 59, tzinfo=timezone.utc)  # 23:59 in Seoul
HOUR, DAY = timedelta(hours=1), timedelta(days=1)
RULES = Rules(due_at=DUE, opens_at=DUE - 7 * DAY, late_until=DUE + 3 * DAY, late_policy="per_day",
              late_percent=10, late_cap=25, attempts=3, cooldown=10 * timedelta(minutes=1))


def refused(rules, now, used=0, last=None) -> Refusal:
    with pytest.raises(Refusal) as caught:
        may_submit(rules, now, used, last)
    return caught.value


def test_a_submission_is_accepted_from_opening_to_the_end_of_the_late_window():
    for moment in (RULES.opens_at, DUE, DUE + 3 * DAY):
        may_submit(RULES, moment, 0, None)
    early = refused(RULES, RULES.opens_at - timedelta(seconds=1))
    assert early.code == "not_open" and early.reopens_at == RULES.opens_at
    late = refused(RULES, DUE + 3 * DAY + timedelta(seconds=1))
    assert late.code == "closed" and late.reopens_at is None
    assert refused(Rules(due_at=DUE), DUE + timedelta(seconds=1)).code == "closed"  # no late window


def test_attempts_run_out_and_a_cool_down_says_when_the_next_one_is_allowed():
    assert refused(RULES, DUE, used=3).code == "no_attempts_left"
    pause = refused(RULES, DUE, used=1, last=DUE - timedelta(minutes=4))
    assert pause.code == "cooling_down" and pause.reopens_at == DUE + timedelta(minutes=6)
    may_submit(RULES, DUE, 1, DUE - timedelta(minutes=10))
    may_submit(Rules(due_at=DUE), DUE, 1000, DUE)  # no limits set


@pytest.mark.parametrize("late_by, lost", [(timedelta(0), 0), (timedelta(seconds=1), 10), (DAY, 10),
                                          (DAY + timedelta(seconds=1), 20), (2 * DAY + HOUR, 25)])
def test_each_begun_day_late_costs_its_percentage_up_to_the_cap(late_by, lost):
    assert late_penalty(RULES, DUE + late_by) == lost


def test_hourly_penalties_and_no_penalty_at_all():
    hourly = Rules(due_at=DUE, late_until=DUE + DAY, late_policy="per_hour", late_percent=5)
    assert late_penalty(hourly, DUE + 90 * timedelta(minutes=1)) == 10
    assert late_penalty(hourly, DUE + 30 * HOUR) == 100  # never more than everything
    assert late_penalty(Rules(due_at=DUE, late_until=DUE + DAY), DUE + HOUR) == 0


def attempt(name, at, score, max_score=10.0):
    return Attempt(name, at, score, max_score)


def test_the_best_attempt_counts_after_each_loses_its_late_penalty():
    attempts = [attempt("a", DUE - DAY, 6), attempt("b", DUE + HOUR, 10), attempt("c", DUE + 2 * DAY + HOUR, 10)]
    counted = counting(RULES, attempts)
    assert (counted.submission_id, counted.score, counted.penalty, counted.late, counted.of) == ("b", 9, 10, True, 3)
    assert counted.raw_score == 10 and counted.how == "best"


def test_the_latest_attempt_counts_when_the_assignment_says_so():
    rules = Rules(due_at=DUE, counts="latest")
    counted = counting(rules, [attempt("a", DUE - DAY, 10), attempt("b", DUE - HOUR, 4)])
    assert (counted.submission_id, counted.score, counted.how, counted.late) == ("b", 4, "latest", False)


def test_of_equal_scores_the_earlier_counts_and_nothing_graded_counts_as_nothing():
    counted = counting(Rules(due_at=DUE), [attempt("a", DUE - 2 * HOUR, 7), attempt("b", DUE - HOUR, 7)])
    assert counted.submission_id == "a"
    assert counting(RULES, []).score is None


def test_an_extension_moves_the_due_date_and_the_late_window_and_adds_attempts():
    extended = RULES.extended(DUE + 2 * DAY, extra_attempts=2)
    assert extended.due_at == DUE + 2 * DAY and extended.late_until == DUE + 5 * DAY and extended.attempts == 5
    assert late_penalty(extended, DUE + DAY) == 0
    assert RULES.extended(DUE - DAY) == RULES  # an earlier date is no extension


def test_hidden_feedback_waits_for_the_due_date_when_the_assignment_says_so():
    held = Rules(due_at=DUE, feedback="after_due")
    assert not feedback_released(held, DUE - timedelta(seconds=1)) and feedback_released(held, DUE)
    assert feedback_released(Rules(due_at=DUE), DUE - DAY)
