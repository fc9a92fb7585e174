"""GET /api/v1/assignments: the assignments a caller can submit to. With a personal token,
those of its owner's courses, each with where the owner stands (their own due date,
attempts, the score that counts, held as the site holds it): what the notebook client
lists and finds an assignment by (its course's code and its title). With an API key, those
of the key's own courses."""

from __future__ import annotations

from flask import g, jsonify
from sqlalchemy import select

from grader import courses
from grader.accounts.models import User
from grader.api.views import bp, requires
from grader.courses.models import Assignment, Course, CourseMember
from grader.courses.times import aware
from grader.extensions import get_db


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
            listed = [_described(assignment, course, assignment.due_at) for assignment, course in rows]
    return jsonify(assignments=listed)


def _described(assignment: Assignment, course: Course, due_at) -> dict:
    return {"id": assignment.id, "title": assignment.title, "exercise": assignment.exercise_slug,
            "course": {"id": course.id, "code": course.code, "title": course.title},
            "due_at": aware(due_at).isoformat(timespec="seconds"),
            "due_at_shown": courses.shown(due_at, course), "attempts": assignment.attempts,
            "feedback": assignment.feedback}


def _mine(session, assignment: Assignment, course: Course, owner: User) -> dict:
    standing = courses.standing(session, assignment, owner)
    held = standing.held_until is not None
    return {**_described(assignment, course, standing.rules.due_at),
            "attempts": standing.rules.attempts, "attempts_used": standing.attempts_used,
            "attempts_left": standing.attempts_left,
            "refusal": standing.refusal.code if standing.refusal else None,
            "counted_score": None if held else standing.counted.score,
            "counted_max_score": None if held else standing.counted.max_score,
            "feedback_held_until": standing.held_until.isoformat(timespec="seconds") if held else None}
