"""uploaded exercise bundles

Revision ID: 0002
Revises: 0001
"""
import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "bundles",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("slug", sa.String(100), nullable=False, index=True),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("device", sa.String(10), nullable=False),
        sa.Column("archive", sa.LargeBinary, nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("check_rows", sa.JSON),
        sa.Column("error", sa.Text),
        sa.Column("uploaded_by", sa.Integer, sa.ForeignKey("users.id")),
        sa.Column("uploaded_at", TS, nullable=False),
        sa.Column("checked_at", TS),
    )
    with op.batch_alter_table("exercises") as table:
        table.add_column(sa.Column("bundle_id", sa.Integer))
        table.create_foreign_key("fk_exercises_bundle_id", "bundles", ["bundle_id"], ["id"])


def downgrade() -> None:
    with op.batch_alter_table("exercises") as table:
        table.drop_constraint("fk_exercises_bundle_id", type_="foreignkey")
        table.drop_column("bundle_id")
    op.drop_table("bundles")
