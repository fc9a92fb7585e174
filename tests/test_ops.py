"""Operating the service: /healthz and /readyz, `grader worker-alive`, /metrics (who may
read it, its counters after a real grade, the processes of a worker's pool added up) and
JSON logs, with a real Redis and real worker processes; and the deploy/ files, which must
name only metrics the service exports."""

from __future__ import annotations

import io
import json
import logging
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

from grader import db, submissions
from grader.accounts import users
from grader.accounts.models import User
from tests.forms import token
from tests.live import publish_basics, shared_worker, start_worker, stop, wait_until_done

ROOT = Path(__file__).resolve().parent.parent
BASICS = ROOT / "exercises" / "autograd-basics"
SOLUTION = (BASICS / "solution.py").read_text(encoding="utf-8")
MARKER = "MARKER-7f3c-only-in-the-student-source"
SECRET = "session-signing-secret-0b5e1f2a9c"
TOKEN = "scraper-token-4d1c9e7b2a"


@pytest.fixture
def service(database_url, redis, monkeypatch):
    """What a deployment sets, here and in the workers started (they inherit it): the test's
    database and Redis, autograd-basics published, and a student who signs in."""
    monkeypatch.setenv("GRADER_DATABASE_URL", database_url)
    publish_basics(database_url)
    with db.transaction(database_url) as session:
        users.create_user(session, email="ada@example.org", password="correct horse", role="student", name="Ada")
    return database_url


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def submit_on_the_web(client, source: str = SOLUTION) -> str:
    """Sign in as the student and submit through the exercise's form; the submission's id."""
    client.post("/login", data={"email": "ada@example.org", "password": "correct horse",
                                "csrf_token": token(client, "/login")})
    response = client.post("/exercises/autograd-basics/submissions",
                           data={"source": source, "csrf_token": token(client, "/exercises/autograd-basics")})
    assert response.status_code == 303, response.get_data(as_text=True)[:500]
    return response.headers["Location"].rstrip("/").rsplit("/", 1)[-1]


def submit_directly(database_url: str, source: str = SOLUTION) -> str:
    with db.transaction(database_url) as session:
        user = session.query(User).filter_by(email="ada@example.org").one()
        submission_id = submissions.create(session, user=user, exercise_slug="autograd-basics", source=source).id
    submissions.enqueue(submission_id, "any")
    return submission_id


def samples(text: str) -> dict[str, float]:
    """A scrape's samples: 'name{label="value",...}' (labels as written) -> value."""
    found = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            found[name] = float(value)
    return found


def exported_names(text: str) -> set[str]:
    """Every series name a scrape declares, whether or not it has samples yet."""
    names = set()
    for name, kind in re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M):
        names |= {f"{name}_bucket", f"{name}_sum", f"{name}_count"} if kind == "histogram" else {name}
    return names


def scrape(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read().decode()


def worker_with_metrics(tmp_path: Path, name: str, **kwargs) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {"GRADER_WORKER_METRICS_PORT": str(port), **kwargs.pop("env", {})}
    return start_worker(tmp_path, name, env=env, **kwargs), f"http://127.0.0.1:{port}/metrics"


# ------------------------------------------------------------------ health

def test_healthz_says_the_process_serves_without_a_sign_in(client):
    response = client.get("/healthz")
    assert response.status_code == 200 and response.get_json() == {"status": "ok"}
    assert response.headers["Cache-Control"] == "no-store"


@pytest.mark.parametrize("database_url", ["sqlite", "postgresql"], indirect=True)
def test_readyz_is_ok_when_the_database_the_broker_and_a_worker_answer(service, client, tmp_path):
    worker = shared_worker(tmp_path)
    try:
        # Asked again, as a readiness probe is, until the new worker's first answer comes
        # within the ping's second (on a loaded machine the first may not).
        deadline = time.monotonic() + 30
        while (response := client.get("/readyz")).status_code != 200 and time.monotonic() < deadline:
            time.sleep(0.5)
    finally:
        stop(worker)
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert body["status"] == "ok"
    assert body["checks"]["database"] == {"ok": True} and body["checks"]["broker"] == {"ok": True}
    assert body["checks"]["workers"] == {"ok": True, "answering": 1}


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_readyz_is_503_and_says_so_when_no_worker_answers(client):
    response = client.get("/readyz")
    assert response.status_code == 503
    checks = response.get_json()["checks"]
    assert checks["database"]["ok"] and checks["broker"]["ok"]
    assert checks["workers"] == {"ok": False, "answering": 0, "error": "no worker answered"}


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_readyz_is_503_when_the_broker_is_down_and_shows_no_password(database_url, monkeypatch):
    from grader import tasks
    from grader.app import create_app

    monkeypatch.setenv("GRADER_REDIS_URL", f"redis://:broker-password-x1@127.0.0.1:{free_port()}/0")  # no one there
    monkeypatch.setattr(tasks, "celery", tasks.make_celery())
    response = create_app({"TESTING": True, "DATABASE_URL": database_url}).test_client().get("/readyz")
    assert response.status_code == 503
    checks = response.get_json()["checks"]
    assert checks["database"] == {"ok": True}
    assert checks["broker"]["ok"] is False and checks["broker"]["error"]
    assert checks["workers"] == {"ok": False, "error": "broker unreachable"}
    assert "broker-password-x1" not in response.get_data(as_text=True)


def test_readyz_is_503_when_the_database_is_down_and_shows_no_password(redis):
    from grader.app import create_app

    url = f"postgresql+psycopg://grader:database-password-x2@127.0.0.1:{free_port()}/grader"
    response = create_app({"TESTING": True, "DATABASE_URL": url}).test_client().get("/readyz")
    assert response.status_code == 503
    body = response.get_data(as_text=True)
    assert response.get_json()["checks"]["database"] == {"ok": False, "error": "OperationalError"}
    assert "database-password-x2" not in body and "127.0.0.1" not in body


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_worker_alive_exits_0_for_a_worker_that_answers_and_1_for_one_that_does_not(service, tmp_path):
    def alive(name: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "grader.cli", "worker-alive", "--name", name, "--timeout", "2"],
                              cwd=ROOT, env=os.environ, capture_output=True, text=True, timeout=60)

    worker = shared_worker(tmp_path)
    try:
        answered = alive("worker@%h")
        silent = alive("nobody@%h")
    finally:
        stop(worker)
    assert answered.returncode == 0, answered.stderr
    assert silent.returncode == 1 and "did not answer" in silent.stderr


# ------------------------------------------------------------------ who may read /metrics

@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_with_a_token_set_only_a_scraper_that_sends_it_reads_the_metrics(client, monkeypatch):
    monkeypatch.setenv("GRADER_METRICS_TOKEN", TOKEN)
    anywhere = {"REMOTE_ADDR": "203.0.113.7"}
    right = client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"}, environ_base=anywhere)
    assert right.status_code == 200 and "grader_queue_depth" in right.get_data(as_text=True)
    assert right.headers["Content-Type"].startswith("text/plain")
    assert client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}x"}).status_code == 403
    assert client.get("/metrics", headers={"Authorization": TOKEN}).status_code == 403
    assert client.get("/metrics").status_code == 403  # from loopback too: the token is the rule now


@pytest.mark.slow  # takes seconds: left out of the fast loop
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_without_a_token_only_the_allowed_networks_read_the_metrics(client, monkeypatch):
    def status(address: str, **headers) -> int:
        return client.get("/metrics", environ_base={"REMOTE_ADDR": address}, headers=headers).status_code

    assert status("127.0.0.1") == status("10.2.3.4") == status("192.168.1.9") == status("::1") == 200
    assert status("203.0.113.7") == status("2001:db8::1") == 404
    # Through a proxy the app does not trust, the address is the proxy's: not enough.
    assert status("127.0.0.1", **{"X-Forwarded-For": "203.0.113.7"}) == 404
    monkeypatch.setenv("GRADER_METRICS_NETWORKS", "198.51.100.0/24")
    assert status("198.51.100.20") == 200 and status("127.0.0.1") == 404


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_behind_a_trusted_proxy_the_forwarded_client_address_decides(database_url, redis, monkeypatch):
    from grader.app import create_app

    monkeypatch.setenv("GRADER_TRUSTED_PROXIES", "1")
    client = create_app({"TESTING": True, "DATABASE_URL": database_url}).test_client()
    proxy = {"REMOTE_ADDR": "10.0.0.2"}
    assert client.get("/metrics", environ_base=proxy, headers={"X-Forwarded-For": "203.0.113.7"}).status_code == 404
    assert client.get("/metrics", environ_base=proxy, headers={"X-Forwarded-For": "10.0.0.8"}).status_code == 200


# ------------------------------------------------------------------ what the metrics count

@pytest.mark.parametrize("database_url", ["sqlite", "postgresql"], indirect=True)
def test_a_graded_submission_moves_the_counters_of_the_web_and_the_worker(service, client, tmp_path):
    received = 'grader_submissions_received_total{exercise="autograd-basics",way="web"}'
    before = samples(client.get("/metrics").get_data(as_text=True)).get(received, 0)
    worker, worker_metrics = worker_with_metrics(tmp_path, "counting")
    try:
        submission_id = submit_on_the_web(client)
        assert wait_until_done(service, [submission_id], seconds=90)[0].status == "graded"
        counted = samples(scrape(worker_metrics))
    finally:
        stop(worker)
    web = samples(client.get("/metrics").get_data(as_text=True))
    assert web[received] == before + 1
    assert web['grader_queue_depth{queue="cpu"}'] == 0 and web["grader_broker_up"] == 1
    assert counted['grader_grades_finished_total{exercise="autograd-basics",status="graded"}'] == 1
    assert counted['grader_grade_duration_seconds_count{exercise="autograd-basics"}'] == 1
    assert counted['grader_queue_wait_seconds_count{queue="cpu"}'] == 1
    assert not any(line.startswith("{") for line in (tmp_path / "counting.log").read_text().splitlines())


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_the_queue_depth_counts_what_waits_for_a_worker(service, client):
    waiting = [submit_directly(service) for _ in range(3)]
    assert len(waiting) == 3
    assert samples(client.get("/metrics").get_data(as_text=True))['grader_queue_depth{queue="cpu"}'] == 3


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_in_multiprocess_mode_a_prefork_worker_serves_its_pools_counts_added_up(service, tmp_path):
    folder = tmp_path / "prometheus"
    folder.mkdir()
    worker, worker_metrics = worker_with_metrics(tmp_path, "pool", pool="prefork",
                                                 env={"PROMETHEUS_MULTIPROC_DIR": str(folder)})
    try:
        ids = [submit_directly(service) for _ in range(4)]
        assert all(row.status == "graded" for row in wait_until_done(service, ids, seconds=180))
        counted = samples(scrape(worker_metrics))  # served by the main process, which grades nothing
    finally:
        stop(worker)
    assert counted['grader_grades_finished_total{exercise="autograd-basics",status="graded"}'] == 4
    assert counted['grader_grade_duration_seconds_count{exercise="autograd-basics"}'] == 4


def test_in_multiprocess_mode_a_scrape_adds_up_every_process(tmp_path):
    """As gunicorn's workers do: each process counts into the folder, any process reads the sum."""
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    count = ("from grader import metrics; import sys; "
             "metrics.SUBMISSIONS_RECEIVED.labels('autograd-basics', 'api').inc(int(sys.argv[1]))")
    for n in ("1", "2"):
        subprocess.run([sys.executable, "-c", count, n], cwd=ROOT, env=env, check=True, timeout=60)
    shown = subprocess.run([sys.executable, "-c", "from grader import metrics; "
                            "print(metrics.exposition().decode())"],
                           cwd=ROOT, env=env, check=True, timeout=60, capture_output=True, text=True).stdout
    assert samples(shown)['grader_submissions_received_total{exercise="autograd-basics",way="api"}'] == 3


# ------------------------------------------------------------------ JSON logs

@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_json_log_lines_carry_the_grade_and_neither_the_source_nor_a_secret(service, tmp_path):
    worker = start_worker(tmp_path, "json", env={"GRADER_LOG_FORMAT": "json", "GRADER_SECRET_KEY": SECRET})
    try:
        submission_id = submit_directly(service, SOLUTION + f"\n# {MARKER}\n")
        assert wait_until_done(service, [submission_id], seconds=90)[0].status == "graded"
    finally:
        stop(worker)
    text = (tmp_path / "json.log").read_text()
    assert MARKER not in text and SECRET not in text
    lines = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
    assert lines and all({"time", "level", "logger", "message"} <= set(line) for line in lines)
    grading = [line for line in lines if line.get("submission") == submission_id]
    assert any(line["message"].startswith(f"graded {submission_id}") for line in grading)
    for line in grading:
        assert line["exercise"] == "autograd-basics" and line["worker"] == f"json@{socket.gethostname()}"
        assert isinstance(line["duration_s"], float) and line["duration_s"] >= 0


def test_a_json_line_masks_passwords_tokens_keys_and_sql_parameters(monkeypatch):
    from sqlalchemy.exc import IntegrityError

    from grader.logs import JsonFormatter

    monkeypatch.setenv("GRADER_SECRET_KEY", SECRET)
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(JsonFormatter())
    log = logging.getLogger("tests.ops.masking")
    log.addHandler(handler)
    try:
        log.warning("to postgresql+psycopg://grader:pg-password-x3@db/grader, Bearer %s, key %s, %s",
                    TOKEN, "gk_0123456789ab_" + "k" * 43, SECRET, extra={"source": MARKER})
        try:
            raise IntegrityError("INSERT INTO submissions (source) VALUES (?)", (MARKER,), Exception("constraint"))
        except IntegrityError:
            log.exception("could not store")
    finally:
        log.removeHandler(handler)
    first, second = (json.loads(line) for line in out.getvalue().splitlines())
    for secret in ("pg-password-x3", TOKEN, "k" * 43, SECRET, MARKER):
        assert secret not in out.getvalue()
    assert "postgresql+psycopg://grader:***@db/grader" in first["message"] and "source" not in first
    assert second["level"] == "ERROR" and "IntegrityError" in second["exception"]


# ------------------------------------------------------------------ deploy/

def referenced(expressions: list[str]) -> set[str]:
    return {name for expr in expressions for name in re.findall(r"\bgrader_[a-z0-9_]+", expr)}


@pytest.mark.slow  # takes seconds: left out of the fast loop
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_the_alert_rules_and_the_dashboard_name_only_metrics_the_service_exports(service, client):
    rules = yaml.safe_load((ROOT / "deploy" / "prometheus" / "alerts.yml").read_text())
    alerts = [rule for group in rules["groups"] for rule in group["rules"]]
    assert {"GraderQueueWaitHigh", "GraderSandboxFailures", "GraderNoWorkerUp"} <= {a["alert"] for a in alerts}
    dashboard = json.loads((ROOT / "deploy" / "grafana" / "grader.json").read_text())
    queries = [t["expr"] for panel in dashboard["panels"] for t in panel.get("targets", [])]
    assert queries and all(a["expr"] for a in alerts)

    submit_on_the_web(client)  # some activity first
    exported = exported_names(client.get("/metrics").get_data(as_text=True))
    used = referenced([a["expr"] for a in alerts]) | referenced(queries)
    assert used and used <= exported, used - exported
    shown = {"grader_submissions_received_total", "grader_grades_finished_total", "grader_queue_depth",
             "grader_queue_wait_seconds_bucket", "grader_grade_duration_seconds_bucket",
             "grader_sandbox_failures_total", "grader_grade_retries_total", "grader_grade_give_ups_total",
             "grader_lti_score_posts_total", "grader_webhook_deliveries_total", "grader_regrade_grades_total",
             "grader_workers_answering"}
    assert shown <= referenced(queries), shown - referenced(queries)
