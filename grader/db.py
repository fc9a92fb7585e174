"""Database engine, sessions and migrations.

The database is the source of truth; Redis only carries tasks. GRADER_DATABASE_URL
picks it (SQLite by default, PostgreSQL in production); migrations are Alembic's,
in grader/migrations.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Iterator

from sqlalchemy import create_engine, event, make_url
from sqlalchemy.engine import Engine
from sqlalchemy.orm import DeclarativeBase, Session, sessionmaker

from grader import clock
from grader.settings import private_dir, private_file, settings

MIGRATIONS = Path(__file__).resolve().parent / "migrations"


class Base(DeclarativeBase):
    pass


def now() -> datetime:
    """The time every row stores: timezone-aware UTC, the service's own (grader.clock)."""
    return clock.now()


def shown_url(url: str) -> str:
    """A database URL as it may be printed: its password masked."""
    return make_url(url).render_as_string(hide_password=True)


# One engine per URL for the process's life: a service uses one URL, but whatever opens
# many in turn (the tests: a database each) releases each when done, or keeps every
# engine's cache of compiled statements.
_engines: dict[str, Engine] = {}
_engines_lock = threading.Lock()


def engine_for(url: str) -> Engine:
    engine = _engines.get(url)
    if engine is None:
        with _engines_lock:
            engine = _engines.get(url)
            if engine is None:
                engine = _engines[url] = _new_engine(url)
    return engine


def release(url: str) -> None:
    """Close the pooled connections to ``url`` and forget its engine; a later engine_for
    makes a new one."""
    with _engines_lock:
        engine = _engines.pop(url, None)
    if engine is not None:
        engine.dispose()


def _new_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1]
        if path and path != ":memory:":
            _private_database(Path(path))
        engine = create_engine(url, connect_args={"timeout": 30})

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_connection, _record):
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA journal_mode=WAL")  # the web and the workers write at once
            cursor.close()

        return engine
    return create_engine(url, pool_pre_ping=True)


def _private_database(path: Path) -> None:
    """The SQLite file 0600 (its -wal and -shm files take its mode), in a folder made 0700;
    the default ./instance folder is tightened to 0700 if it was not."""
    if not path.parent.exists() or path.parent == Path.cwd() / "instance":
        private_dir(path.parent)
    private_file(path)


def sessions(url: str | None = None) -> sessionmaker[Session]:
    return sessionmaker(engine_for(url or settings().database_url), expire_on_commit=False)


@contextmanager
def transaction(url: str | None = None) -> Iterator[Session]:
    """One unit of work: committed when the block ends, rolled back if it raises."""
    with sessions(url)() as session, session.begin():
        yield session


def upgrade(url: str | None = None) -> None:
    """Bring the database's schema to the newest migration."""
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", (url or settings().database_url).replace("%", "%%"))
    command.upgrade(config, "head")
