"""Alembic's entry point: migrations run against the URL grader.db.upgrade gives."""

from alembic import context

# Every domain's models, so that their tables are in Base.metadata.
import grader.accounts.models  # noqa: F401
import grader.catalog.models  # noqa: F401
import grader.courses.models  # noqa: F401
import grader.lti.models  # noqa: F401
import grader.mail.models  # noqa: F401
import grader.submissions.models  # noqa: F401
import grader.webhooks  # noqa: F401
from grader.db import Base, engine_for

config = context.config


def run() -> None:
    url = config.get_main_option("sqlalchemy.url")
    if context.is_offline_mode():
        context.configure(url=url, target_metadata=Base.metadata, literal_binds=True)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = engine_for(url)
    sqlite = url.startswith("sqlite")
    with engine.connect() as connection:
        if sqlite:
            # SQLite changes a table by copying it and dropping the old one; with foreign keys
            # on, that drop deletes every row pointing at it (ON DELETE CASCADE). Off for the
            # migrations (SQLite ignores the pragma inside a transaction: set it before one).
            connection.exec_driver_sql("PRAGMA foreign_keys=OFF")
            connection.commit()
        try:
            context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=sqlite)
            with context.begin_transaction():
                context.run_migrations()
        finally:
            if sqlite:
                connection.rollback()
                connection.exec_driver_sql("PRAGMA foreign_keys=ON")
                connection.commit()


run()
