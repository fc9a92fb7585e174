"""What a course is made of: the course, its members with their role in it, the
exercises placed in it (by an LMS link launched from it), and its assignments: an
exercise at a pinned version with a due date and the rules around it (grader.courses.rules),
the extensions students were given and the scores staff set by hand.

Shaped for courses made in the grader itself too: ``platform_id`` and ``context_id``
are empty for a local course; title, code and time zone belong to the course either way."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from sqlalchemy import JSON, Boolean, DateTime, Float, ForeignKey, Index, Integer, String, Text, UniqueConstraint, func
from sqlalchemy.orm import Mapped, mapped_column

from grader.db import Base, now

# A member's role in one course. Staff (ta, instructor) see and manage the submissions
# made to the course's placements by its members; nothing outside it.
class MemberRole(StrEnum):
    STUDENT = "student"
    TA = "ta"
    INSTRUCTOR = "instructor"


MEMBER_ROLES = tuple(MemberRole)
STAFF_ROLES = (MemberRole.TA, MemberRole.INSTRUCTOR)


class Course(Base):
    __tablename__ = "courses"
    # NULLs never collide: any number of local courses, one course per LMS context.
    __table_args__ = (UniqueConstraint("platform_id", "context_id", name="uq_courses_platform_context"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    # The platform registration (never an issuer string) and its context id; None: local.
    platform_id: Mapped[int | None] = mapped_column(ForeignKey("lti_platforms.id", ondelete="CASCADE"))
    context_id: Mapped[str | None] = mapped_column(String(500))
    title: Mapped[str] = mapped_column(String(500), default="")
    code: Mapped[str] = mapped_column(String(200), default="")  # the LMS's context label, e.g. "DL101"
    time_zone: Mapped[str | None] = mapped_column(String(64))  # an IANA name; None: the site's
    # Who made a local course: an API key's courses are that key's alone (as its users are).
    api_key_id: Mapped[int | None] = mapped_column(ForeignKey("api_keys.id", ondelete="SET NULL"), index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now, onupdate=now)


# One course per code, whatever its case; an empty code is none (grader.courses.codes).
CODE_INDEX = "uq_courses_code"
Index(CODE_INDEX, func.lower(Course.code), unique=True,
      sqlite_where=Course.code != "", postgresql_where=Course.code != "")


class CourseMember(Base):
    """A user's role in a course; an LMS member's is what the last launch from the
    course said (so a role taken away in the LMS is gone at the next launch)."""

    __tablename__ = "course_members"
    __table_args__ = (UniqueConstraint("course_id", "user_id", name="uq_course_members_course_user"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    course_id: Mapped[int] = mapped_column(ForeignKey("courses.id", ondelete="CASCADE"), index=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    role: Mapped[str] = mapped_column(String(20), default=MemberRole.STUDENT)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now, onupdate=now)


class Invitation(Base):
    """A link that makes whoever opens it (signed in, or signing up on the spot) a member of
    a local course with ``role``. Only the token's hash is kept: the link is shown once."""

    __tablename__ = "course_invitations"

    id: Mapped[int] = mapped_column(primary_key=True)
    course_id: Mapped[int] = mapped_column(ForeignKey("courses.id", ondelete="CASCADE"), index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    prefix: Mapped[str] = mapped_column(String(16))  # the token's start, to tell links apart
    role: Mapped[str] = mapped_column(String(20), default=MemberRole.STUDENT)  # student or ta
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    max_uses: Mapped[int | None] = mapped_column(Integer)  # None: any number until it expires
    uses: Mapped[int] = mapped_column(Integer, default=0)
    created_by: Mapped[str] = mapped_column(String(200), default="")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class CourseExercise(Base):
    """An exercise placed in a course. Staff of the course see what its members submit to it."""

    __tablename__ = "course_exercises"
    __table_args__ = (UniqueConstraint("course_id", "exercise_slug", name="uq_course_exercises_course_slug"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    course_id: Mapped[int] = mapped_column(ForeignKey("courses.id", ondelete="CASCADE"), index=True)
    exercise_slug: Mapped[str] = mapped_column(ForeignKey("exercises.slug"), index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)


class Assignment(Base):
    """An exercise placed in a course at a pinned version, with its due date and rules."""

    __tablename__ = "assignments"

    id: Mapped[int] = mapped_column(primary_key=True)
    course_id: Mapped[int] = mapped_column(ForeignKey("courses.id", ondelete="CASCADE"), index=True)
    exercise_slug: Mapped[str] = mapped_column(ForeignKey("exercises.slug"), index=True)
    exercise_version: Mapped[int] = mapped_column(Integer)  # what it grades against, whatever is published later
    title: Mapped[str] = mapped_column(String(500))
    opens_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    due_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    late_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    late_policy: Mapped[str] = mapped_column(String(20), default="none")
    late_percent: Mapped[float] = mapped_column(Float, default=0.0)
    late_cap: Mapped[float | None] = mapped_column(Float)
    attempts: Mapped[int | None] = mapped_column(Integer)
    cooldown_seconds: Mapped[int] = mapped_column(Integer, default=0)
    counts: Mapped[str] = mapped_column(String(20), default="best")
    feedback: Mapped[str] = mapped_column(String(20), default="immediate")
    # Each student's minutes from their start (AssignmentStart); None: untimed.
    time_limit_minutes: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now, onupdate=now)


class AssignmentStart(Base):
    """When a student started a timed assignment: their clock runs from here. Recorded once
    (the unique pair makes a second start lose the race) and never moved."""

    __tablename__ = "assignment_starts"
    __table_args__ = (UniqueConstraint("assignment_id", "user_id", name="uq_assignment_starts_assignment_user"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    assignment_id: Mapped[int] = mapped_column(ForeignKey("assignments.id", ondelete="CASCADE"), index=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class Extension(Base):
    """A student's own due date, extra attempts and (on a timed assignment) extra minutes on
    one assignment, with the reason, which the student sees."""

    __tablename__ = "extensions"
    __table_args__ = (UniqueConstraint("assignment_id", "user_id", name="uq_extensions_assignment_user"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    assignment_id: Mapped[int] = mapped_column(ForeignKey("assignments.id", ondelete="CASCADE"), index=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    due_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    extra_attempts: Mapped[int] = mapped_column(Integer, default=0)
    extra_minutes: Mapped[int] = mapped_column(Integer, default=0, server_default="0")  # on a timed assignment's limit
    reason: Mapped[str] = mapped_column(Text, default="")
    granted_by: Mapped[str] = mapped_column(String(200), default="")  # a user's name or e-mail, or "API key <prefix>"
    granted_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now, onupdate=now)


class ScoreOverride(Base):
    """A score staff set by hand for one student and assignment: it replaces the one the
    rules would count, and is shown as set, by whom, when and why."""

    __tablename__ = "score_overrides"
    __table_args__ = (UniqueConstraint("assignment_id", "user_id", name="uq_score_overrides_assignment_user"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    assignment_id: Mapped[int] = mapped_column(ForeignKey("assignments.id", ondelete="CASCADE"), index=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    score: Mapped[float] = mapped_column(Float)
    reason: Mapped[str] = mapped_column(Text)
    set_by: Mapped[str] = mapped_column(String(200), default="")
    set_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now, onupdate=now)


class Revocation(Base):
    """An extension or a score set by hand that staff took back: what it gave, who granted it
    and when, and who revoked it and when. The live row is gone (the student's standing no
    longer sees it); this is the assignment's history of them."""

    __tablename__ = "revocations"

    id: Mapped[int] = mapped_column(primary_key=True)
    assignment_id: Mapped[int] = mapped_column(ForeignKey("assignments.id", ondelete="CASCADE"), index=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    kind: Mapped[str] = mapped_column(String(20))  # "extension" or "override"
    # What it gave: an extension's due date, attempts and minutes; an override's score.
    due_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    extra_attempts: Mapped[int] = mapped_column(Integer, default=0)
    extra_minutes: Mapped[int] = mapped_column(Integer, default=0)
    score: Mapped[float | None] = mapped_column(Float)
    reason: Mapped[str] = mapped_column(Text, default="")
    granted_by: Mapped[str] = mapped_column(String(200), default="")
    granted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    revoked_by: Mapped[str] = mapped_column(String(200), default="")
    revoked_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)


class RegradeStatus(StrEnum):
    """running -> ready (every source graded again) -> published or discarded."""

    RUNNING = "running"
    READY = "ready"
    PUBLISHED = "published"
    DISCARDED = "discarded"


class Regrade(Base):
    """The sources of an assignment graded again against the exercise's current version,
    as new grades beside the old ones: a diff to publish (the grades then count) or discard."""

    __tablename__ = "regrades"

    id: Mapped[int] = mapped_column(primary_key=True)
    assignment_id: Mapped[int] = mapped_column(ForeignKey("assignments.id", ondelete="CASCADE"), index=True)
    version: Mapped[int] = mapped_column(Integer)  # the exercise version graded against
    status: Mapped[str] = mapped_column(String(20), default=RegradeStatus.RUNNING, index=True)
    requested_by: Mapped[str] = mapped_column(String(200), default="")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)
    decided_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class RegradeGrade(Base):
    """One source graded again: its new grade, and the grade it had when the regrade began
    (kept here, so that publishing the new one overwrites nothing that is lost)."""

    __tablename__ = "regrade_grades"
    __table_args__ = (UniqueConstraint("regrade_id", "submission_id", name="uq_regrade_grades_regrade_submission"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    regrade_id: Mapped[int] = mapped_column(ForeignKey("regrades.id", ondelete="CASCADE"), index=True)
    submission_id: Mapped[str] = mapped_column(ForeignKey("submissions.id"), index=True)
    status: Mapped[str] = mapped_column(String(20), default="queued", index=True)  # as a submission's
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    deadline: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), index=True)
    failure_reason: Mapped[str | None] = mapped_column(Text)
    score: Mapped[float | None] = mapped_column(Float)
    max_score: Mapped[float | None] = mapped_column(Float)
    report: Mapped[dict | None] = mapped_column(JSON)
    old_version: Mapped[int] = mapped_column(Integer)
    old_score: Mapped[float | None] = mapped_column(Float)
    old_max_score: Mapped[float | None] = mapped_column(Float)
    old_report: Mapped[dict | None] = mapped_column(JSON)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class SubmissionComment(Base):
    """A word from a course's staff on one of its submissions: on the whole of it (``line``
    None) or on one line of its source. Its student is shown it as the rest of the feedback,
    held where the assignment holds that (grader.courses.comments)."""

    __tablename__ = "submission_comments"

    id: Mapped[int] = mapped_column(primary_key=True)
    submission_id: Mapped[str] = mapped_column(ForeignKey("submissions.id", ondelete="CASCADE"), index=True)
    # The staff member who wrote it; None where a service's API key did (or the account is gone).
    author_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"), index=True)
    author_name: Mapped[str] = mapped_column(String(200), default="")  # as the student is shown it
    line: Mapped[int | None] = mapped_column(Integer)  # of the graded source, from 1
    body: Mapped[str] = mapped_column(Text)  # plain text
    # Whether its student has been told by mail, or is not to be: False while their feedback is held.
    told: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)
