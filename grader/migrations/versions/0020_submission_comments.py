"""Staff comments on a submission: on the whole of it or on one line of its source

Revision ID: 0020
Revises: 0019
"""
import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "submission_comments",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("submission_id", sa.String(32), sa.ForeignKey("submissions.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("author_id", sa.Integer, sa.ForeignKey("users.id", ondelete="SET NULL")),
        sa.Column("author_name", sa.String(200), nullable=False),
        sa.Column("line", sa.Integer),
        sa.Column("body", sa.Text, nullable=False),
        sa.Column("told", sa.Boolean, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_submission_comments_submission_id", "submission_comments", ["submission_id"])
    op.create_index("ix_submission_comments_author_id", "submission_comments", ["author_id"])


def downgrade() -> None:
    op.drop_table("submission_comments")
