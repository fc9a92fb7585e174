"""LTI 1.3 (tool keys, platforms, resource links, grade targets, score posts) and webhooks

Revision ID: 0003
Revises: 0002
"""
import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "lti_keys",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("kid", sa.String(100), nullable=False, unique=True),
        sa.Column("private_pem", sa.Text, nullable=False),
        sa.Column("public_pem", sa.Text, nullable=False),
        sa.Column("created_at", TS, nullable=False),
    )
    op.create_table(
        "lti_platforms",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("issuer", sa.String(500), nullable=False),
        sa.Column("client_id", sa.String(500), nullable=False),
        sa.Column("deployment_ids", sa.JSON, nullable=False),
        sa.Column("auth_login_url", sa.String(2000), nullable=False),
        sa.Column("auth_token_url", sa.String(2000), nullable=False),
        sa.Column("jwks_url", sa.String(2000), nullable=False),
        sa.Column("created_by", sa.Integer, sa.ForeignKey("users.id")),
        sa.Column("created_at", TS, nullable=False),
        sa.UniqueConstraint("issuer", "client_id", name="uq_lti_platforms_issuer_client"),
    )
    op.create_table(
        "lti_resource_links",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("platform_id", sa.Integer, sa.ForeignKey("lti_platforms.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("resource_link_id", sa.String(500), nullable=False),
        sa.Column("exercise_slug", sa.String(100), sa.ForeignKey("exercises.slug"), nullable=False),
        sa.Column("created_at", TS, nullable=False),
        sa.UniqueConstraint("platform_id", "resource_link_id", name="uq_lti_links_platform_link"),
    )
    op.create_table(
        "lti_grade_targets",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("user_id", sa.Integer, sa.ForeignKey("users.id"), nullable=False, index=True),
        sa.Column("exercise_slug", sa.String(100), sa.ForeignKey("exercises.slug"), nullable=False),
        sa.Column("platform_id", sa.Integer, sa.ForeignKey("lti_platforms.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("lineitem_url", sa.String(2000)),  # NULL: to be found in lineitems_url
        sa.Column("lineitems_url", sa.String(2000)),
        sa.Column("resource_link_id", sa.String(500)),
        sa.Column("lti_user_id", sa.String(500), nullable=False),
        sa.Column("scopes", sa.JSON, nullable=False),
        sa.Column("updated_at", TS, nullable=False),
        sa.UniqueConstraint("user_id", "exercise_slug", "platform_id", "lineitem_url",
                            name="uq_lti_grade_targets"),
        sa.UniqueConstraint("user_id", "exercise_slug", "platform_id", "lineitems_url", "resource_link_id",
                            name="uq_lti_grade_targets_link"),
    )
    op.create_table(
        "lti_score_posts",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("target_id", sa.Integer, sa.ForeignKey("lti_grade_targets.id", ondelete="CASCADE"),
                  nullable=False, index=True),
        sa.Column("submission_id", sa.String(32), sa.ForeignKey("submissions.id"), nullable=False, index=True),
        sa.Column("score_given", sa.Float),
        sa.Column("score_maximum", sa.Float),
        sa.Column("attempt", sa.Integer, nullable=False),
        sa.Column("outcome", sa.String(20), nullable=False),
        sa.Column("status_code", sa.Integer),
        sa.Column("error", sa.Text),
        sa.Column("created_at", TS, nullable=False),
    )
    op.create_table(
        "webhooks",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("api_key_id", sa.Integer, sa.ForeignKey("api_keys.id", ondelete="CASCADE"), nullable=False,
                  index=True),
        sa.Column("url", sa.String(2000), nullable=False),
        sa.Column("secret", sa.String(100), nullable=False),
        sa.Column("active", sa.Boolean, nullable=False),
        sa.Column("created_at", TS, nullable=False),
    )
    op.create_table(
        "api_submissions",
        sa.Column("submission_id", sa.String(32), sa.ForeignKey("submissions.id", ondelete="CASCADE"),
                  primary_key=True),
        sa.Column("api_key_id", sa.Integer, sa.ForeignKey("api_keys.id", ondelete="CASCADE"), nullable=False,
                  index=True),
    )
    op.create_table(
        "webhook_deliveries",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("webhook_id", sa.Integer, sa.ForeignKey("webhooks.id", ondelete="CASCADE"), nullable=False,
                  index=True),
        sa.Column("submission_id", sa.String(32), sa.ForeignKey("submissions.id", ondelete="CASCADE"),
                  nullable=False, index=True),
        sa.Column("attempt", sa.Integer, nullable=False),
        sa.Column("ok", sa.Boolean, nullable=False),
        sa.Column("status_code", sa.Integer),
        sa.Column("error", sa.Text),
        sa.Column("duration_ms", sa.Integer),
        sa.Column("request_headers", sa.JSON),
        sa.Column("created_at", TS, nullable=False, index=True),
    )


def downgrade() -> None:
    for table in ("webhook_deliveries", "api_submissions", "webhooks", "lti_score_posts", "lti_grade_targets",
                  "lti_resource_links", "lti_platforms", "lti_keys"):
        op.drop_table(table)
