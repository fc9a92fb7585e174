"""GET /api/v1/assignments: the assignments a caller can submit to. With a personal token,
those of its owner's courses, each with where the owner stands (their own due date,
attempts, the score that counts, held as the site holds it): what the notebook client
lists and finds an assignment by (its course's code and its title). With an API key, those
of the key's own courses.

GET /api/v1/assignments/<id>/submissions.zip: every student's submissions to one of the
key's assignments as one zip (grader.courses.archive), for the key that runs the course."""

from __future__ import annotations

from flask import g, request, send_file
from sqlalchemy import select

from grader import courses
from grader.accounts.models import User
from grader.api import answers
from grader.api.answers import reply
from grader.api.views import _own_assignment, bp, requires
from grader.courses import archive
from grader.courses.models import Assignment, Course, CourseMember
from grader.courses.times import aware
from grader.exports import attachment
from grader.extensions import LANGUAGES, get_db


@bp.get("/assignments")
@requires("submissions:read")
def list_assignments():
    with get_db() as session:
        if g.caller.user_id is not None:
            owner = session.get(User, g.caller.user_id)
            rows = session.execute(select(Assignment, Course).join(Course, Course.id == Assignment.course_id).join(
                CourseMember, CourseMember.course_id == Course.id).where(CourseMember.user_id == owner.id)
                .order_by(Assignment.due_at, Assignment.id)).all()
            listed = [_mine(session, assignment, course, owner) for assignment, course in rows]
        else:
            rows = session.execute(select(Assignment, Course).join(Course, Course.id == Assignment.course_id)
                                   .where(Course.api_key_id == g.caller.key_id)
                                   .order_by(Assignment.due_at, Assignment.id)).all()
            listed = [_listed(assignment, course) for assignment, course in rows]
    return reply(answers.AssignmentList(assignments=listed))


def _described(assignment: Assignment, course: Course, due_at) -> dict:
    return {"id": assignment.id, "title": assignment.title, "exercise": assignment.exercise_slug,
            "course": answers.AssignmentCourse(id=course.id, code=course.code, title=course.title),
            "due_at": aware(due_at).isoformat(timespec="seconds"),
            "due_at_shown": courses.shown(due_at, course), "attempts": assignment.attempts,
            "feedback": assignment.feedback, "time_limit_minutes": assignment.time_limit_minutes}


def _listed(assignment: Assignment, course: Course) -> answers.ListedAssignment:
    """As a service's key reads it: the assignment's own rules."""
    return answers.ListedAssignment(**_described(assignment, course, assignment.due_at))


def _mine(session, assignment: Assignment, course: Course, owner: User) -> answers.ListedAssignment:
    standing = courses.standing(session, assignment, owner)
    held = standing.held_until is not None
    return answers.ListedAssignment(**{
        **_described(assignment, course, standing.rules.due_at),
        "attempts": standing.rules.attempts, "attempts_used": standing.attempts_used,
        "attempts_left": standing.attempts_left,
        "refusal": standing.refusal.code if standing.refusal else None,
        "counted_score": None if held else standing.counted.score,
        "counted_max_score": None if held else standing.counted.max_score,
        "feedback_held_until": standing.held_until.isoformat(timespec="seconds") if held else None,
        # A timed assignment: the owner's own limit (an extension's minutes included), when
        # they started, and their own deadline once started.
        "time_limit_minutes": _minutes(standing.rules.time_limit),
        "started_at": _iso(standing.rules.started_at), "ends_at": _iso(standing.ends_at)})


def _minutes(limit) -> int | None:
    return None if limit is None else int(limit.total_seconds() // 60)


def _iso(moment) -> str | None:
    return None if moment is None else aware(moment).isoformat(timespec="seconds")


@bp.get("/assignments/<int:assignment_id>/submissions.zip")
@requires("grades:read")
def get_submissions_zip(assignment_id: int):
    """A folder per student with each attempt's source and report (JSON and text, in the
    request's language), and index.csv at the top."""
    with get_db() as session:
        assignment = _own_assignment(session, assignment_id)
        spool, _archived = archive.spooled_submissions_zip(
            session, assignment, lang=request.accept_languages.best_match(LANGUAGES) or "en")
        name = archive.file_name(session.get(Course, assignment.course_id), assignment)
    response = send_file(spool, mimetype="application/zip", max_age=0)
    response.headers["Content-Disposition"] = attachment(name)
    return response
