"""the uploaded zips' table is named for what it holds: bundles -> uploads, exercises.bundle_id -> upload_id

Revision ID: 0006
Revises: 0005
"""
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

# Plain ALTER TABLE ... RENAME on both databases (SQLite 3.25+ rewrites the references to a
# renamed table or column itself): a batch copy of exercises would trip over the foreign
# keys that point at it.
NAMES = (("bundles", "uploads"), ("bundle_id", "upload_id"))


def upgrade() -> None:
    _rename(old=0, new=1)


def downgrade() -> None:
    _rename(old=1, new=0)


def _rename(old: int, new: int) -> None:
    (table, column) = ((pair[old], pair[new]) for pair in NAMES)
    postgres = op.get_bind().dialect.name == "postgresql"
    op.drop_index(f"ix_{table[0]}_slug", table_name=table[0])
    op.rename_table(table[0], table[1])
    op.create_index(f"ix_{table[1]}_slug", table[1], ["slug"])
    op.execute(f"ALTER TABLE exercises RENAME COLUMN {column[0]} TO {column[1]}")
    if postgres:
        # The names PostgreSQL gave the table's parts (SQLite keeps none worth renaming).
        op.execute(f"ALTER TABLE {table[1]} RENAME CONSTRAINT {table[0]}_pkey TO {table[1]}_pkey")
        op.execute(f"ALTER SEQUENCE {table[0]}_id_seq RENAME TO {table[1]}_id_seq")
        op.execute(f"ALTER TABLE exercises RENAME CONSTRAINT fk_exercises_{column[0]} TO fk_exercises_{column[1]}")
