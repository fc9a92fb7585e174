"""/healthz, /readyz and /metrics: for the orchestrator's probes and Prometheus, apart from
the API (no key, no session, no CSRF: nothing here changes anything).

/healthz says the process serves requests; /readyz whether it can work (database, broker,
a worker), 503 when not; /metrics is Prometheus' text, for a bearer token
(GRADER_METRICS_TOKEN) or, without one, for the networks GRADER_METRICS_NETWORKS lists.
"""

from __future__ import annotations

from flask import Blueprint, Response, abort, current_app, jsonify, request

from grader.ops import health
from grader import metrics
from grader.settings import settings

bp = Blueprint("ops", __name__)


@bp.get("/healthz")
def healthz():
    return _no_store(jsonify(status="ok"))


@bp.get("/readyz")
def readyz():
    ready, checks = health.readiness(current_app.config["DATABASE_URL"], current_app.config["REDIS_URL"])
    response = jsonify(status="ok" if ready else "unavailable", checks=checks)
    response.status_code = 200 if ready else 503
    return _no_store(response)


@bp.get("/metrics")
def scrape():
    config = settings()
    refused = metrics.refusal(request.remote_addr, request.headers, token=config.metrics_token,
                              networks=config.metrics_networks, behind_proxy=config.trusted_proxies > 0)
    if refused:
        abort(refused)
    body = metrics.exposition(health.LiveState(current_app.config["REDIS_URL"]))
    return _no_store(Response(body, content_type=metrics.CONTENT_TYPE))


def _no_store(response: Response) -> Response:
    response.headers["Cache-Control"] = "no-store"
    return response
