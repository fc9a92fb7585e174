"""LMS registrations: disabled, deleted (the row kept), and the history of their changes

A registration may be disabled (its launches refused, nothing sent to it) or deleted: the
row stays, for the courses, users and work keyed by it, and its issuer and client id may
be registered again, so they are unique only among the registrations not deleted. Every
registration made before this revision gets its "created" entry in the history.

Revision ID: 0023
Revises: 0022
"""
import sqlalchemy as sa
from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)
LIVE = sa.text("deleted_at IS NULL")

_PLATFORMS = sa.table("lti_platforms", sa.column("id", sa.Integer), sa.column("created_by", sa.Integer),
                      sa.column("created_at", TS))
_CHANGES = sa.table("lti_platform_changes", sa.column("platform_id", sa.Integer), sa.column("action", sa.String),
                    sa.column("fields", sa.JSON), sa.column("actor_id", sa.Integer), sa.column("at", TS))


def upgrade() -> None:
    # On SQLite the table is copied anew (env.py keeps foreign keys off meanwhile, so the
    # courses and links that point at it stay).
    with op.batch_alter_table("lti_platforms") as batch:
        batch.add_column(sa.Column("disabled_at", TS))
        batch.add_column(sa.Column("deleted_at", TS))
        batch.drop_constraint("uq_lti_platforms_issuer_client", type_="unique")
    op.create_index("uq_lti_platforms_live_issuer_client", "lti_platforms", ["issuer", "client_id"], unique=True,
                    sqlite_where=LIVE, postgresql_where=LIVE)
    op.create_table(
        "lti_platform_changes",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("platform_id", sa.Integer, sa.ForeignKey("lti_platforms.id", ondelete="CASCADE"), nullable=False,
                  index=True),
        sa.Column("action", sa.String(20), nullable=False),
        sa.Column("fields", sa.JSON, nullable=False),
        sa.Column("actor_id", sa.Integer, sa.ForeignKey("users.id")),
        sa.Column("at", TS, nullable=False),
    )
    conn = op.get_bind()
    made = conn.execute(sa.select(_PLATFORMS.c.id, _PLATFORMS.c.created_by, _PLATFORMS.c.created_at)).all()
    if made:
        conn.execute(_CHANGES.insert(), [dict(platform_id=pid, action="created", fields={}, actor_id=by, at=at)
                                         for pid, by, at in made])


def downgrade() -> None:
    conn = op.get_bind()
    if conn.execute(sa.text("SELECT COUNT(*) FROM lti_platforms WHERE deleted_at IS NOT NULL")).scalar():
        # Their courses and work point at them; dropping the rows would take those along.
        raise RuntimeError("deleted LMS registrations exist: revision 0022 cannot hold them (its issuer and "
                           "client id are unique across every registration)")
    op.drop_table("lti_platform_changes")
    op.drop_index("uq_lti_platforms_live_issuer_client", "lti_platforms")
    with op.batch_alter_table("lti_platforms") as batch:
        batch.create_unique_constraint("uq_lti_platforms_issuer_client", ["issuer", "client_id"])
        batch.drop_column("deleted_at")
        batch.drop_column("disabled_at")
