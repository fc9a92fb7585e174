"""Alembic's entry point: migrations run against the URL grader.db.upgrade gives."""

from alembic import context

from grader import models  # noqa: F401  (registers the tables)
from grader import webhooks  # noqa: F401
from grader.lti import models as lti_models  # noqa: F401
from grader.courses import models as course_models  # noqa: F401
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
