"""Revoked extensions and scores set by hand, kept as the assignment's history

A revoke still deletes the live row (so every rule that reads extensions and overrides
is unchanged); what it gave, who granted it and who revoked it, and when, are kept here.
Nothing revoked before this revision was kept, so the table starts empty.

Revision ID: 0024
Revises: 0023
"""
import sqlalchemy as sa
from alembic import op

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "revocations",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("assignment_id", sa.Integer, sa.ForeignKey("assignments.id", ondelete="CASCADE"), nullable=False,
                  index=True),
        sa.Column("user_id", sa.Integer, sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False, index=True),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("due_at", TS),
        sa.Column("extra_attempts", sa.Integer, nullable=False),
        sa.Column("extra_minutes", sa.Integer, nullable=False),
        sa.Column("score", sa.Float),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("granted_by", sa.String(200), nullable=False),
        sa.Column("granted_at", TS),
        sa.Column("revoked_by", sa.String(200), nullable=False),
        sa.Column("revoked_at", TS, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("revocations")
