"""Fixtures shared by the project's tests."""

from __future__ import annotations

import contextlib
import gc
import shutil
import uuid
from pathlib import Path

import pytest

from grader import catalog
from grader.engine.grading import grade
from grader.protocol.report import Report

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

@pytest.fixture(autouse=True, scope="session")
def affordable_password_hashes():
    """scrypt at 1/128 of its production cost: the same algorithm and code, at a price a
    thousand accounts made in the tests can pay (a hash carries its own parameters, so
    one made here checks the same way)."""
    from grader.accounts import users

    production, users.PASSWORD_METHOD = users.PASSWORD_METHOD, "scrypt:256:8:1"
    yield
    users.PASSWORD_METHOD = production


@pytest.fixture(autouse=True, scope="session")
def rsa_keys_made_once():
    """Each RSA key pair made in this test process (the tool's key, made on a database's first
    launch, and every test platform's) is one of sixteen real 2048-bit keys made on first need,
    taken in turn: a test that makes several gets different keys, and a run no longer makes
    one for every test (a tenth of a second each, 6% of the fast loop)."""
    from cryptography.hazmat.primitives.asymmetric import rsa

    made, taken, real = [], [0], rsa.generate_private_key

    def generate_private_key(public_exponent, key_size, backend=None):
        if (public_exponent, key_size) != (65537, 2048):
            return real(public_exponent=public_exponent, key_size=key_size)
        taken[0] += 1
        if len(made) < 16:
            made.append(real(public_exponent=65537, key_size=2048))
            return made[-1]
        return made[taken[0] % 16]

    rsa.generate_private_key = generate_private_key
    yield
    rsa.generate_private_key = real


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


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory) -> Path:
    """A SQLite file at the newest migration, migrated once per run: each test copies it
    (a copy takes a millisecond; migrating takes more than a second)."""
    import sqlite3

    from grader import db

    path = tmp_path_factory.mktemp("sqlite-template") / "grader.db"
    url = f"sqlite:///{path}"
    db.upgrade(url)
    db.release(url)
    # One self-contained file: what the write-ahead log holds goes into it before copies.
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute("PRAGMA journal_mode=DELETE")
    return path


@pytest.fixture(scope="session")
def postgres_database(postgres_template):
    """This test process's PostgreSQL database, copied from the template once; each test
    empties it (see ``_emptied``) rather than copying another, which costs half a second."""
    import psycopg

    name = f"grader_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name} TEMPLATE {postgres_template}")
    url = f"postgresql+psycopg://postgres@127.0.0.1/{name}"
    with psycopg.connect(url.replace("+psycopg", ""), autocommit=True) as conn:
        tables = [row[0] for row in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'alembic_version'")]
        sequences = [row[0] for row in conn.execute("SELECT sequencename FROM pg_sequences WHERE schemaname = 'public'")]
    try:
        yield url, tables, sequences
    finally:
        with psycopg.connect(POSTGRES_ADMIN, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _emptied(url: str, tables: list[str], sequences: list[str]) -> None:
    """The database as the template left it: every row of every table gone (at the newest
    migration still) and every id counting from 1 again; whatever a test left connected
    to it (a worker it did not stop) cut off first."""
    import psycopg

    with psycopg.connect(url.replace("+psycopg", ""), autocommit=True) as conn:
        conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                     "WHERE datname = current_database() AND pid <> pg_backend_pid()")
        with conn.transaction():
            conn.execute("SET LOCAL session_replication_role = replica")  # no foreign-key order to follow
            for table in tables:
                conn.execute(f'DELETE FROM "{table}"')
            for sequence in sequences:
                conn.execute(f"SELECT setval('\"{sequence}\"', 1, false)")


@pytest.fixture(scope="session")
def sqlite_database(sqlite_template, tmp_path_factory):
    """This test process's SQLite file, copied from the template once; each test empties
    it (see ``_emptied_sqlite``), so that one engine serves every test and the statements it
    compiled stay compiled (a new engine per test compiled each again: a tenth of a test's
    time)."""
    import sqlite3

    path = tmp_path_factory.mktemp("sqlite") / "grader.db"
    shutil.copyfile(sqlite_template, path)
    path.chmod(0o600)
    with contextlib.closing(sqlite3.connect(path)) as conn:
        tables = [row[0] for row in conn.execute(  # sqlite_sequence: where AUTOINCREMENT ids count
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name <> 'alembic_version' "
            "AND (name NOT LIKE 'sqlite_%' OR name = 'sqlite_sequence')")]
    return f"sqlite:///{path}", path, tables


def _emptied_sqlite(path: Path, tables: list[str]) -> None:
    """The file as the template left it: every row of every table gone, ids counting from 1."""
    import sqlite3

    with contextlib.closing(sqlite3.connect(path, timeout=30)) as conn:
        conn.execute("PRAGMA foreign_keys=OFF")  # no foreign-key order to follow
        with conn:
            for table in tables:
                conn.execute(f'DELETE FROM "{table}"')


def _no_worker_left() -> None:
    """A worker an earlier test started and did not stop is killed before the database it
    used is handed to the next test."""
    from tests.live import _workers, end_shared_workers, is_kept

    end_shared_workers(all_of_them=False)  # those lent to a test that never gave them back
    for process in _workers:
        if process.poll() is None and not is_kept(process):
            process.kill()
            process.wait()


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request):
    """A database at the newest migration with nothing in it: this test process's SQLite
    file or PostgreSQL database, emptied."""
    from grader import db
    from grader.web import headers

    _no_worker_left()
    if request.param == "sqlite":
        url, path, tables = request.getfixturevalue("sqlite_database")
        _emptied_sqlite(path, tables)
    else:
        url, tables, sequences = request.getfixturevalue("postgres_database")
        _emptied(url, tables, sequences)
    headers._origins.pop(url, None)  # what the service remembers of this database (a minute) is of the last test
    try:
        yield url
    finally:
        db.engine_for(url).dispose()  # no pooled connection outlives the test; its compiled statements do


@pytest.fixture
def basics(database_url) -> str:
    """autograd-basics published, worth 6 points, as `grader exercise sync` leaves it
    (without grading its solution first); its slug."""
    from tests.live import publish_basics

    publish_basics(database_url)
    return "autograd-basics"


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory):
    """A redis-server of this test run's own, on a free port: another run on the machine
    (or anything else using the Redis at 6379) can neither flush nor consume its tasks."""
    from tests.live import PrivateRedis

    server = PrivateRedis(tmp_path_factory.mktemp("redis-server") / "data")
    server.start()
    yield server.url
    from tests.live import end_shared_workers

    end_shared_workers(all_of_them=True)  # while the Redis they take from is still there
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


@pytest.fixture(autouse=True)
def _api_answers_keep_to_the_document(monkeypatch):
    """Every /api/v1 response a test receives through a test client is checked against the
    OpenAPI document (tests/openapi_check.py): drift fails the test that saw it."""
    from flask.testing import FlaskClient

    from tests.openapi_check import hold_to_document

    opened = FlaskClient.open

    def open_and_check(self, *args, **kwargs):
        response = opened(self, *args, **kwargs)
        hold_to_document(response.request.method, response.request.path, response)
        return response

    monkeypatch.setattr(FlaskClient, "open", open_and_check)


@pytest.fixture
def mailbox(tmp_path, monkeypatch):
    """A real SMTP server on loopback that the service's mail goes to (tests/mailbox.py);
    links in mail begin with https://grader.example.edu."""
    from tests.mailbox import Mailbox

    box = Mailbox(tmp_path).start()
    monkeypatch.setenv("GRADER_SMTP_URL", box.url)
    monkeypatch.setenv("GRADER_PUBLIC_URL", "https://grader.example.edu")
    monkeypatch.setenv("GRADER_INSTANCE_DIR", str(tmp_path / "instance"))
    yield box
    box.stop()


@pytest.fixture
def deliver(redis, database_url, monkeypatch):
    """Hand every queued mail to the mail task, as a worker would; returns how many."""
    from tests.mailbox import deliver_queued

    return lambda: deliver_queued(redis, database_url, monkeypatch)


# ------------------------------------------------------------------ markers: the real parts a test uses

# `bash scripts/test --fast` leaves out what starts a Celery worker, a browser or a sandbox,
# and the PostgreSQL variants; the markers come from what a test's code and fixtures use,
# so a new test is marked without anyone remembering to.
PART_NAMES = {
    "worker": {"start_worker"},
    "browser": {"sync_playwright", "CHROMIUM"},
    # grading runs both sandboxes: the engine, a bundle's check and its mutants, and the
    # `grader` commands that grade ("grade", "check", "new" as strings of a command line)
    "sandbox": {"grade", "grade_file", "ExerciseSandbox", "Sandbox", "sandbox_for", "exercise_sandbox", "warm_up",
                "check", "mutation", "bwrap_command", "'grade'", "'check'", "'new'"},
}
PART_FIXTURES = {"browser": {"browser"}, "sandbox": {"grade_file", "target"}}


def _own_names(function) -> tuple[frozenset[str], tuple]:
    """The global names (and short strings) one function's code uses, and the tests' own
    helper functions among them; remembered per code object, since a helper is reached from
    hundreds of tests."""
    code = function.__code__
    known = _OWN_NAMES.get(code)
    if known is None:
        names, stack = set(), [code]
        while stack:
            current = stack.pop()
            names.update(current.co_names)
            names.update(repr(const) for const in current.co_consts if isinstance(const, str) and len(const) < 10)
            stack.extend(const for const in current.co_consts if hasattr(const, "co_names"))
        helpers = []
        for name in names:
            helper = function.__globals__.get(name)
            helper = getattr(helper, "__wrapped__", helper)
            if callable(helper) and hasattr(helper, "__code__") and \
                    helper.__code__.co_filename.startswith(_TESTS_PREFIX):
                helpers.append(helper)
        known = _OWN_NAMES[code] = (frozenset(names), tuple(helpers))
    return known


_OWN_NAMES: dict = {}
_TESTS_PREFIX = str(TESTS) + "/"


def _names_used(function, seen: set) -> set[str]:
    """The global names a function's code uses, followed into the tests' own helper functions
    (a helper of tests/ that starts a worker makes its callers worker tests)."""
    names: set[str] = set()
    stack = [function]
    while stack:
        current = stack.pop()
        code = getattr(current, "__code__", None)
        if code is None or code in seen:
            continue
        seen.add(code)
        own, helpers = _own_names(current)
        names |= own
        stack.extend(helpers)
    return names


def pytest_collection_modifyitems(items):
    for item in items:
        fixtures = set(item.fixturenames)
        functions = [item.function] + [definition.func for defs in item._fixtureinfo.name2fixturedefs.values()
                                       for definition in defs]
        seen: set = set()
        names = set().union(*(_names_used(f, seen) for f in functions))
        for part, used in PART_NAMES.items():
            if names & used or fixtures & PART_FIXTURES.get(part, set()):
                item.add_marker(part)
        params = getattr(getattr(item, "callspec", None), "params", {})
        # A database of the test's own making (test_migrations' empty ones) is told by its parameter.
        on_postgresql = any(isinstance(value, str) and value == "postgresql" for value in params.values())
        if "database_url" in fixtures or on_postgresql:
            item.add_marker("db")
        if on_postgresql:
            item.add_marker("postgresql")
    _longest_modules_first(items)


# Seconds a test of each kind takes, roughly, on two cores (its first marker found here).
_EXPECTED_S = {"worker": 12.0, "browser": 8.0, "slow": 5.0, "sandbox": 1.0}


def _longest_modules_first(items) -> None:
    """The modules whose tests take longest run first, each module's tests in their own order.
    Test processes take the queue from its front, and an idle one takes the back half of a
    busy one's: the run then ends on short tests, rather than on one process finishing a
    minute-long test while the other waits (as the alphabet left test_up and test_worker)."""
    weight: dict = {}
    for item in items:
        cost = next((s for mark, s in _EXPECTED_S.items() if item.get_closest_marker(mark)), 0.1)
        weight[item.module] = weight.get(item.module, 0.0) + cost
    items.sort(key=lambda item: -weight[item.module])  # stable: each module's order is kept


def pytest_collection_finish(session):
    """What every test process has loaded by now (torch, the project, the tests) stays
    loaded: frozen, no full collection walks its objects again (each walk took a quarter
    of a second, dozens of times a process); and collections come less often, since a
    test makes and drops many objects in cycles (requests, apps, sessions)."""
    gc.freeze()
    gc.set_threshold(10_000, 20, 20)

