"""One course per code, whatever its case: duplicates renamed, then a unique index

Courses that share a code (ignoring case, as the database's lower() folds it) keep it
for the oldest of them; each later one gets the code with the first free suffix -2, -3,
... in the order they were made, so the same rows always get the same codes. An empty
code (an LMS context without a label) is no code, and stays out of the index.

Revision ID: 0019
Revises: 0018
"""
import logging

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

log = logging.getLogger("alembic.runtime.migration")

CODE_LENGTH = 200


def _with_suffix(code: str, number: int) -> str:
    suffix = f"-{number}"
    return code[:CODE_LENGTH - len(suffix)] + suffix


def upgrade() -> None:
    conn = op.get_bind()
    rows = conn.execute(sa.text(
        "SELECT id, code, lower(code) FROM courses WHERE code <> '' "
        "ORDER BY CASE WHEN created_at IS NULL THEN 1 ELSE 0 END, created_at, id")).all()
    used = {folded for _id, _code, folded in rows}
    kept = set()
    for course_id, code, folded in rows:
        if folded not in kept:
            kept.add(folded)
            continue
        number = 2
        while True:
            wanted = _with_suffix(code, number)
            wanted_folded = conn.execute(sa.text("SELECT lower(:code)"), {"code": wanted}).scalar()
            if wanted_folded not in used:
                break
            number += 1
        used.add(wanted_folded)
        conn.execute(sa.text("UPDATE courses SET code = :code WHERE id = :id"), {"code": wanted, "id": course_id})
        log.info("course %s shared the code %r with an older course: it is now %r", course_id, code, wanted)
    op.create_index("uq_courses_code", "courses", [sa.text("lower(code)")], unique=True,
                    sqlite_where=sa.text("code <> ''"), postgresql_where=sa.text("code <> ''"))


def downgrade() -> None:
    # The codes given to duplicates stay: nothing records which course had which before.
    op.drop_index("uq_courses_code", table_name="courses")
