"""What the service counts for Prometheus, and the text a scrape reads.

Each counter is incremented where its event happens (a submission received, a grade
finished, a webhook delivered), so the names below are the whole list of what is
measured. A web server's or a worker's several processes count apart: with
PROMETHEUS_MULTIPROC_DIR set (an empty folder at each start, shared by the processes of one
server), each process writes its values there and a scrape adds them up; without it, a scrape
reads the one process's registry. What is read at scrape time (queue depth, workers
answering) comes from collectors passed to :func:`exposition`.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import threading
from http import HTTPStatus
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client import (REGISTRY, CollectorRegistry, Counter, Histogram, disable_created_metrics,
                               generate_latest)
from prometheus_client.multiprocess import MultiProcessCollector

from grader.settings import settings

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
disable_created_metrics()  # no *_created series: a scrape shows what the dashboards use
if multiproc := settings().prometheus_multiproc_dir:  # each process writes its values there from its first count
    os.makedirs(multiproc, exist_ok=True)

# Seconds: a grade takes a few hundred milliseconds warm and at most GRADER_GRADE_LIMIT_S.
GRADE_BUCKETS = (0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600)
WAIT_BUCKETS = (0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)

SUBMISSIONS_RECEIVED = Counter(
    "grader_submissions_received", "Submissions accepted (committed and sent to the workers)",
    ["exercise", "way"])  # way: web, lti, api
GRADES_FINISHED = Counter(
    "grader_grades_finished", "Submissions finished: the report's status, or failed (could not grade)",
    ["exercise", "status"])
GRADE_DURATION = Histogram(
    "grader_grade_duration_seconds", "Time the engine took to grade one submission (or regrade a source)",
    ["exercise"], buckets=GRADE_BUCKETS)
QUEUE_WAIT = Histogram(
    "grader_queue_wait_seconds", "Time a new submission waited between its commit and a worker taking it",
    ["queue"], buckets=WAIT_BUCKETS)
SANDBOX_FAILURES = Counter(
    "grader_sandbox_failures", "Grades the infrastructure could not finish (retried, never a score)",
    ["reason"])  # sandbox_unavailable, sandbox_error, internal_error, exercise_unloadable
RETRIES = Counter(
    "grader_grade_retries", "Grades sent again after an infrastructure failure or by the sweeper", ["task"])
GIVE_UPS = Counter(
    "grader_grade_give_ups", "Grades given up on after their attempts (shown as could not grade)", ["task"])
LTI_SCORE_POSTS = Counter(
    "grader_lti_score_posts", "Score passback attempts to an LMS, by outcome", ["outcome"])
LTI_ROSTER_SYNCS = Counter(
    "grader_lti_roster_syncs", "LMS course roster syncs (NRPS), by outcome", ["outcome"])
WEBHOOK_DELIVERIES = Counter(
    "grader_webhook_deliveries", "Webhook delivery attempts, by outcome", ["outcome"])
REGRADES = Counter(
    "grader_regrades", "Regrades started, finished grading (ready), published or discarded", ["event"])
REGRADE_GRADES = Counter(
    "grader_regrade_grades", "A regrade's sources: queued when it starts, then graded or failed", ["status"])


def multiprocess_dir() -> str | None:
    return settings().prometheus_multiproc_dir or None


class _ThisProcess:
    """The default registry's metrics, as one collector of a scrape's own registry."""

    def collect(self):
        yield from REGISTRY.collect()


def exposition(*collectors) -> bytes:
    """The Prometheus text of this server's metrics (every process's, added up, in
    multiprocess mode) and of ``collectors``, read now."""
    registry = CollectorRegistry(auto_describe=False)
    if multiprocess_dir():
        MultiProcessCollector(registry)
    else:
        registry.register(_ThisProcess())
    for collector in collectors:
        registry.register(collector)
    return generate_latest(registry)


def refusal(remote_addr: str | None, headers, *, token: str, networks: str, behind_proxy: bool) -> int | None:
    """Whether a request may read the metrics: None when it may, else the status to answer.

    With a token set, the request must carry it as a bearer token (403 otherwise), from
    anywhere. Without one, the client must be in ``networks`` (404 otherwise, as if there
    were nothing here); a request a proxy forwarded counts only when the app trusts the
    proxy (GRADER_TRUSTED_PROXIES), since without that its address is the proxy's own.
    """
    if token:
        scheme, _, sent = headers.get("Authorization", "").partition(" ")
        good = scheme.lower() == "bearer" and hmac.compare_digest(sent.strip().encode(), token.encode())
        return None if good else 403
    if not behind_proxy and any(h in headers for h in ("X-Forwarded-For", "Forwarded", "X-Real-Ip")):
        return 404
    try:
        address = ipaddress.ip_address((remote_addr or "").split("%")[0])
    except ValueError:
        return 404
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
    for network in networks.split():
        try:
            if address in ipaddress.ip_network(network, strict=False):
                return None
        except ValueError:
            continue  # a malformed entry allows nothing
    return 404


def serve_for_worker(**_) -> None:
    """A receiver of Celery's worker_init signal: with GRADER_WORKER_METRICS_PORT set, the
    worker's main process serves its metrics there (its pool's too, in multiprocess mode),
    to the same token or networks as the web's /metrics."""
    config = settings()
    if not config.worker_metrics_port:
        return
    server = make_server("", config.worker_metrics_port, _worker_app(config), handler_class=_Quiet)
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()


def _worker_app(config):
    def app(environ, start_response):
        headers = {key[5:].replace("_", "-").title(): value for key, value in environ.items()
                   if key.startswith("HTTP_")}
        refused = refusal(environ.get("REMOTE_ADDR"), headers, token=config.metrics_token,
                          networks=config.metrics_networks, behind_proxy=False)
        if environ.get("PATH_INFO") != "/metrics":
            refused = 404
        if refused:
            start_response(f"{refused} {HTTPStatus(refused).phrase}", [("Content-Type", "text/plain")])
            return [b""]
        body = exposition()
        start_response("200 OK", [("Content-Type", CONTENT_TYPE), ("Content-Length", str(len(body)))])
        return [body]
    return app


class _Quiet(WSGIRequestHandler):
    def log_message(self, *args) -> None:  # a scrape every few seconds is not news
        pass
