"""personal tokens: an API key that acts as one user alone (the notebook client's)

Revision ID: 0013
Revises: 0012
"""
import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # A plain ADD COLUMN, as in 0010: SQLite takes the reference only with the column itself.
    if op.get_bind().dialect.name == "sqlite":
        if "user_id" not in {c["name"] for c in sa.inspect(op.get_bind()).get_columns("api_keys")}:
            op.execute("ALTER TABLE api_keys ADD COLUMN user_id INTEGER REFERENCES users(id) ON DELETE CASCADE")
    else:
        op.add_column("api_keys", sa.Column("user_id", sa.Integer, sa.ForeignKey(
            "users.id", ondelete="CASCADE", name="fk_api_keys_user_id")))
    op.create_index("ix_api_keys_user_id", "api_keys", ["user_id"])


def downgrade() -> None:
    # Without the column a personal token would be a key of no one: revoked first. (SQLite
    # drops no column that holds a reference, so there it stays, emptied.)
    op.execute("UPDATE api_keys SET revoked_at = COALESCE(revoked_at, CURRENT_TIMESTAMP), user_id = NULL "
               "WHERE user_id IS NOT NULL")
    op.drop_index("ix_api_keys_user_id", table_name="api_keys")
    if op.get_bind().dialect.name != "sqlite":
        op.drop_column("api_keys", "user_id")
