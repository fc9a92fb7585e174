"""An assignment's rules as pure functions of times and attempts: when a student may
submit, what a late submission loses, which attempt counts, when hidden tests' feedback
is released. Nothing here reads the clock or the database: the callers pass both in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from grader.refusals import Refused

LATE_POLICIES = ("none", "per_day", "per_hour")  # what a late submission loses: nothing, or a percentage per unit
COUNTS = ("best", "latest")                      # which attempt counts
FEEDBACK = ("immediate", "after_due")             # when hidden tests' results are shown


@dataclass(frozen=True)
class Rules:
    due_at: datetime
    opens_at: datetime | None = None
    late_until: datetime | None = None   # accepted late until then; None: not at all
    late_policy: str = "none"
    late_percent: float = 0.0            # lost per day or hour late (late_policy)
    late_cap: float | None = None        # at most this many percent lost in all; None: up to 100
    attempts: int | None = None          # None: as many as the student likes
    cooldown: timedelta = timedelta(0)   # between one attempt and the next
    counts: str = "best"
    feedback: str = "immediate"
    time_limit: timedelta | None = None  # each student's time from their own start; None: untimed
    started_at: datetime | None = None   # when this student started (a timed assignment); None: not yet

    @property
    def closes_at(self) -> datetime:
        return max(self.late_until, self.due_at) if self.late_until else self.due_at

    @property
    def ends_at(self) -> datetime:
        """The student's own last moment to submit: the close date, or sooner, once started,
        their start plus their time limit (a later due date never outruns the limit)."""
        if self.time_limit is None or self.started_at is None:
            return self.closes_at
        return min(self.started_at + self.time_limit, self.closes_at)

    @property
    def timed(self) -> bool:
        return self.time_limit is not None

    def started(self, at: datetime | None) -> "Rules":
        """The rules for a student who started at ``at`` (None: has not started)."""
        return replace(self, started_at=at)

    def extended(self, due_at: datetime | None, extra_attempts: int = 0, extra_minutes: int = 0) -> "Rules":
        """The rules for a student with an extension: a later due date (the late window
        moves with it), attempts on top, and minutes on top of a timed assignment's limit."""
        rules = self
        if due_at is not None and due_at > self.due_at:
            late = self.late_until - self.due_at if self.late_until else None
            rules = replace(rules, due_at=due_at, late_until=due_at + late if late is not None else None)
        if extra_attempts and rules.attempts is not None:
            rules = replace(rules, attempts=rules.attempts + extra_attempts)
        if extra_minutes and rules.time_limit is not None:
            rules = replace(rules, time_limit=rules.time_limit + timedelta(minutes=extra_minutes))
        return rules


class Refusal(Refused):
    """Why a submission is not accepted now, and when it will be (``reopens_at``), if ever."""

    def __init__(self, code: str, message: str, reopens_at: datetime | None = None, **details):
        super().__init__(code, message, reopens_at=reopens_at, **details)


def may_submit(rules: Rules, now: datetime, attempts_used: int, last_attempt_at: datetime | None) -> None:
    """Raise Refusal unless a submission made ``now`` is accepted."""
    _opened(rules, now)
    within_time(rules, now)
    _not_closed(rules, now)
    if rules.attempts is not None and attempts_used >= rules.attempts:
        raise Refusal("no_attempts_left", f"all {rules.attempts} attempts are used", n=rules.attempts)
    if last_attempt_at is not None and rules.cooldown and now < last_attempt_at + rules.cooldown:
        raise Refusal("cooling_down", "the next attempt is allowed after a pause",
                      reopens_at=last_attempt_at + rules.cooldown)


def is_open(rules: Rules, now: datetime) -> bool:
    """Whether the assignment takes work ``now``: opened, and not yet closed."""
    return (rules.opens_at is None or now >= rules.opens_at) and now <= rules.closes_at


def may_start(rules: Rules, now: datetime) -> None:
    """Raise Refusal unless a student may start a timed assignment's clock ``now``: only
    while it is open (a start before or after would only spend their time)."""
    _opened(rules, now)
    _not_closed(rules, now)


def _opened(rules: Rules, now: datetime) -> None:
    if rules.opens_at is not None and now < rules.opens_at:
        raise Refusal("not_open", "this assignment is not open yet", reopens_at=rules.opens_at)


def _not_closed(rules: Rules, now: datetime) -> None:
    if now > rules.closes_at:
        raise Refusal("closed", "this assignment is closed: no more submissions are accepted")


def within_time(rules: Rules, now: datetime) -> None:
    """Raise time_up where the student's own time on a timed assignment ran out before the
    assignment closed (where the close date came first, it is simply closed)."""
    if now > rules.ends_at and rules.ends_at < rules.closes_at:
        raise Refusal("time_up", f"your time on this assignment is up: it ended at "
                                 f"{rules.ends_at.isoformat(timespec='seconds')}", ended_at=rules.ends_at)


def is_late(rules: Rules, submitted_at: datetime) -> bool:
    """Whether a submission made at ``submitted_at`` came after the student's due date."""
    return submitted_at > rules.due_at


def late_units(rules: Rules, submitted_at: datetime) -> int:
    """How many days (or hours) late, each begun one counted; 0 when on time."""
    if not is_late(rules, submitted_at) or rules.late_policy == "none":
        return 0
    unit = timedelta(days=1) if rules.late_policy == "per_day" else timedelta(hours=1)
    return math.ceil((submitted_at - rules.due_at) / unit)


def late_penalty(rules: Rules, submitted_at: datetime) -> float:
    """The percentage a submission made at ``submitted_at`` loses (0 to 100)."""
    lost = late_units(rules, submitted_at) * rules.late_percent
    if rules.late_cap is not None:
        lost = min(lost, rules.late_cap)
    return max(0.0, min(100.0, lost))


@dataclass(frozen=True)
class Attempt:
    """A graded attempt: when it was made and what it scored."""

    submission_id: str
    submitted_at: datetime
    score: float
    max_score: float


@dataclass(frozen=True)
class Counted:
    """The score that counts for one student and assignment, and why."""

    score: float | None           # None: nothing graded yet
    max_score: float | None
    submission_id: str | None = None
    how: str = "none"             # "best", "latest", "override" or "none"
    of: int = 0                   # graded attempts it was chosen from
    late: bool = False
    penalty: float = 0.0          # percent lost for lateness
    raw_score: float | None = None  # before the penalty


def counting(rules: Rules, attempts: list[Attempt]) -> Counted:
    """The score that counts under ``rules`` from the graded ``attempts``: each loses its
    late penalty first; then the best of them, or the latest."""
    accepted = sorted((a for a in attempts if a.submitted_at <= rules.closes_at), key=lambda a: a.submitted_at)
    if not accepted:
        return Counted(None, None)

    def adjusted(attempt: Attempt) -> float:
        return attempt.score * (1 - late_penalty(rules, attempt.submitted_at) / 100)

    if rules.counts == "latest":
        chosen = accepted[-1]
    else:  # the best; the earliest of equals
        chosen = max(accepted, key=lambda a: (adjusted(a), -a.submitted_at.timestamp()))
    penalty = late_penalty(rules, chosen.submitted_at)
    return Counted(score=round(adjusted(chosen), 6), max_score=chosen.max_score, submission_id=chosen.submission_id,
                   how=rules.counts, of=len(accepted), late=chosen.submitted_at > rules.due_at, penalty=penalty,
                   raw_score=chosen.score)


def feedback_released(rules: Rules, now: datetime) -> bool:
    """Whether hidden tests' results may be shown to the student now."""
    return rules.feedback == "immediate" or now >= rules.due_at
