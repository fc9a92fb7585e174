"""Timed assignments: a time limit counted from when each student starts, and extra minutes

An assignment may give each student ``time_limit_minutes`` from the moment they start it
(recorded once per student and assignment, never moved); an extension may add minutes to
one student's limit. Every assignment made before this revision stays untimed.

Revision ID: 0022
Revises: 0021
"""
import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("assignments", sa.Column("time_limit_minutes", sa.Integer))
    op.add_column("extensions", sa.Column("extra_minutes", sa.Integer, nullable=False, server_default="0"))
    op.create_table(
        "assignment_starts",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("assignment_id", sa.Integer, sa.ForeignKey("assignments.id", ondelete="CASCADE"), nullable=False,
                  index=True),
        sa.Column("user_id", sa.Integer, sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False, index=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("assignment_id", "user_id", name="uq_assignment_starts_assignment_user"),
    )


def downgrade() -> None:
    op.drop_table("assignment_starts")
    # Plain ALTER TABLE (SQLite 3.35 and later drop a column in place), as 0021 does: a batch
    # copy of these tables would break the foreign keys that point at them.
    op.drop_column("extensions", "extra_minutes")
    op.drop_column("assignments", "time_limit_minutes")
