"""`grader up`: the whole service on this machine."""

from __future__ import annotations

import sys

import click

from grader import up


@click.command("up")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address the web server listens on.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(1, 65535),
              help="Port the web server listens on.")
def up_command(host: str, port: int) -> None:
    """Run the whole service on this machine: migrate the database, publish the
    exercises, start Redis (if none listens at a local GRADER_REDIS_URL), a worker
    and the web server, and print the URL. Ctrl-C stops everything.

    Logs go to ./instance/logs/. Exit status 0 when stopped, 1 if a part failed.
    """
    sys.exit(up.run(host, port))
