"""notebooks: a submission made as a notebook keeps the map of its graded lines to the notebook's cells

Revision ID: 0011
Revises: 0010
"""
import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # NULL for every submission made so far (and for every .py): nothing to fill in.
    op.add_column("submissions", sa.Column("notebook", sa.JSON))


def downgrade() -> None:
    op.drop_column("submissions", "notebook")
