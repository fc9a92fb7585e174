"""The ``grader`` command.

Each command's code is in a module of this package, imported when the command is asked for
(click's "lazy loading subcommands"): when it runs, or when its own --help is shown. The
tables below name each command's module and its help line, so that `grader --help` lists
the commands without importing any of them, and a command imports only what it needs
(`grader db upgrade`, `grader create-user` or `grader worker-alive` never load torch or
Flask; `grader grade`, `grader check` and `grader up` need torch). A group whose commands
need different things (`grader course`, `grader exercise`) is defined here and loads its
commands so too.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, MutableMapping
from gettext import gettext
from pathlib import Path

import click

from grader.settings import settings


class LazyGroup(click.Group):
    """A group that imports a command's module only when the command is asked for.

    ``lazy`` maps a command's name to ``("module:attribute", help line)``: the command is
    that attribute of ``grader.cli.<module>``, and the help line (its docstring's first
    sentence) stands for it in the group's --help until it is imported.
    """

    def __init__(self, *args, lazy: dict[str, tuple[str, str]], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = lazy
        self.loaded: dict[str, click.Command] = dict(self.commands)
        # What click (and whoever reads group.commands) sees: every name, each command
        # imported when it is first looked up.
        self.commands = _Commands(self)

    def list_commands(self, ctx: click.Context | None) -> list[str]:
        return sorted(self.loaded.keys() | self.lazy.keys())

    def get_command(self, ctx: click.Context | None, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.loaded and cmd_name in self.lazy:
            module, _, attribute = self.lazy[cmd_name][0].partition(":")
            self.loaded[cmd_name] = getattr(importlib.import_module(f"{__name__}.{module}"), attribute)
        return self.loaded.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """As click's own, with a stand-in carrying the table's help line for each command
        not imported yet."""
        shown = [(name, self.loaded.get(name) or click.Command(name, help=self.lazy[name][1]))
                 for name in self.list_commands(ctx)]
        shown = [(name, command) for name, command in shown if not command.hidden]
        if shown:
            limit = formatter.width - 6 - max(len(name) for name, _ in shown)
            with formatter.section(gettext("Commands")):
                formatter.write_dl([(name, command.get_short_help_str(limit)) for name, command in shown])


class _Commands(MutableMapping):
    """A LazyGroup's commands as a mapping: its names without importing anything, a
    command imported when it is read."""

    def __init__(self, group: LazyGroup) -> None:
        self.group = group

    def __getitem__(self, name: str) -> click.Command:
        command = self.group.get_command(None, name)
        if command is None:
            raise KeyError(name)
        return command

    def __setitem__(self, name: str, command: click.Command) -> None:
        self.group.loaded[name] = command

    def __delitem__(self, name: str) -> None:
        if name not in self:
            raise KeyError(name)
        self.group.loaded.pop(name, None)
        self.group.lazy = {key: value for key, value in self.group.lazy.items() if key != name}

    def __contains__(self, name: object) -> bool:
        return name in self.group.loaded or name in self.group.lazy

    def __iter__(self) -> Iterator[str]:
        return iter(self.group.list_commands(None))

    def __len__(self) -> int:
        return len(self.group.list_commands(None))


# name: ("module:command", the first sentence of its help)
COMMANDS = {
    "api-key": ("accounts:api_key_group", "Keys for the REST API (/api/v1)."),
    "assignment": ("courses:assignment_group",
                   "Assignments: an exercise in a course at a pinned version, with its due date and rules."),
    "check": ("check:check_command",
              "Check exercise bundles: the reference scores full marks (twice, identically), the starter less, "
              "every mutant fails exactly as it declares and shows its hint and no other mutant's, and near "
              "misses of the reference get no hint they do not deserve."),
    "create-user": ("accounts:create_user_command", "Create a local account, such as the first administrator."),
    "db": ("database:db_group", "The database at GRADER_DATABASE_URL."),
    "grade": ("grade:grade_command",
              "Grade SUBMISSION (a .py file, or a Jupyter notebook: .ipynb) against EXERCISE (a slug or a bundle "
              "folder)."),
    "gradebook": ("gradebook:gradebook_group", "A course's gradebook."),
    "lti": ("lti:lti_group", "LTI 1.3: the LMS platforms this tool trusts, and its signing keys."),
    "new": ("new:new_command",
            "Make a new exercise bundle SLUG from the annotated template: a working exercise (statement in English "
            "and Korean, starter, solution, a probe, hidden tests with points, hints and hints for errors, mutants "
            "with their declarations, the misconception table) that `grader check` passes."),
    "regrade": ("gradebook:regrade_command",
                "Grade an assignment's sources (or those of every assignment of an exercise) again against the "
                "exercise's current version (the workers take regrades only when no live submission waits)."),
    "reset-password": ("accounts:reset_password_command",
                       "Give a local account a new random password, printed once (for a user who forgot theirs: "
                       "hand it over, they change it); its sessions everywhere end."),
    "set-password": ("accounts:set_password_command",
                     "Give a local account a new password; its sessions everywhere end."),
    "up": ("service:up_command",
           "Run the whole service on this machine: migrate the database, publish the exercises, start Redis (if "
           "none listens at a local GRADER_REDIS_URL), a worker and the web server, and print the URL."),
    "worker-alive": ("ops:worker_alive_command",
                     "Exit 0 when this host's Celery worker answers a ping through the broker, 1 when it does not: "
                     "a liveness probe for docker compose and Kubernetes (a worker of the solo pool answers only "
                     "between grades)."),
}
COURSE_COMMANDS = {
    "create": ("courses:course_create_command", "Make a course; print its id."),
    "invite": ("courses:course_invite_command",
               "Make an invitation link to a local course; print it (it is shown only this once)."),
    "sync-roster": ("lti:course_sync_roster_command",
                    "Read an LMS course's roster from the LMS now (Names and Role Provisioning Services): members "
                    "who never launched are added with their LMS roles, roles changed, members the LMS no longer "
                    "lists removed (their work stays)."),
}
EXERCISE_COMMANDS = {
    "add": ("exercises:exercise_add_command", "Add or update an exercise from PATH, a bundle folder or a zip of one."),
    "check": ("check:exercise_check_command", "Check bundles here, before pushing them: the same as `grader check`."),
    "push": ("push:exercise_push_command",
             "Publish the bundle at PATH (a folder or a zip of one) on the service at URL."),
    "sync": ("exercises:exercise_sync_command",
             "Publish every catalogue bundle into the database, at its current version."),
}

# The commands that work on the service's own database (an existing one: `grader up` and
# `grader db upgrade` make it), and of `grader exercise`, those that publish into it.
_ON_THE_DATABASE = {"create-user", "set-password", "reset-password", "course", "assignment", "gradebook",
                    "regrade", "api-key"}
_EXERCISE_ON_THE_DATABASE = {"sync", "add"}


@click.group(cls=LazyGroup, lazy=COMMANDS)
@click.pass_context
def main(context: click.Context) -> None:
    """Grade PyTorch autograd exercises."""
    if context.invoked_subcommand in _ON_THE_DATABASE:
        which_database()


def which_database() -> None:
    """Say which database the command works on, and refuse to make a new, empty one: with
    no GRADER_DATABASE_URL it is ./instance/grader.db of the folder it is run from, which
    outside the service's folder is not the service's."""
    config = settings()
    url = config.database_url
    if not config.database_url_given:
        path = Path(url.removeprefix("sqlite:///"))
        if not path.exists():
            raise click.ClickException(
                f"there is no database at {path}: run grader in the folder where `grader up` runs (its "
                "instance/ holds the database), or set GRADER_DATABASE_URL to the service's database")
    from grader.db import shown_url  # here: SQLAlchemy is a third of a second that `grader grade` needs not

    click.echo(f"database: {shown_url(url)}", err=True)


@main.group("course", cls=LazyGroup, lazy=COURSE_COMMANDS)
def course_group() -> None:
    """Courses run on the grader itself: members, assignments, the gradebook."""


@main.group("exercise", cls=LazyGroup, lazy=EXERCISE_COMMANDS)
@click.pass_context
def exercise_group(context: click.Context) -> None:
    """The exercises the service offers."""
    if context.invoked_subcommand in _EXERCISE_ON_THE_DATABASE:
        which_database()
