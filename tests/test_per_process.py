"""Apps of one process share what making an app compiles, and none sees another's changes."""

from __future__ import annotations

import shutil

import pytest
from flask import url_for

from grader.app import create_app
from grader.web import per_process


@pytest.fixture
def url(tmp_path, sqlite_template):
    shutil.copyfile(sqlite_template, tmp_path / "grader.db")
    return f"sqlite:///{tmp_path / 'grader.db'}"


def _app(url):
    return create_app({"TESTING": True, "DATABASE_URL": url})


def test_two_apps_share_one_matcher_and_route_alike(url):
    first, second = _app(url), _app(url)
    assert second.url_map._matcher is first.url_map._matcher
    assert sorted(map(str, first.url_map.iter_rules())) == sorted(map(str, second.url_map.iter_rules()))
    for app in (first, second):
        assert app.test_client().get("/healthz").status_code == 200
        with app.test_request_context():
            assert url_for("static", filename="style.css") == "/static/style.css"


def test_a_route_added_to_one_app_reaches_no_other(url):
    first, second = _app(url), _app(url)
    second.add_url_rule("/only-here", "only_here", lambda: "here")
    assert second.url_map._matcher is not first.url_map._matcher
    assert second.test_client().get("/only-here").data == b"here"
    assert first.test_client().get("/only-here").status_code == 404
    assert _app(url).test_client().get("/only-here").status_code == 404  # a later app neither
    # The app that owns its map now still routes everything it had.
    assert second.test_client().get("/healthz").status_code == 200
    assert len(list(second.url_map.iter_rules())) == len(list(first.url_map.iter_rules())) + 1


def test_the_first_app_adding_a_route_leaves_the_shared_map_alone(url):
    per_process._settled.clear()  # `first` is the one whose map the others take
    first = _app(url)
    second = _app(url)
    first.add_url_rule("/first-only", "first_only", lambda: "first")
    assert first.test_client().get("/first-only").status_code == 200
    assert second.test_client().get("/first-only").status_code == 404
    assert _app(url).test_client().get("/first-only").status_code == 404
