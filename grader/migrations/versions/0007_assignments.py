"""assignments (an exercise in a course at a pinned version, with its due date and rules), extensions, score overrides; submissions made to an assignment; courses an API key made

Revision ID: 0007
Revises: 0006
"""
import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "assignments",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("course_id", sa.Integer, sa.ForeignKey("courses.id", ondelete="CASCADE"), nullable=False,
                  index=True),
        sa.Column("exercise_slug", sa.String(100), sa.ForeignKey("exercises.slug"), nullable=False, index=True),
        sa.Column("exercise_version", sa.Integer, nullable=False),
        sa.Column("title", sa.String(500), nullable=False),
        sa.Column("opens_at", TS),
        sa.Column("due_at", TS, nullable=False),
        sa.Column("late_until", TS),
        sa.Column("late_policy", sa.String(20), nullable=False),
        sa.Column("late_percent", sa.Float, nullable=False),
        sa.Column("late_cap", sa.Float),
        sa.Column("attempts", sa.Integer),
        sa.Column("cooldown_seconds", sa.Integer, nullable=False),
        sa.Column("counts", sa.String(20), nullable=False),
        sa.Column("feedback", sa.String(20), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
    )
    for table, columns in (
        ("extensions", [sa.Column("due_at", TS), sa.Column("extra_attempts", sa.Integer, nullable=False),
                        sa.Column("reason", sa.Text, nullable=False),
                        sa.Column("granted_by", sa.String(200), nullable=False),
                        sa.Column("granted_at", TS, nullable=False)]),
        ("score_overrides", [sa.Column("score", sa.Float, nullable=False), sa.Column("reason", sa.Text, nullable=False),
                             sa.Column("set_by", sa.String(200), nullable=False),
                             sa.Column("set_at", TS, nullable=False)])):
        op.create_table(
            table,
            sa.Column("id", sa.Integer, primary_key=True),
            sa.Column("assignment_id", sa.Integer, sa.ForeignKey("assignments.id", ondelete="CASCADE"),
                      nullable=False, index=True),
            sa.Column("user_id", sa.Integer, sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False,
                      index=True),
            *columns,
            sa.UniqueConstraint("assignment_id", "user_id", name=f"uq_{table}_assignment_user"),
        )
    # A plain ADD COLUMN (a batch copy of a table others point at would trip over their
    # foreign keys); SQLite takes the reference only with the column itself.
    for table, column, parent, on_delete in (("submissions", "assignment_id", "assignments", None),
                                             ("courses", "api_key_id", "api_keys", "SET NULL")):
        if op.get_bind().dialect.name == "sqlite":
            if column not in {c["name"] for c in sa.inspect(op.get_bind()).get_columns(table)}:  # a downgrade keeps it
                op.execute(f"ALTER TABLE {table} ADD COLUMN {column} INTEGER REFERENCES {parent}(id)"
                           + (f" ON DELETE {on_delete}" if on_delete else ""))
        else:
            op.add_column(table, sa.Column(column, sa.Integer, sa.ForeignKey(
                f"{parent}.id", ondelete=on_delete, name=f"fk_{table}_{column}")))
        op.create_index(f"ix_{table}_{column}", table, [column])


def downgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    for table, column in (("courses", "api_key_id"), ("submissions", "assignment_id")):
        op.drop_index(f"ix_{table}_{column}", table_name=table)
        if sqlite:
            # SQLite drops no column that holds a reference: it stays, empty.
            op.execute(f"UPDATE {table} SET {column} = NULL")
        else:
            op.drop_column(table, column)
    op.drop_table("score_overrides")
    op.drop_table("extensions")
    op.drop_table("assignments")
