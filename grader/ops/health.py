"""Can the service work now: the database, the broker and the workers, each asked with a
deadline, so that a probe answers within seconds however a part is down (a firewall that
drops packets included). A failed check names the exception's type only: its text can
hold a URL with a password.
"""

from __future__ import annotations

import threading
import time

import redis as redis_py
from prometheus_client.core import GaugeMetricFamily
from sqlalchemy import text

from grader import db, tasks

CHECK_S = 1.5  # the longest the database or the broker may take to answer
PING_S = 1.0  # how long workers have to answer a ping
# Celery's queues: live work, and the regrades that wait behind it.
QUEUES = ("cpu", "cpu-regrade", "gpu", "gpu-regrade")
# Celery's Redis transport keeps a queue's messages of priority p > 0 in "<queue>\x06\x16<p>".
_PRIORITY_KEYS = ("", "\x06\x163", "\x06\x166", "\x06\x169")


def _bounded(checks: dict, seconds: float) -> dict[str, dict]:
    """Run each check (name -> (function, args)) in a thread of its own and wait for all at
    most ``seconds``: a check still running then has failed ("timed out"), and its thread
    is left to end on its own (it holds nothing the answer needs)."""
    results: dict[str, dict] = {}

    def run(name, function, args):
        try:
            results[name] = {"ok": True, **(function(*args) or {})}
        except Exception as exc:  # what failed, never its text
            results[name] = {"ok": False, "error": type(exc).__name__}

    threads = [threading.Thread(target=run, args=(name, *call), name=f"health-{name}", daemon=True)
               for name, call in checks.items()]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + seconds
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    return {name: dict(results.get(name) or {"ok": False, "error": "timed out"}) for name in checks}


def _database(url: str) -> None:
    with db.engine_for(url).connect() as connection:
        connection.execute(text("SELECT 1"))


def _redis(url: str) -> redis_py.Redis:
    return redis_py.Redis.from_url(url, socket_timeout=CHECK_S, socket_connect_timeout=CHECK_S)


def _broker(url: str) -> None:
    with _redis(url) as client:
        client.ping()


def _workers() -> dict:
    # A ping waits its whole timeout for answers that may still come; once every worker that
    # said lately it is up has answered, none other is waited for.
    expected = tasks.workers_taking(None) or None
    return {"answering": len(tasks.celery.control.ping(timeout=PING_S, limit=expected) or [])}


def readiness(database_url: str, redis_url: str) -> tuple[bool, dict[str, dict]]:
    """Whether the database, the broker and at least one worker answer, and each check's
    result ({"ok": bool, "error": type name}); within about CHECK_S + PING_S + 1 s."""
    checks = _bounded({"database": (_database, (database_url,)), "broker": (_broker, (redis_url,))}, CHECK_S)
    if checks["broker"]["ok"]:
        checks.update(_bounded({"workers": (_workers, ())}, PING_S + 1.0))
        if checks["workers"]["ok"] and not checks["workers"]["answering"]:
            checks["workers"].update(ok=False, error="no worker answered")
    else:
        checks["workers"] = {"ok": False, "error": "broker unreachable"}
    return all(check["ok"] for check in checks.values()), checks


def worker_alive(node: str, timeout: float = PING_S) -> bool:
    """Whether the worker named ``node`` (celery@host, or -n's name) answers a ping."""
    result = _bounded({"ping": (lambda: {"replies": tasks.celery.control.ping(destination=[node],
                                                                             timeout=timeout)}, ())},
                      timeout + CHECK_S)["ping"]
    return result["ok"] and any(node in reply for reply in result.get("replies") or [])


class LiveState:
    """Read at scrape time: messages waiting in each queue, whether the broker answers, and
    how many workers answer a ping (a collector for metrics.exposition)."""

    def __init__(self, redis_url: str):
        self.redis_url = redis_url

    def collect(self):
        up = GaugeMetricFamily("grader_broker_up", "1 when the broker (Redis) answers the scrape")
        depth = GaugeMetricFamily("grader_queue_depth", "Tasks waiting in each queue", labels=["queue"])
        workers = GaugeMetricFamily("grader_workers_answering", "Celery workers that answered a ping")
        checks = _bounded({"depths": (self._depths, ())}, CHECK_S)
        reachable = checks["depths"]["ok"]
        up.add_metric([], 1 if reachable else 0)
        if reachable:
            for queue, waiting in checks["depths"]["waiting"].items():
                depth.add_metric([queue], waiting)
            answering = _bounded({"workers": (_workers, ())}, PING_S + 1.0)["workers"]
        workers.add_metric([], answering.get("answering", 0) if reachable else 0)
        yield from (up, depth, workers)

    def _depths(self) -> dict:
        with _redis(self.redis_url) as client, client.pipeline(transaction=False) as pipe:
            for queue in QUEUES:
                for suffix in _PRIORITY_KEYS:
                    pipe.llen(queue + suffix)
            sizes = pipe.execute()
        n = len(_PRIORITY_KEYS)
        return {"waiting": {queue: sum(sizes[i * n:(i + 1) * n]) for i, queue in enumerate(QUEUES)}}
