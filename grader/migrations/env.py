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
    with engine.connect() as connection:
        context.configure(connection=connection, target_metadata=Base.metadata,
                          render_as_batch=url.startswith("sqlite"))
        with context.begin_transaction():
            context.run_migrations()


run()
