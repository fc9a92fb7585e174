"""What happens after a submission is finished (graded, or given up on), beyond the
grade itself, and after staff changed what counts for a student on an assignment (a
score set by hand, an extension). The integrations (LMS score passback, webhooks) each
register a listener here; a listener looks up whom to tell and enqueues its own retried
tasks.

Listeners are called after the grade's transaction committed, and nothing they do
ever fails the grade: a listener that raises is logged and the others still run.
"""

from __future__ import annotations

import logging
from typing import Callable

from sqlalchemy.orm import Session

from grader import db
from grader.tasks import NOTIFY_QUEUE, send_task
from grader.submissions.models import Submission

log = logging.getLogger(__name__)

# listener(session, submission) -> the tasks to send, as (task name, args) pairs
Listener = Callable[[Session, Submission], list[tuple[str, list]]]
_listeners: list[Listener] = []


def on_finished(listener: Listener) -> Listener:
    """Register a listener (used as a decorator by each integration's tasks module)."""
    _listeners.append(listener)
    return listener


def after_grade(submission_id: str, database_url: str | None = None) -> int:
    """Enqueue every integration's tasks for a finished submission; returns how many
    tasks were sent."""
    outgoing: list[tuple[str, list]] = []
    try:
        with db.transaction(database_url) as session:
            row = session.get(Submission, submission_id)
            if row is None:
                return 0
            for listener in _listeners:
                try:
                    outgoing += listener(session, row)
                except Exception:
                    log.exception("listener %s failed for submission %s", listener.__qualname__, submission_id)
        for name, args in outgoing:
            send_task(name, args, queue=NOTIFY_QUEUE)
        return len(outgoing)
    except Exception:  # the grade is stored; a lost notification must not undo it
        log.exception("could not enqueue the notifications of submission %s", submission_id)
        return 0


# listener(session, assignment_id, user_id, at) -> the tasks to send; ``at``: when it changed (ISO 8601)
StandingListener = Callable[[Session, int, int, str], list[tuple[str, list]]]
_standing_listeners: list[StandingListener] = []


def on_standing_changed(listener: StandingListener) -> StandingListener:
    """Register a listener for a changed standing (an override, an extension)."""
    _standing_listeners.append(listener)
    return listener


def after_standing_change(assignment_id: int, user_id: int, at: str, database_url: str | None = None) -> int:
    """Enqueue every integration's tasks for a student whose counting score on an
    assignment may have changed without a new grade; returns how many were sent."""
    outgoing: list[tuple[str, list]] = []
    with db.transaction(database_url) as session:
        for listener in _standing_listeners:
            try:
                outgoing += listener(session, assignment_id, user_id, at)
            except Exception:
                log.exception("listener %s failed for assignment %s, user %s", listener.__qualname__,
                              assignment_id, user_id)
    for name, args in outgoing:
        send_task(name, args, queue=NOTIFY_QUEUE)
    return len(outgoing)
