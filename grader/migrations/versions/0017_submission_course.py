"""The LMS course a submission with no assignment was made through (its link), whose staff see it

Revision ID: 0017
Revises: 0016
"""
import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("submissions") as batch:
        batch.add_column(sa.Column("course_id", sa.Integer))
        batch.create_foreign_key("fk_submissions_course_id", "courses", ["course_id"], ["id"], ondelete="SET NULL")
        batch.create_index("ix_submissions_course_id", ["course_id"])


def downgrade() -> None:
    with op.batch_alter_table("submissions") as batch:
        batch.drop_index("ix_submissions_course_id")
        batch.drop_constraint("fk_submissions_course_id", type_="foreignkey")
        batch.drop_column("course_id")
