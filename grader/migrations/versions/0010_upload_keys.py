"""upload keys: the API key an uploaded bundle came from, which alone may publish its next versions

Revision ID: 0010
Revises: 0009
"""
import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # A plain ADD COLUMN, as in 0007: a batch copy of uploads would trip over exercises'
    # reference to it; SQLite takes the reference only with the column itself.
    if op.get_bind().dialect.name == "sqlite":
        if "api_key_id" not in {c["name"] for c in sa.inspect(op.get_bind()).get_columns("uploads")}:
            op.execute("ALTER TABLE uploads ADD COLUMN api_key_id INTEGER REFERENCES api_keys(id) ON DELETE SET NULL")
    else:
        op.add_column("uploads", sa.Column("api_key_id", sa.Integer, sa.ForeignKey(
            "api_keys.id", ondelete="SET NULL", name="fk_uploads_api_key_id")))
    op.create_index("ix_uploads_api_key_id", "uploads", ["api_key_id"])


def downgrade() -> None:
    op.drop_index("ix_uploads_api_key_id", table_name="uploads")
    if op.get_bind().dialect.name == "sqlite":
        op.execute("UPDATE uploads SET api_key_id = NULL")  # SQLite drops no column that holds a reference
    else:
        op.drop_column("uploads", "api_key_id")
