"""Courses (LTI contexts), their members and the exercises placed in them; the admin role; LMS users keyed by their platform registration instead of an issuer string

Revision ID: 0004
Revises: 0003
"""
import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)

users = sa.table("users", sa.column("id", sa.Integer), sa.column("role", sa.String),
                 sa.column("password_hash", sa.String), sa.column("external_id", sa.String))
platforms = sa.table("lti_platforms", sa.column("id", sa.Integer), sa.column("issuer", sa.String))
targets = sa.table("lti_grade_targets", sa.column("user_id", sa.Integer), sa.column("platform_id", sa.Integer),
                   sa.column("lti_user_id", sa.String))


def upgrade() -> None:
    op.create_table(
        "courses",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("platform_id", sa.Integer, sa.ForeignKey("lti_platforms.id", ondelete="CASCADE")),
        sa.Column("context_id", sa.String(500)),
        sa.Column("title", sa.String(500), nullable=False),
        sa.Column("code", sa.String(200), nullable=False),
        sa.Column("time_zone", sa.String(64)),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
        sa.UniqueConstraint("platform_id", "context_id", name="uq_courses_platform_context"),
    )
    op.create_table(
        "course_members",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("course_id", sa.Integer, sa.ForeignKey("courses.id", ondelete="CASCADE"), nullable=False,
                  index=True),
        sa.Column("user_id", sa.Integer, sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False,
                  index=True),
        sa.Column("role", sa.String(20), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
        sa.UniqueConstraint("course_id", "user_id", name="uq_course_members_course_user"),
    )
    op.create_table(
        "course_exercises",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("course_id", sa.Integer, sa.ForeignKey("courses.id", ondelete="CASCADE"), nullable=False,
                  index=True),
        sa.Column("exercise_slug", sa.String(100), sa.ForeignKey("exercises.slug"), nullable=False, index=True),
        sa.Column("created_at", TS, nullable=False),
        sa.UniqueConstraint("course_id", "exercise_slug", name="uq_course_exercises_course_slug"),
    )

    bind = op.get_bind()
    # The site-wide powers the instructor role had are the administrator's now: local
    # accounts keep them; LMS and API users (no password) lose the role their launches gave.
    bind.execute(users.update().where(users.c.role == "instructor", users.c.password_hash.is_not(None))
                 .values(role="admin"))
    bind.execute(users.update().where(users.c.role == "instructor", users.c.password_hash.is_(None))
                 .values(role="student"))
    # LMS users: "<issuer>|<sub>" becomes "lti:<platform id>|<sub>", by the platform their
    # grade targets were recorded for, else the only registration of their issuer.
    known = {}
    for user_id, platform_id, sub in bind.execute(sa.select(targets.c.user_id, targets.c.platform_id,
                                                            targets.c.lti_user_id)):
        known.setdefault(user_id, (platform_id, sub))
    by_issuer = {}
    for platform_id, issuer in bind.execute(sa.select(platforms.c.id, platforms.c.issuer)):
        by_issuer.setdefault(issuer, []).append(platform_id)
    for user_id, external_id in bind.execute(sa.select(users.c.id, users.c.external_id).where(
            users.c.external_id.is_not(None), users.c.password_hash.is_(None))).all():
        issuer, _, sub = external_id.rpartition("|")
        new = None
        if user_id in known and known[user_id][1] == sub and issuer in by_issuer:
            new = f"lti:{known[user_id][0]}|{sub}"
        elif len(by_issuer.get(issuer, ())) == 1:
            new = f"lti:{by_issuer[issuer][0]}|{sub}"
        if new and len(new) <= 500:
            bind.execute(users.update().where(users.c.id == user_id).values(external_id=new))


def downgrade() -> None:
    bind = op.get_bind()
    issuers = dict(bind.execute(sa.select(platforms.c.id, platforms.c.issuer)).all())
    for user_id, external_id in bind.execute(sa.select(users.c.id, users.c.external_id).where(
            users.c.external_id.like("lti:%"))).all():
        platform, _, sub = external_id[4:].partition("|")
        if platform.isdigit() and int(platform) in issuers:
            bind.execute(users.update().where(users.c.id == user_id)
                         .values(external_id=f"{issuers[int(platform)]}|{sub}"))
    bind.execute(users.update().where(users.c.role == "admin").values(role="instructor"))
    op.drop_table("course_exercises")
    op.drop_table("course_members")
    op.drop_table("courses")
