"""Outgoing mail and its tries, links mailed to get into an account, and each user's language

Revision ID: 0018
Revises: 0017
"""
import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "mails",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("kind", sa.String(40), nullable=False),
        sa.Column("to_address", sa.String(320), nullable=False),
        sa.Column("user_id", sa.Integer, sa.ForeignKey("users.id", ondelete="SET NULL")),
        sa.Column("language", sa.String(8), nullable=False),
        sa.Column("subject", sa.String(300), nullable=False),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("html", sa.Text, nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("has_link", sa.Boolean, nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("last_error", sa.String(2000)),
        sa.Column("unsubscribe", sa.String(500)),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("sent_at", sa.DateTime(timezone=True)),
    )
    op.create_index("ix_mails_to_address", "mails", ["to_address"])
    op.create_index("ix_mails_user_id", "mails", ["user_id"])
    op.create_index("ix_mails_status", "mails", ["status"])
    op.create_index("ix_mails_created_at", "mails", ["created_at"])
    op.create_table(
        "mail_attempts",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("mail_id", sa.Integer, sa.ForeignKey("mails.id", ondelete="CASCADE"), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ok", sa.Boolean, nullable=False),
        sa.Column("error", sa.String(2000)),
        sa.Column("duration_ms", sa.Integer),
    )
    op.create_index("ix_mail_attempts_mail_id", "mail_attempts", ["mail_id"])
    op.create_table(
        "mail_once",
        sa.Column("key", sa.String(200), primary_key=True),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "account_links",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("purpose", sa.String(20), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("user_id", sa.Integer, sa.ForeignKey("users.id", ondelete="CASCADE")),
        sa.Column("email", sa.String(320), nullable=False),
        sa.Column("data", sa.JSON, nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("used_at", sa.DateTime(timezone=True)),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_account_links_user_id", "account_links", ["user_id"])
    with op.batch_alter_table("users") as batch:
        batch.add_column(sa.Column("language", sa.String(8)))
        batch.add_column(sa.Column("mail_off", sa.JSON, nullable=False, server_default="[]"))
        batch.add_column(sa.Column("mail_key", sa.String(32)))


def downgrade() -> None:
    with op.batch_alter_table("users") as batch:
        batch.drop_column("mail_key")
        batch.drop_column("mail_off")
        batch.drop_column("language")
    op.drop_table("account_links")
    op.drop_table("mail_once")
    op.drop_table("mail_attempts")
    op.drop_table("mails")
