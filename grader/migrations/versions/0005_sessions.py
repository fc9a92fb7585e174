"""sessions that can be ended (users.session_version); API users owned by their key

Revision ID: 0005
Revises: 0004
"""
import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Bumped at sign-out and at a password change: every cookie carrying an older one is void.
    op.add_column("users", sa.Column("session_version", sa.Integer, nullable=False, server_default="0"))
    # The API key whose namespace an API user lives in (NULL: a local or LMS account).
    op.add_column("users", sa.Column("api_key_id", sa.Integer))
    op.create_index("ix_users_api_key_id", "users", ["api_key_id"])
    _namespace_api_users()


def _namespace_api_users() -> None:
    """Users made by the API so far were named by the client's bare value, in one
    namespace with LMS users and every other key. Each one whose submissions all came
    through a single key (and who never launched from an LMS) moves into that key's
    namespace, as the API now names them; anyone else is left as is."""
    bind = op.get_bind()
    rows = bind.execute(sa.text(
        "SELECT u.id, u.external_id, MIN(a.api_key_id), COUNT(DISTINCT a.api_key_id) "
        "FROM users u JOIN submissions s ON s.user_id = u.id "
        "LEFT JOIN api_submissions a ON a.submission_id = s.id "
        "WHERE u.email IS NULL AND u.external_id IS NOT NULL "
        "AND NOT EXISTS (SELECT 1 FROM lti_grade_targets t WHERE t.user_id = u.id) "
        "GROUP BY u.id, u.external_id "
        "HAVING COUNT(DISTINCT a.api_key_id) = 1 AND COUNT(a.api_key_id) = COUNT(s.id)")).all()
    for user_id, external_id, key_id, _ in rows:
        named = f"api:{key_id}:{external_id}"
        if len(named) <= 500:
            bind.execute(sa.text("UPDATE users SET external_id = :named, api_key_id = :key WHERE id = :id"),
                         {"named": named, "key": key_id, "id": user_id})


def downgrade() -> None:
    # Plain ALTER TABLE DROP COLUMN (SQLite 3.35+): a batch copy of users would trip over
    # the foreign keys that point at it. API users keep their namespaced ids.
    op.drop_index("ix_users_api_key_id", table_name="users")
    op.drop_column("users", "api_key_id")
    op.drop_column("users", "session_version")
