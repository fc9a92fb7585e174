"""Exercise drafts: an uploaded exercise is a draft until released to the catalogue

Every exercise published before this revision was shown to everyone: it stays released.
An upload's check keeps the warnings it found beside its table (a bundle still the
template, a title another released exercise has). Personal tokens read the exercises
their owner may see (the scope exercises:read).

Revision ID: 0021
Revises: 0020
"""
import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

_KEYS = sa.table("api_keys", sa.column("id", sa.Integer), sa.column("user_id", sa.Integer),
                 sa.column("scopes", sa.JSON))
_READ = "exercises:read"


def upgrade() -> None:
    op.add_column("exercises", sa.Column("released", sa.Boolean, nullable=False, server_default=sa.true()))
    op.add_column("uploads", sa.Column("warnings", sa.JSON))
    _personal_scopes(lambda scopes: sorted({*scopes, _READ}))


def downgrade() -> None:
    _personal_scopes(lambda scopes: [s for s in scopes if s != _READ])
    # Plain ALTER TABLE (SQLite 3.35 and later drop a column in place): a batch copy of the
    # exercises table would break the submissions' and assignments' foreign keys to it.
    op.drop_column("uploads", "warnings")
    op.drop_column("exercises", "released")


def _personal_scopes(change) -> None:
    conn = op.get_bind()
    for key_id, scopes in conn.execute(sa.select(_KEYS.c.id, _KEYS.c.scopes).where(_KEYS.c.user_id.is_not(None))):
        conn.execute(_KEYS.update().where(_KEYS.c.id == key_id).values(scopes=change(scopes or [])))
