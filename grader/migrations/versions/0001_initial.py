"""users, exercises, submissions, api keys

Revision ID: 0001
Revises:
"""
import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "users",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("email", sa.String(320), unique=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("role", sa.String(20), nullable=False),
        sa.Column("password_hash", sa.String(300)),
        sa.Column("external_id", sa.String(500), unique=True),
        sa.Column("created_at", TS, nullable=False),
    )
    op.create_table(
        "exercises",
        sa.Column("slug", sa.String(100), primary_key=True),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("title", sa.JSON, nullable=False),
        sa.Column("device", sa.String(10), nullable=False),
        sa.Column("max_score", sa.Float, nullable=False),
        sa.Column("functions", sa.JSON, nullable=False),
        sa.Column("published", sa.Boolean, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
    )
    op.create_table(
        "submissions",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("user_id", sa.Integer, sa.ForeignKey("users.id"), nullable=False, index=True),
        sa.Column("exercise_slug", sa.String(100), sa.ForeignKey("exercises.slug"), nullable=False, index=True),
        sa.Column("exercise_version", sa.Integer, nullable=False),
        sa.Column("source", sa.Text, nullable=False),
        sa.Column("status", sa.String(20), nullable=False, index=True),
        sa.Column("failure_reason", sa.Text),
        sa.Column("progress_done", sa.Integer, nullable=False),
        sa.Column("progress_total", sa.Integer, nullable=False),
        sa.Column("score", sa.Float),
        sa.Column("max_score", sa.Float),
        sa.Column("report", sa.JSON),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("created_at", TS, nullable=False, index=True),
        sa.Column("started_at", TS),
        sa.Column("finished_at", TS),
        sa.Column("deadline", TS, index=True),
    )
    op.create_table(
        "api_keys",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("prefix", sa.String(16), unique=True, nullable=False),
        sa.Column("key_hash", sa.String(128), nullable=False),
        sa.Column("scopes", sa.JSON, nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("created_by", sa.Integer, sa.ForeignKey("users.id")),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("revoked_at", TS),
    )


def downgrade() -> None:
    for table in ("api_keys", "submissions", "exercises", "users"):
        op.drop_table(table)
