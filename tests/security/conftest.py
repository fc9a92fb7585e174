"""What the security tests share: the service served over real HTTP on the test's own
database and Redis, an exercise to submit to, API keys and local accounts."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from grader import db
from grader.accounts import users
from grader.accounts import keys
from tests.forms import PASSWORD
from tests.live import publish_basics, serve

ROOT = Path(__file__).resolve().parents[2]
SOLUTION = (ROOT / "exercises" / "autograd-basics" / "solution.py").read_text()


@pytest.fixture
def site(database_url, redis, monkeypatch):
    """site(**config) -> the base URL of the app served with those settings."""
    from grader.app import create_app

    monkeypatch.setenv("GRADER_DATABASE_URL", database_url)
    publish_basics(database_url)
    stack = contextlib.ExitStack()

    def site(**config) -> str:
        return stack.enter_context(serve(create_app({"TESTING": True, "DATABASE_URL": database_url, **config})))

    with stack:
        yield site


@pytest.fixture
def make_key(database_url):
    """make_key() -> (key id, headers carrying a new key that may submit and read)."""

    def make_key() -> tuple[int, dict]:
        with db.transaction(database_url) as session:
            row, key = keys.create(session, ["submissions:write", "submissions:read", "exercises:read"])
        return row.id, {"Authorization": f"Bearer {key}"}

    return make_key


@pytest.fixture
def account(database_url):
    """account(email, role="student") -> the new local account's id (password PASSWORD)."""

    def account(email: str, role: str = "student") -> int:
        with db.transaction(database_url) as session:
            return users.create_user(session, email=email, password=PASSWORD, role=role).id

    return account
