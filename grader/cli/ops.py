"""`grader worker-alive`: the workers' liveness probe (it runs every few seconds, so it
imports no more than the ping needs: never torch)."""

from __future__ import annotations

import socket
import sys

import click

from grader.ops import health


@click.command("worker-alive")
@click.option("--name", "node", default="celery@%h", show_default=True,
              help="The worker's node name, as given to celery -n (%h: this host's name).")
@click.option("--timeout", default=2.0, show_default=True, type=click.FloatRange(0.1, 30),
              help="Seconds the worker has to answer.")
def worker_alive_command(node: str, timeout: float) -> None:
    """Exit 0 when this host's Celery worker answers a ping through the broker, 1 when it
    does not: a liveness probe for docker compose and Kubernetes (a worker of the solo pool
    answers only between grades)."""
    node = node.replace("%h", socket.gethostname())
    if not health.worker_alive(node, timeout):
        click.echo(f"worker {node} did not answer within {timeout:g} s", err=True)
        sys.exit(1)
    click.echo(f"worker {node} answered", err=True)
