"""an LMS link may open an assignment of its course, and a score target belong to one

Revision ID: 0008
Revises: 0007
"""
import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

COLUMNS = (("lti_resource_links", "assignment_id"), ("lti_grade_targets", "assignment_id"))


def upgrade() -> None:
    # As in 0007: a plain ADD COLUMN; SQLite takes the reference only with the column.
    sqlite = op.get_bind().dialect.name == "sqlite"
    for table, column in COLUMNS:
        if sqlite:
            if column not in {c["name"] for c in sa.inspect(op.get_bind()).get_columns(table)}:
                op.execute(f"ALTER TABLE {table} ADD COLUMN {column} INTEGER REFERENCES assignments(id)")
        else:
            op.add_column(table, sa.Column(column, sa.Integer, sa.ForeignKey("assignments.id",
                                                                             name=f"fk_{table}_{column}")))


def downgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    for table, column in COLUMNS:
        if sqlite:
            op.execute(f"UPDATE {table} SET {column} = NULL")  # SQLite keeps the column, empty
        else:
            op.drop_column(table, column)
