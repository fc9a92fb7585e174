"""Comments on a submission: what a course's staff say of a student's work besides a number,
on the whole of it or on one line of its source.

Who comments is the staff (ta, instructor) of the course whose work the submission is, as
grader.courses.access says for every staff page; a service's API key comments on the work of
its own courses (the API checks that, as for its assignments). A comment is plain text, kept
as written and shown escaped.

Its student is shown it as the rest of the feedback: where the assignment holds its hidden
results until the due date, comments wait with them (the held rule of
grader.courses.counting decides; every surface asks :func:`shown_to`). The student is told by
mail when a comment is made on released work, and, for work still held, once it is released
(:func:`tell_released`, a periodic task).
"""

from __future__ import annotations

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from grader.accounts.models import User
from grader.courses import access, notices
from grader.courses.counting import feedback_held_until
from grader.courses.fields import CourseError
from grader.courses.models import SubmissionComment
from grader.submissions.models import Submission

MAX_BODY = 5000  # characters
AUTHOR_NAME = 200


def source_lines(source: str | None) -> int:
    """How many lines the submitted code has, as its page numbers them (a last line end
    starts no line of its own)."""
    text = (source or "").replace("\r\n", "\n")
    return len((text[:-1] if text.endswith("\n") else text).split("\n"))


def may_comment(session: Session, user: User | None, row: Submission) -> bool:
    """Whether ``user`` may comment on ``row``: staff of the course whose work it is."""
    return user is not None and access.is_course_staff(session, user, row)


def clean_body(value) -> str:
    """The comment's text as it is kept, or CourseError: text, not blank, at most MAX_BODY
    characters, no control characters but line ends and tabs."""
    if not isinstance(value, str):
        raise CourseError("invalid_comment", "the comment must be text")
    text = value.replace("\r\n", "\n").strip()
    if not text:
        raise CourseError("invalid_comment", "the comment is empty: write what you want the student to read")
    if len(text) > MAX_BODY:
        raise CourseError("invalid_comment", f"a comment is at most {MAX_BODY} characters; this one has {len(text)}")
    if any((ord(c) < 32 and c not in "\n\t") or ord(c) == 127 for c in text):
        raise CourseError("invalid_comment", "a comment is plain text: no control characters")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # an unpaired surrogate, which JSON's escapes can make
        raise CourseError("invalid_comment", "the comment is not valid text") from None
    return text


def clean_line(value, row: Submission) -> int | None:
    """The line of ``row``'s source a comment is on (None: on the whole submission), or
    CourseError: a whole number within the source."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, str) and value.strip().isdigit() and len(value.strip()) <= 9:
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int):
        raise CourseError("invalid_comment", "the line must be a whole number")
    lines = source_lines(row.source)
    if not 1 <= value <= lines:
        raise CourseError("line_not_in_source", f"there is no line {value} in the submitted code: its lines are "
                                                f"1 to {lines}", line=value, lines=lines)
    return value


def add(session: Session, row: Submission, body, line=None, *, author: User | None,
        author_name: str = "") -> SubmissionComment:
    """A comment on ``row`` by ``author``, who must be staff of its course; ``author`` None
    is a service's API key whose course it is (the caller checked), shown as ``author_name``.
    Nothing is stored where anything is refused. Its student is mailed (after the caller
    commits) where their feedback is released; else once it is."""
    if author is not None and not may_comment(session, author, row):
        raise CourseError("not_course_staff", "only the teaching assistants and instructors of this submission's "
                                              "course comment on it")
    text, where = clean_body(body), clean_line(line, row)
    name = (author.name or author.email or "") if author is not None else author_name
    comment = SubmissionComment(submission_id=row.id, author_id=author.id if author is not None else None,
                                author_name=name.strip()[:AUTHOR_NAME], line=where, body=text, told=False)
    session.add(comment)
    session.flush()
    if not _held_from_student(session, row):
        notices.commented(session, row, once=f"commented:{comment.id}")
        comment.told = True
    return comment


def delete(session: Session, row: Submission, comment_id: int, user: User) -> None:
    """Take back one of ``user``'s own comments on ``row``."""
    comment = session.get(SubmissionComment, comment_id) if 0 < comment_id < 2**31 else None
    if comment is None or comment.submission_id != row.id:
        raise CourseError("comment_not_found", f"this submission has no comment {comment_id}")
    if comment.author_id is None or comment.author_id != user.id:
        raise CourseError("not_your_comment", "you can delete only your own comments")
    session.delete(comment)
    session.flush()


# How a submission's comments are listed wherever they are shown: the overall ones first,
# then by line, then as they were made.
_SHOWN_ORDER = (SubmissionComment.line.is_not(None), SubmissionComment.line, SubmissionComment.created_at,
                SubmissionComment.id)


def shown_to(session: Session, row: Submission, viewer: User | None) -> list[SubmissionComment]:
    """The comments on ``row`` that ``viewer`` is shown now, by line (the overall ones
    first), then as they were made: none while the held rule holds its feedback from them.
    ``viewer`` None is the API key that made the submission, which sees everything. The
    caller has checked that the viewer may see the row at all."""
    if viewer is not None and feedback_held_until(session, row, viewer.id) is not None:
        return []
    return list(session.scalars(select(SubmissionComment).where(SubmissionComment.submission_id == row.id)
                                .order_by(*_SHOWN_ORDER)))


def on_assignment(session: Session, assignment_id: int) -> dict[str, list[SubmissionComment]]:
    """Every comment on an assignment's submissions, by submission, each list in the order
    the submission page shows it: all of them (for its staff; a student is shown theirs by
    :func:`shown_to`)."""
    found: dict[str, list[SubmissionComment]] = {}
    for comment in session.scalars(
            select(SubmissionComment).join(Submission, Submission.id == SubmissionComment.submission_id)
            .where(Submission.assignment_id == assignment_id)
            .order_by(SubmissionComment.submission_id, *_SHOWN_ORDER)):
        found.setdefault(comment.submission_id, []).append(comment)
    return found


def counts(session: Session, submission_ids) -> dict[str, int]:
    """How many comments each of these submissions has, all of them (what its course's
    staff see; a student is shown them by :func:`shown_to`); one with none is left out."""
    ids = list(submission_ids)
    if not ids:
        return {}
    return dict(session.execute(select(SubmissionComment.submission_id, func.count(SubmissionComment.id))
                                .where(SubmissionComment.submission_id.in_(ids))
                                .group_by(SubmissionComment.submission_id)).all())


def _held_from_student(session: Session, row: Submission) -> bool:
    return feedback_held_until(session, row, row.user_id) is not None


def tell_released(session: Session) -> int:
    """Mail each student whose feedback was released since comments were made on it while
    held: one mail per submission, however many comments wait. Returns how many submissions
    were told."""
    waiting = session.scalars(select(SubmissionComment.submission_id).where(SubmissionComment.told.is_(False))
                              .distinct()).all()
    told = 0
    for submission_id in sorted(waiting):
        row = session.get(Submission, submission_id)
        if row is None or _held_from_student(session, row):
            continue
        newest = session.scalar(select(func.max(SubmissionComment.id)).where(
            SubmissionComment.submission_id == submission_id, SubmissionComment.told.is_(False)))
        notices.commented(session, row, once=f"commented:{newest}")  # a second run tells nobody again
        session.execute(update(SubmissionComment).where(SubmissionComment.submission_id == submission_id,
                                                        SubmissionComment.told.is_(False)).values(told=True))
        told += 1
    return told
