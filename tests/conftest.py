"""Fixtures shared by the project's tests."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from grader import catalog
from grader.engine.grading import grade
from grader.engine.report import Report

TESTS = Path(__file__).resolve().parent

# Fixture exercises hold hidden suites (they need the grader's `student` fixture) and
# tests/attacks/ holds hostile submissions: data to grade, never tests to collect here.
collect_ignore = ["fixtures", "attacks"]


@pytest.fixture(scope="session")
def target() -> catalog.Bundle:
    """The attack-target exercise: autograd-basics' contract with short limits."""
    return catalog.load(TESTS / "fixtures" / "exercises" / "attack-target")


@pytest.fixture(scope="session")
def grade_file(target):
    """Grade a submission file (against the attack target unless told otherwise)."""

    def grade_file(path: str | Path, exercise: catalog.Bundle | None = None) -> Report:
        return grade(exercise or target, Path(path).read_text(encoding="utf-8"))

    return grade_file


# ------------------------------------------------------------------ the service's parts

POSTGRES_ADMIN = "host=127.0.0.1 user=postgres dbname=postgres connect_timeout=5"


@pytest.fixture(scope="session")
def postgres_template():
    """A PostgreSQL database at the newest migration, for tests' databases to be copied
    from (a copy takes milliseconds; migrating takes a good part of a second)."""
    import psycopg

    from grader import db

    name = f"grader_test_template_{uuid.uuid4().hex[:12]}"
    try:
        with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
    except psycopg.OperationalError as exc:
        pytest.skip(f"PostgreSQL is not reachable at 127.0.0.1:5432: {exc}")
    url = f"postgresql+psycopg://postgres@127.0.0.1/{name}"
    try:
        db.upgrade(url)
        db.engine_for(url).dispose()  # a template must have no connections while it is copied
        yield name
    finally:
        db.engine_for(url).dispose()
        with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request, tmp_path):
    """A fresh database at the newest migration: a SQLite file, or a PostgreSQL database
    made for this test and dropped after it."""
    import psycopg

    from grader import db

    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'grader.db'}"
        db.upgrade(url)
        yield url
        db.engine_for(url).dispose()
        return
    template = request.getfixturevalue("postgres_template")
    name = f"grader_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name} TEMPLATE {template}")
    url = f"postgresql+psycopg://postgres@127.0.0.1/{name}"
    try:
        yield url
    finally:
        db.engine_for(url).dispose()  # the pool's connections would keep the database open
        with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory):
    """A redis-server of this test run's own, on a free port: another run on the machine
    (or anything else using the Redis at 6379) can neither flush nor consume its tasks."""
    from tests.live import PrivateRedis

    server = PrivateRedis(tmp_path_factory.mktemp("redis-server") / "data")
    server.start()
    yield server.url
    server.stop()


@pytest.fixture
def redis(redis_url, monkeypatch):
    """An empty Redis that the Celery app sends tasks to, as a redis-py client.

    grader.tasks' Celery app reads GRADER_REDIS_URL when it is made, so a new one is made
    for the test and put where submissions.enqueue finds it.
    """
    import redis as redis_py

    from grader import tasks as worker_app

    client = redis_py.Redis.from_url(redis_url)
    client.flushdb()
    monkeypatch.setenv("GRADER_REDIS_URL", redis_url)
    monkeypatch.delenv("GRADER_GPU_QUEUE", raising=False)  # "any" exercises go to the cpu queue
    celery = worker_app.make_celery()
    monkeypatch.setattr(worker_app, "celery", celery)
    yield client
    celery.close()
    client.close()


@pytest.fixture
def app(database_url, redis):
    """The web app on the test's database and Redis."""
    from grader.app import create_app

    return create_app({"TESTING": True, "DATABASE_URL": database_url})


@pytest.fixture
def client(app):
    return app.test_client()
