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

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from grader import submissions
from grader.accounts.models import User, lms_prefix
from grader.courses import exercises
from grader.courses.counting import practice, submit
from grader.courses.models import Assignment, Course, CourseExercise, CourseMember
from grader.submissions import practice as runs


@dataclass(frozen=True)
class Taken:
    """A submission or practice run stored and sent."""

    id: str
    exercise: str
    practice: bool


def take(transaction: Callable[[], AbstractContextManager[Session]], *, who: User | Callable[[Session], User],
         target: Callable[[Session], str | Assignment], source, practice_run: bool = False, way: str = "web",
         also: Callable[[Session, object], None] | None = None, via_course: int | None = None,
         key_id: int | None = None) -> Taken:
    """Store ``source`` for ``who`` against ``target`` (a slug, or an Assignment; both
    given as functions of the transaction's session, so a surface looks them up its own
    way), as a submission or a practice run, and send it once committed. ``also`` adds
    what the way in keeps with the row, in the same transaction (an API key's webhook link).
    ``via_course``: the LMS course whose link to the exercise the page was opened from; kept
    on a submission with no assignment where it holds (lms_link_course), so that course's
    staff see it. An exercise on its own must be one ``who`` sees (grader.courses.exercises:
    a draft is its author's and its courses' staff's; ``key_id``, the service's API key the
    work came through, sees its own); any other is ``unknown_exercise``."""
    submissions.check_source(source)  # first: a source that does not parse costs nothing
    try:
        stored = _store(transaction, who, target, source, practice_run, also, via_course, key_id)
    except IntegrityError:
        # Two first requests of one new user at once: the other request made the user
        # between our look-up and our insert; now the look-up finds it.
        stored = _store(transaction, who, target, source, practice_run, also, via_course, key_id)
    taken, device = stored
    if practice_run:
        runs.send(taken.id, device)
    else:
        submissions.send(taken.id, device, exercise=taken.exercise, way=way)
    return taken


def _store(transaction, who, target, source, practice_run: bool, also, via_course, key_id) -> tuple[Taken, str]:
    with transaction() as session:
        user = who(session) if callable(who) else who
        aim = target(session)
        if not isinstance(aim, Assignment) and exercises.find(session, aim, user, key_id=key_id) is None:
            raise submissions.SubmissionError("unknown_exercise", f"there is no exercise {str(aim)[:100]!r}")
        if isinstance(aim, Assignment):
            take_one = practice if practice_run else submit
            row = take_one(session, user=user, assignment=aim, source=source)
        elif practice_run:
            row = runs.start(session, user=user, exercise_slug=aim, source=source)
        else:
            row = submissions.create(session, user=user, exercise_slug=aim, source=source,
                                     course_id=lms_link_course(session, user, aim, via_course))
        if also is not None:
            also(session, row)
        return Taken(row.id, row.exercise_slug, practice_run), row.exercise.device


def lms_link_course(session: Session, user: User, slug: str, course_id: int | None) -> int | None:
    """``course_id`` where work on ``slug`` with no assignment counts as that course's: an
    LMS course that placed the exercise (its link opens it), and ``user`` a member of it
    whom its platform named. Else None: a local course's staff never see free work, and
    no one makes their work another course's by naming it."""
    course = session.get(Course, course_id) if isinstance(course_id, int) and 0 < course_id < 2**31 else None
    if course is None or course.platform_id is None:
        return None
    known = (user.external_id or "").startswith(lms_prefix(course.platform_id))
    placed = session.scalar(select(CourseExercise.id).where(CourseExercise.course_id == course.id,
                                                            CourseExercise.exercise_slug == slug))
    member = session.scalar(select(CourseMember.id).where(CourseMember.course_id == course.id,
                                                          CourseMember.user_id == user.id))
    return course.id if known and placed is not None and member is not None else None
