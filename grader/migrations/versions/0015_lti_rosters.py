"""LMS course rosters (NRPS), and a score passback with no submission (a score set by hand)

Revision ID: 0015
Revises: 0014
"""
import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "lti_rosters",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("course_id", sa.Integer, sa.ForeignKey("courses.id", ondelete="CASCADE"), nullable=False,
                  unique=True),
        sa.Column("memberships_url", sa.String(2000), nullable=False),
        sa.Column("requested_at", TS),
        sa.Column("synced_at", TS),
        sa.Column("added", sa.Integer, nullable=False),
        sa.Column("changed", sa.Integer, nullable=False),
        sa.Column("removed", sa.Integer, nullable=False),
        sa.Column("failed_at", TS),
        sa.Column("error", sa.Text),
        sa.Column("created_at", TS, nullable=False),
    )
    with op.batch_alter_table("lti_score_posts") as batch:
        batch.alter_column("submission_id", existing_type=sa.String(32), nullable=True)


def downgrade() -> None:
    op.execute("DELETE FROM lti_score_posts WHERE submission_id IS NULL")  # no grade to keep them with
    with op.batch_alter_table("lti_score_posts") as batch:
        batch.alter_column("submission_id", existing_type=sa.String(32), nullable=False)
    op.drop_table("lti_rosters")
