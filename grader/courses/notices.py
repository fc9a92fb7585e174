"""The course's notices by mail (grader.accounts.notices sends them; this module decides
when and what): a slow or failed grade, a regrade that changed what counts, an extension
or a score set by hand, a due date within a day, a member added by a roster, a comment
from staff. None holds source code, and none tells a held result before its release (the
held rule of grader.courses.counting decides, as for every surface).

The grade and standing notices are listeners of grader.submissions.notify, so a worker
sends them once a grade or a change has committed; the others are queued in the
transaction that makes the change.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from grader import mail
from grader.accounts.notices import notify
from grader.accounts.models import User
from grader.courses.assignments import extension_of, override_of
from grader.courses.counting import release_of, standing
from grader.courses.models import Assignment, Course, CourseMember
from grader.courses.times import shown
from grader.db import now
from grader.submissions.models import Submission, SubmissionStatus
from grader.submissions.notify import on_finished, on_standing_changed

# A grade that took longer than this (queue and grading), or failed, is told by mail: the
# student may have left the page. The usual sub-second grade is not.
SLOW_GRADE = timedelta(seconds=60)
DUE_WITHIN = timedelta(hours=24)
ROLE_WORDS = ("student", "ta", "instructor")


def _score(score, max_score) -> str:
    return "—" if score is None else f"{score:g} / {max_score:g}"


@on_finished
def graded(session: Session, row: Submission) -> list:
    failed = row.status != SubmissionStatus.GRADED
    took = (row.finished_at or now()) - row.created_at if row.created_at else timedelta()
    if row.finished_at is None or (not failed and took < SLOW_GRADE):
        return []
    course = session.get(Course, row.assignment.course_id) if row.assignment_id else None
    notify(session, row.user, "graded", once=f"graded:{row.id}", values={
        "failed": failed, "exercise": row.exercise.title if row.exercise else row.exercise_slug,
        "when": shown(row.created_at, course), "submission_url": mail.link_to(f"/submissions/{row.id}")})
    return []


@on_standing_changed
def standing_changed(session: Session, assignment_id: int, user_id: int, at: str) -> list:
    assignment, user = session.get(Assignment, assignment_id), session.get(User, user_id)
    if assignment is None or user is None:
        return []
    course = session.get(Course, assignment.course_id)
    extension = extension_of(session, assignment, user_id)
    notify(session, user, "standing", once=f"standing:{assignment_id}:{user_id}:{at}", values={
        "assignment": assignment.title, "course": course.title,
        "due": shown(extension.due_at, course) if extension is not None and extension.due_at else "",
        "by_hand": override_of(session, assignment, user_id) is not None,
        "assignment_url": mail.link_to(f"/assignments/{assignment_id}")})
    return []


def regraded(session: Session, assignment: Assignment, changes) -> None:
    """A published regrade's students whose score that counts changed (``changes``:
    grader.courses.regrades.StudentChange); a held score is not told, only that it changed."""
    course = session.get(Course, assignment.course_id)
    for change in changes:
        if change.before.score == change.after.score:
            continue
        held = release_of(session, assignment, change.user.id)
        notify(session, change.user, "regraded", values={
            "assignment": assignment.title, "course": course.title, "held": held is not None,
            "release": shown(held, course) if held else "",
            "before": _score(change.before.score, change.before.max_score),
            "after": _score(change.after.score, change.after.max_score),
            "assignment_url": mail.link_to(f"/assignments/{assignment.id}")})


def commented(session: Session, row: Submission, *, once: str | None = None) -> None:
    """Staff commented on ``row``, whose feedback its student is shown (grader.courses.comments
    asks the held rule first). The mail says where to read it, not what it says."""
    user = row.user
    assignment = session.get(Assignment, row.assignment_id) if row.assignment_id is not None else None
    course_id = assignment.course_id if assignment is not None else row.course_id
    course = session.get(Course, course_id) if course_id is not None else None
    title = row.exercise.title if row.exercise else {}
    notify(session, user, "commented", once=once, values={
        "exercise": title.get(user.language or "en") or title.get("en") or row.exercise_slug,
        "course": course.title if course is not None else "", "when": shown(row.created_at, course),
        "submission_url": mail.link_to(f"/submissions/{row.id}")})


def added(session: Session, course: Course, user: User, role: str, *, language: str | None = None) -> None:
    """An existing account put on a course's roster."""
    notify(session, user, "added", language=language, values={
        "course": course.title, "role": role if role in ROLE_WORDS else "student",
        "course_url": mail.link_to(f"/courses/{course.id}")})


def remind_due(session: Session) -> int:
    """Each student with an assignment due within a day, attempts left and less than full
    marks gets one mail listing them all; each assignment is in at most one reminder per
    student. Returns how many mails were queued."""
    moment = now()
    soon = list(session.scalars(select(Assignment).where(Assignment.due_at > moment,
                                                         Assignment.due_at <= moment + DUE_WITHIN)))
    by_student: dict[int, list] = {}
    for assignment in soon:
        course = session.get(Course, assignment.course_id)
        members = session.scalars(select(User).join(CourseMember, CourseMember.user_id == User.id).where(
            CourseMember.course_id == course.id, CourseMember.role == "student"))
        for user in members:
            if mail.sent_once(session, f"due:{assignment.id}:{user.id}"):
                continue
            where = standing(session, assignment, user)
            full = where.counted.score is not None and where.counted.score >= (where.counted.max_score or 0)
            if where.refusal is not None or full or where.rules.due_at > moment + DUE_WITHIN:
                continue  # closed to them, done, or an extension puts it further off
            held = where.held_until is not None
            by_student.setdefault(user.id, []).append((assignment, {
                "assignment": assignment.title, "course": course.title, "due": shown(where.rules.due_at, course),
                "score": "—" if held or where.counted.score is None
                else _score(where.counted.score, where.counted.max_score),
                "url": mail.link_to(f"/assignments/{assignment.id}")}))
    queued = 0
    for user_id, items in by_student.items():
        user = session.get(User, user_id)
        sent = notify(session, user, "due_soon", values={"items": [item for _a, item in items]})
        for assignment, _item in items:  # told, or not wanted: either way not asked again
            mail.mark_once(session, f"due:{assignment.id}:{user_id}")
        queued += sent is not None
    return queued
