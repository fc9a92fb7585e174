"""Fixtures of the LTI tests: the deployment's environment (a worker a test starts inherits
it) with autograd-basics published, the grader served over HTTP (the platform fetches its
JWKS, as an LMS does) and a test LMS registered by the operator (lti1p3platform,
tests/lti_platform.py). A test module imports the ones it uses."""

from __future__ import annotations

import pytest

from grader import db
from grader.lti import platforms
from tests.live import publish_basics, serve
from tests.lti_platform import Platform


@pytest.fixture
def service(database_url, redis, monkeypatch):
    monkeypatch.setenv("GRADER_DATABASE_URL", database_url)
    monkeypatch.setenv("GRADER_LTI_ALLOW_HTTP", "1")  # the test platforms serve plain http on 127.0.0.1
    monkeypatch.setenv("GRADER_OUTBOUND_ALLOW_PRIVATE", "1")  # and listen on 127.0.0.1
    publish_basics(database_url)
    return database_url


@pytest.fixture
def tool(service):
    from grader.app import create_app

    with serve(create_app({"TESTING": True, "DATABASE_URL": service})) as url:
        yield url


@pytest.fixture
def lms(tool, service):
    """A platform registered by the operator (the command line's way)."""
    with Platform(tool).served() as platform:
        with db.transaction(service) as session:
            platforms.add(session, name="Test LMS", **platform.tool_registration())
        yield platform
