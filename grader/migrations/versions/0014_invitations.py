"""course invitation links, and accounts their owners made through one

Revision ID: 0014
Revises: 0013
"""
import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "course_invitations",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("course_id", sa.Integer, sa.ForeignKey("courses.id", ondelete="CASCADE"), nullable=False,
                  index=True),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("prefix", sa.String(16), nullable=False),
        sa.Column("role", sa.String(20), nullable=False),
        sa.Column("expires_at", TS, nullable=False),
        sa.Column("max_uses", sa.Integer),
        sa.Column("uses", sa.Integer, nullable=False),
        sa.Column("created_by", sa.String(200), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.Column("revoked_at", TS),
    )
    op.add_column("users", sa.Column("self_registered", sa.Boolean, nullable=False, server_default=sa.false()))


def downgrade() -> None:
    op.drop_table("course_invitations")
    with op.batch_alter_table("users") as batch:
        batch.drop_column("self_registered")
