"""A line item's score held with the hidden tests' results: when its target gets the score

Revision ID: 0016
Revises: 0015
"""
import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("lti_grade_targets", sa.Column("held_until", sa.DateTime(timezone=True)))
    op.create_index("ix_lti_grade_targets_held_until", "lti_grade_targets", ["held_until"])


def downgrade() -> None:
    op.drop_index("ix_lti_grade_targets_held_until", "lti_grade_targets")
    with op.batch_alter_table("lti_grade_targets") as batch:
        batch.drop_column("held_until")
