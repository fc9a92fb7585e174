"""What the LTI tool stores: its own key pairs, the platforms (LMSs) it trusts, which
exercise each LMS link opens, where each student's score goes, and where each LMS
course's roster is read."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, DateTime, Float, ForeignKey, Index, Integer, String, Text, UniqueConstraint, text
from sqlalchemy.orm import Mapped, mapped_column, relationship

from grader.db import Base
from grader.db import now


class LtiKey(Base):
    """An RSA key pair the tool signs with. The newest is current; the one before it
    stays in the JWKS for a while, so that tokens signed just before a rotation verify."""

    __tablename__ = "lti_keys"

    id: Mapped[int] = mapped_column(primary_key=True)
    kid: Mapped[str] = mapped_column(String(100), unique=True)
    private_pem: Mapped[str] = mapped_column(Text)
    public_pem: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)


class LtiPlatform(Base):
    """A registered LMS: what an administrator copies from its tool registration. Only
    ``created_by`` (its owner) or an administrator edits it; the CLI's have no owner.

    ``disabled_at``: its launches are refused and nothing is sent to it until enabled again.
    ``deleted_at``: gone from the pages, its launches refused as from an unknown LMS, its
    issuer and client id free to be registered anew; the row stays, so that its courses,
    users and their work (keyed by it) and its history do too."""

    __tablename__ = "lti_platforms"
    # Unique among the registrations not deleted only (a partial index on both databases).
    __table_args__ = (Index("uq_lti_platforms_live_issuer_client", "issuer", "client_id", unique=True,
                            sqlite_where=text("deleted_at IS NULL"), postgresql_where=text("deleted_at IS NULL")),)

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), default="")
    issuer: Mapped[str] = mapped_column(String(500))
    client_id: Mapped[str] = mapped_column(String(500))
    deployment_ids: Mapped[list] = mapped_column(JSON, default=list)
    auth_login_url: Mapped[str] = mapped_column(String(2000))
    auth_token_url: Mapped[str] = mapped_column(String(2000))
    jwks_url: Mapped[str] = mapped_column(String(2000))
    created_by: Mapped[int | None] = mapped_column(ForeignKey("users.id"))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)
    disabled_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    deleted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class LtiPlatformChange(Base):
    """One change to a registration, kept for good: ``action`` created, edited, disabled,
    enabled or deleted; ``fields`` what an edit changed, {field: [before, after]};
    ``actor_id`` who (None: the command line)."""

    __tablename__ = "lti_platform_changes"

    id: Mapped[int] = mapped_column(primary_key=True)
    platform_id: Mapped[int] = mapped_column(ForeignKey("lti_platforms.id", ondelete="CASCADE"), index=True)
    action: Mapped[str] = mapped_column(String(20))
    fields: Mapped[dict] = mapped_column(JSON, default=dict)
    actor_id: Mapped[int | None] = mapped_column(ForeignKey("users.id"))
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)


class LtiResourceLink(Base):
    """An LMS link (its resource link id, stable per platform) and the exercise it opens,
    or the assignment of the link's course (whose rules then decide the score it gets)."""

    __tablename__ = "lti_resource_links"
    __table_args__ = (UniqueConstraint("platform_id", "resource_link_id", name="uq_lti_links_platform_link"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    platform_id: Mapped[int] = mapped_column(ForeignKey("lti_platforms.id", ondelete="CASCADE"))
    resource_link_id: Mapped[str] = mapped_column(String(500))
    exercise_slug: Mapped[str] = mapped_column(ForeignKey("exercises.slug"))
    assignment_id: Mapped[int | None] = mapped_column(ForeignKey("assignments.id"))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)


class LtiGradeTarget(Base):
    """Where a user's score on an exercise is published: a line item of a platform (AGS),
    for the platform's user id ``lti_user_id``. Recorded at each launch.

    A placement whose launch names only the context's line item container leaves
    ``lineitem_url`` empty: the score task finds or creates the resource link's line item
    in ``lineitems_url`` and stores it here.

    ``held_until``: the line item was told only "pending" because the student's hidden
    results on the assignment are held; at this time (their release) it gets the score
    that counts (grader.lti.tasks.release_held). None: nothing held, or already sent."""

    __tablename__ = "lti_grade_targets"
    __table_args__ = (UniqueConstraint("user_id", "exercise_slug", "platform_id", "lineitem_url",
                                       name="uq_lti_grade_targets"),
                      # lineitem_url may be NULL (not yet known), and NULLs never collide
                      UniqueConstraint("user_id", "exercise_slug", "platform_id", "lineitems_url",
                                       "resource_link_id", name="uq_lti_grade_targets_link"))

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    exercise_slug: Mapped[str] = mapped_column(ForeignKey("exercises.slug"))
    # An assignment's line item gets the score that counts under its rules; None: the exercise's.
    assignment_id: Mapped[int | None] = mapped_column(ForeignKey("assignments.id"))
    platform_id: Mapped[int] = mapped_column(ForeignKey("lti_platforms.id", ondelete="CASCADE"))
    lineitem_url: Mapped[str | None] = mapped_column(String(2000))
    lineitems_url: Mapped[str | None] = mapped_column(String(2000))
    resource_link_id: Mapped[str | None] = mapped_column(String(500))
    lti_user_id: Mapped[str] = mapped_column(String(500))
    scopes: Mapped[list] = mapped_column(JSON, default=list)
    held_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), index=True)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now, onupdate=now)

    platform: Mapped[LtiPlatform] = relationship()


class LtiScorePost(Base):
    """One attempt at publishing a score: what was sent and what the platform said.
    ``submission_id`` is the grade it went with; None: a score set by hand for a student
    with no grade. No score: "pending" was sent, the hidden results being held."""

    __tablename__ = "lti_score_posts"

    id: Mapped[int] = mapped_column(primary_key=True)
    target_id: Mapped[int] = mapped_column(ForeignKey("lti_grade_targets.id", ondelete="CASCADE"), index=True)
    submission_id: Mapped[str | None] = mapped_column(ForeignKey("submissions.id"), index=True)
    score_given: Mapped[float | None] = mapped_column(Float)
    score_maximum: Mapped[float | None] = mapped_column(Float)
    attempt: Mapped[int] = mapped_column(Integer, default=1)
    outcome: Mapped[str] = mapped_column(String(20))  # sent, stale, error
    status_code: Mapped[int | None] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)


class LtiRoster(Base):
    """An LMS course's roster service (NRPS): the memberships URL its launches name, and
    what the last sync did. A sync that failed keeps the last good one's time and counts
    beside its error."""

    __tablename__ = "lti_rosters"

    id: Mapped[int] = mapped_column(primary_key=True)
    course_id: Mapped[int] = mapped_column(ForeignKey("courses.id", ondelete="CASCADE"), unique=True)
    memberships_url: Mapped[str] = mapped_column(String(2000))
    requested_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))  # by a launch, automatically
    synced_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))  # the last good sync ended
    added: Mapped[int] = mapped_column(Integer, default=0)
    changed: Mapped[int] = mapped_column(Integer, default=0)  # roles changed
    removed: Mapped[int] = mapped_column(Integer, default=0)
    failed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))  # None once a sync succeeds
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)
