"""The `grader` command as a newcomer meets it: it says which database it works on, never
makes an empty one by accident, and resets a forgotten password."""

from __future__ import annotations

import re

from click.testing import CliRunner

from grader.cli import main
from grader.db import shown_url
from tests.forms import sign_in
from tests.test_web import site  # noqa: F401  (site: a fixture)


def test_run_outside_the_services_folder_it_refuses_to_make_an_empty_database(tmp_path, monkeypatch):
    monkeypatch.delenv("GRADER_DATABASE_URL", raising=False)
    monkeypatch.chdir(tmp_path)
    ran = CliRunner().invoke(main, ["create-user", "--email", "a@example.org", "--password", "long enough"])
    assert ran.exit_code == 1
    assert f"there is no database at {tmp_path / 'instance' / 'grader.db'}" in ran.output
    assert "GRADER_DATABASE_URL" in ran.output and not (tmp_path / "instance").exists()
    published = CliRunner().invoke(main, ["exercise", "sync"])
    assert published.exit_code == 1 and "there is no database" in published.output


def test_it_says_which_database_it_works_on_without_its_password(site, database_url, monkeypatch):
    monkeypatch.setenv("GRADER_DATABASE_URL", database_url)
    ran = CliRunner().invoke(main, ["create-user", "--email", "new@example.org", "--password", "long enough"])
    assert ran.exit_code == 0 and f"database: {shown_url(database_url)}" in ran.output
    assert shown_url("postgresql+psycopg://grader:s3cret@db/grader") == "postgresql+psycopg://grader:***@db/grader"


def test_a_forgotten_password_is_reset_to_one_shown_once(site, database_url, monkeypatch):
    monkeypatch.setenv("GRADER_DATABASE_URL", database_url)
    ran = CliRunner().invoke(main, ["reset-password", "--email", "ada@example.org"])
    assert ran.exit_code == 0, ran.output
    password = re.search(r"shown only this once: (\S+)", ran.output).group(1)
    assert sign_in(site.test_client(), "ada@example.org").status_code != 302  # the old one is gone
    assert sign_in(site.test_client(), "ada@example.org", password).status_code == 302
    unknown = CliRunner().invoke(main, ["reset-password", "--email", "nobody@example.org"])
    assert unknown.exit_code == 1


def test_the_listings_help_lines_are_the_commands_own():
    # `grader --help` lists the commands from tables, so as to import none of them: each
    # line there must be what the command's own docstring says.
    import importlib

    from grader.cli import COMMANDS, COURSE_COMMANDS, EXERCISE_COMMANDS

    for table in (COMMANDS, COURSE_COMMANDS, EXERCISE_COMMANDS):
        for name, (where, line) in table.items():
            module, _, attribute = where.partition(":")
            command = getattr(importlib.import_module(f"grader.cli.{module}"), attribute)
            assert command.name == name and command.get_short_help_str(10_000) == line, name
