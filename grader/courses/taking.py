"""Taking a submission or a practice run: the one way code is handed in, whichever way it
came (the site's forms, the API with a key or a personal token, the notebook client
through it, an LMS launch's pages).

In order: the source is checked and parsed (a syntax error is refused here, never stored,
never an attempt); then, in one transaction, the user, the target (an exercise of the
free catalogue, or an assignment, under its rules), the row and whatever the way in keeps
beside it; only once that has committed, the task is sent, so that a worker never looks
for a row that is not there. Anything refused raises grader.refusals.Refused with its
code, and nothing is stored. The surface holds the per-user lock around the call.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from grader import submissions
from grader.accounts.models import User
from grader.courses.counting import practice, submit
from grader.courses.models import Assignment
from grader.submissions import practice as runs


@dataclass(frozen=True)
class Taken:
    """A submission or practice run stored and sent."""

    id: str
    exercise: str
    practice: bool


def take(transaction: Callable[[], AbstractContextManager[Session]], *, who: User | Callable[[Session], User],
         target: Callable[[Session], str | Assignment], source, practice_run: bool = False, way: str = "web",
         also: Callable[[Session, object], None] | None = None) -> Taken:
    """Store ``source`` for ``who`` against ``target`` (a slug, or an Assignment; both
    given as functions of the transaction's session, so a surface looks them up its own
    way), as a submission or a practice run, and send it once committed. ``also`` adds
    what the way in keeps with the row, in the same transaction (an API key's webhook link)."""
    submissions.check_source(source)  # first: a source that does not parse costs nothing
    try:
        stored = _store(transaction, who, target, source, practice_run, also)
    except IntegrityError:
        # Two first requests of one new user at once: the other request made the user
        # between our look-up and our insert; now the look-up finds it.
        stored = _store(transaction, who, target, source, practice_run, also)
    taken, device = stored
    if practice_run:
        runs.send(taken.id, device)
    else:
        submissions.send(taken.id, device, exercise=taken.exercise, way=way)
    return taken


def _store(transaction, who, target, source, practice_run: bool, also) -> tuple[Taken, str]:
    with transaction() as session:
        user = who(session) if callable(who) else who
        aim = target(session)
        if isinstance(aim, Assignment):
            take_one = practice if practice_run else submit
            row = take_one(session, user=user, assignment=aim, source=source)
        elif practice_run:
            row = runs.start(session, user=user, exercise_slug=aim, source=source)
        else:
            row = submissions.create(session, user=user, exercise_slug=aim, source=source)
        if also is not None:
            also(session, row)
        return Taken(row.id, row.exercise_slug, practice_run), row.exercise.device
