"""Migrations that move data, run on both databases from the revision before them."""

from __future__ import annotations

import json
import uuid

import pytest
from sqlalchemy import create_engine, inspect, text
from sqlalchemy.exc import IntegrityError

from grader import db
from tests.conftest import POSTGRES_ADMIN


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_database(request, tmp_path):
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'old.db'}"
        return
    import psycopg

    name = f"grader_migration_{uuid.uuid4().hex[:12]}"
    try:
        with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
    except psycopg.OperationalError as exc:
        pytest.skip(f"PostgreSQL is not reachable at 127.0.0.1:5432: {exc}")
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1/{name}"
    finally:
        with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def migrate(url: str, to: str, down: bool = False) -> None:
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(db.MIGRATIONS))
    config.set_main_option("sqlalchemy.url", url)
    (command.downgrade if down else command.upgrade)(config, to)


def test_uploads_keep_their_rows_and_links_when_the_table_takes_its_name(empty_database):
    url = empty_database
    migrate(url, "0005")
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO bundles (slug, version, device, archive, sha256, status, uploaded_at) "
                          "VALUES ('grad-of-cubes', 2, 'cpu', :zip, 'h', 'published', '2026-01-01')"), {"zip": b"PK"})
        conn.execute(text("INSERT INTO exercises (slug, version, title, device, max_score, functions, published,"
                          " bundle_id, updated_at) SELECT 'grad-of-cubes', 2, '{}', 'cpu', 6, '[]', true, id,"
                          " '2026-01-01' FROM bundles"))
    engine.dispose()
    migrate(url, "head")
    engine = create_engine(url)
    with engine.begin() as conn:
        linked = conn.execute(text("SELECT e.slug, u.version, u.archive FROM exercises e "
                                   "JOIN uploads u ON u.id = e.upload_id")).all()
        assert [tuple(r) for r in linked] == [("grad-of-cubes", 2, b"PK")]
        assert "ix_uploads_slug" in [i["name"] for i in inspect(conn).get_indexes("uploads")]
        # New rows still get ids of their own.
        conn.execute(text("INSERT INTO uploads (slug, version, device, archive, sha256, status, uploaded_at) "
                          "VALUES ('other', 1, 'cpu', :zip, 'h', 'checking', '2026-01-02')"), {"zip": b"PK"})
        assert conn.execute(text("SELECT COUNT(DISTINCT id) FROM uploads")).scalar() == 2
    engine.dispose()
    migrate(url, "0005", down=True)
    engine = create_engine(url)
    with engine.connect() as conn:
        back = conn.execute(text("SELECT e.slug FROM exercises e JOIN bundles b ON b.id = e.bundle_id")).all()
        assert [tuple(r) for r in back] == [("grad-of-cubes",)]
    engine.dispose()


# PostgreSQL only: SQLite's reflection misses an ON DELETE that ALTER TABLE added.
@pytest.mark.parametrize("empty_database", ["postgresql"], indirect=True)
def test_the_migrations_make_exactly_the_tables_the_models_describe(empty_database):
    """A model changed without its migration (or the other way round) shows up here."""
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    import grader.app  # noqa: F401  (every model, through the app's imports)
    from grader.db import Base

    migrate(empty_database, "head")
    engine = create_engine(empty_database)
    with engine.connect() as conn:
        assert compare_metadata(MigrationContext.configure(conn), Base.metadata) == []
    engine.dispose()


def test_courses_sharing_a_code_keep_it_for_the_oldest_and_the_others_get_a_suffix(empty_database):
    url = empty_database
    migrate(url, "0018")
    engine = create_engine(url)
    made = [(1, "DL101", "2026-03-01"), (2, "dl101", "2026-01-01"), (3, "DL101-2", "2026-02-01"),
            (4, "DL101", "2026-04-01"), (5, "", "2026-01-01"), (6, "", "2026-01-02"), (7, "CV200", "2026-01-01")]
    with engine.begin() as conn:
        for number, code, created in made:
            conn.execute(text("INSERT INTO courses (title, code, created_at, updated_at) "
                              "VALUES (:title, :code, :at, :at)"), {"title": str(number), "code": code, "at": created})
    engine.dispose()
    migrate(url, "head")
    engine = create_engine(url)
    with engine.connect() as conn:
        codes = {int(title): code for title, code in conn.execute(text("SELECT title, code FROM courses"))}
        # The oldest keeps it (course 2, in its own case); then in the order they were made, each
        # takes the first free suffix (DL101-2 was another course's already).
        assert codes == {1: "DL101-3", 2: "dl101", 3: "DL101-2", 4: "DL101-4", 5: "", 6: "", 7: "CV200"}
    another = text("INSERT INTO courses (title, code, created_at, updated_at) "
                   "VALUES ('Another', :code, '2026-05-01', '2026-05-01')")
    with pytest.raises(IntegrityError), engine.begin() as conn:  # the unique index, whatever the case
        conn.execute(another, {"code": "Cv200"})
    with engine.begin() as conn:  # a course without a code is no clash
        conn.execute(another, {"code": ""})
    engine.dispose()
    migrate(url, "0018", down=True)
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(another, {"code": "Cv200"})
    engine.dispose()


def test_exercises_published_before_drafts_stay_released_and_personal_tokens_read_exercises(empty_database):
    url = empty_database
    migrate(url, "0020")
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO users (email, name, role, session_version, self_registered, mail_off, "
                          "created_at) VALUES ('ada@example.org', 'Ada', 'student', 0, false, '[]', '2026-01-01')"))
        conn.execute(text("INSERT INTO exercises (slug, version, title, device, max_score, functions, published,"
                          " updated_at) VALUES ('grad-of-cubes', 2, '{}', 'cpu', 6, '[]', true, '2026-01-01')"))
        conn.execute(text("INSERT INTO api_keys (prefix, key_hash, scopes, name, user_id, created_at) VALUES "
                          "('aaaaaaaaaaaa', 'h', '[\"submissions:read\", \"submissions:write\"]', 'laptop', "
                          "(SELECT id FROM users), '2026-01-01'), ('bbbbbbbbbbbb', 'h', '[\"grades:read\"]', "
                          "'service', NULL, '2026-01-01')"))
    engine.dispose()
    migrate(url, "head")
    engine = create_engine(url)
    with engine.begin() as conn:
        assert conn.execute(text("SELECT released FROM exercises")).scalar() in (True, 1)
        scopes = dict(conn.execute(text("SELECT prefix, scopes FROM api_keys")).all())
        parsed = {prefix: json.loads(value) if isinstance(value, str) else value for prefix, value in scopes.items()}
        assert parsed == {"aaaaaaaaaaaa": ["exercises:read", "submissions:read", "submissions:write"],
                          "bbbbbbbbbbbb": ["grades:read"]}
        # A row made without saying (as SQL elsewhere would) is released too; the model says so for uploads.
        conn.execute(text("INSERT INTO exercises (slug, version, title, device, max_score, functions, published,"
                          " updated_at) VALUES ('other', 1, '{}', 'cpu', 1, '[]', true, '2026-01-01')"))
        assert conn.execute(text("SELECT released FROM exercises WHERE slug = 'other'")).scalar() in (True, 1)
    engine.dispose()
    migrate(url, "0020", down=True)
    engine = create_engine(url)
    with engine.connect() as conn:
        assert "released" not in [c["name"] for c in inspect(conn).get_columns("exercises")]
        scopes = conn.execute(text("SELECT scopes FROM api_keys WHERE prefix = 'aaaaaaaaaaaa'")).scalar()
        assert (json.loads(scopes) if isinstance(scopes, str) else scopes) == ["submissions:read",
                                                                              "submissions:write"]
    engine.dispose()


def test_lms_registrations_keep_their_courses_and_a_deleted_one_frees_its_issuer(empty_database):
    url = empty_database
    migrate(url, "0022")
    engine = create_engine(url)
    platform = ("INSERT INTO lti_platforms (name, issuer, client_id, deployment_ids, auth_login_url, auth_token_url, "
                "jwks_url, created_at) VALUES ('LMS', 'https://lms.example.edu', 'tool', '[\"1\"]', "
                "'https://lms.example.edu/auth', 'https://lms.example.edu/token', 'https://lms.example.edu/jwks', "
                "'2026-01-01')")
    with engine.begin() as conn:
        conn.execute(text(platform))
        conn.execute(text("INSERT INTO courses (title, code, platform_id, context_id, created_at, updated_at) "
                          "SELECT 'Deep learning', 'DL101', id, 'course-1', '2026-01-01', '2026-01-01' "
                          "FROM lti_platforms"))
    engine.dispose()
    migrate(url, "head")
    engine = create_engine(url)
    with engine.begin() as conn:
        # SQLite copies the table anew: the courses pointing at it stay (no cascade on the way).
        assert conn.execute(text("SELECT c.code FROM courses c JOIN lti_platforms p ON p.id = c.platform_id")
                            ).scalars().all() == ["DL101"]
        assert conn.execute(text("SELECT action FROM lti_platform_changes")).scalars().all() == ["created"]
        with pytest.raises(IntegrityError), conn.begin_nested():  # two live registrations of one client
            conn.execute(text(platform))
        conn.execute(text("UPDATE lti_platforms SET deleted_at = '2026-02-01'"))
        conn.execute(text(platform))  # registered again once deleted
        assert conn.execute(text("SELECT COUNT(*) FROM lti_platforms")).scalar() == 2
    with pytest.raises(RuntimeError, match="deleted LMS registrations"):
        migrate(url, "0022", down=True)
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM lti_platforms WHERE deleted_at IS NULL"))
        conn.execute(text("UPDATE lti_platforms SET deleted_at = NULL"))
    engine.dispose()
    migrate(url, "0022", down=True)
    engine = create_engine(url)
    with engine.connect() as conn:
        assert "deleted_at" not in [c["name"] for c in inspect(conn).get_columns("lti_platforms")]
        assert conn.execute(text("SELECT COUNT(*) FROM courses")).scalar() == 1
    engine.dispose()
