"""practice runs: a source run against an exercise's visible tests alone, apart from submissions

Revision ID: 0012
Revises: 0011
"""
import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "practice_runs",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("user_id", sa.Integer, sa.ForeignKey("users.id"), nullable=False, index=True),
        sa.Column("exercise_slug", sa.String(100), sa.ForeignKey("exercises.slug"), nullable=False),
        sa.Column("exercise_version", sa.Integer, nullable=False),
        sa.Column("assignment_id", sa.Integer, sa.ForeignKey("assignments.id")),
        sa.Column("source", sa.Text, nullable=False),
        sa.Column("notebook", sa.JSON),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("failure_reason", sa.Text),
        sa.Column("progress_done", sa.Integer, nullable=False),
        sa.Column("progress_total", sa.Integer, nullable=False),
        sa.Column("score", sa.Float),
        sa.Column("max_score", sa.Float),
        sa.Column("report", sa.JSON),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("finished_at", TS),
        sa.Column("deadline", TS, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("practice_runs")
