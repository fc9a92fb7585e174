"""regrades: an assignment's sources graded again beside their old grades, to publish or discard

Revision ID: 0009
Revises: 0008
"""
import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "regrades",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("assignment_id", sa.Integer, sa.ForeignKey("assignments.id", ondelete="CASCADE"), nullable=False,
                  index=True),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("status", sa.String(20), nullable=False, index=True),
        sa.Column("requested_by", sa.String(200), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("decided_at", TS),
    )
    op.create_table(
        "regrade_grades",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("regrade_id", sa.Integer, sa.ForeignKey("regrades.id", ondelete="CASCADE"), nullable=False,
                  index=True),
        sa.Column("submission_id", sa.String(32), sa.ForeignKey("submissions.id"), nullable=False, index=True),
        sa.Column("status", sa.String(20), nullable=False, index=True),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("deadline", TS, index=True),
        sa.Column("failure_reason", sa.Text),
        sa.Column("score", sa.Float), sa.Column("max_score", sa.Float), sa.Column("report", sa.JSON),
        sa.Column("old_version", sa.Integer, nullable=False),
        sa.Column("old_score", sa.Float), sa.Column("old_max_score", sa.Float), sa.Column("old_report", sa.JSON),
        sa.Column("finished_at", TS),
        sa.UniqueConstraint("regrade_id", "submission_id", name="uq_regrade_grades_regrade_submission"),
    )


def downgrade() -> None:
    op.drop_table("regrade_grades")
    op.drop_table("regrades")
