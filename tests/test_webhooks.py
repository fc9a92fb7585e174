"""Webhooks: an API client registers a callback URL; when its submission is graded by a
real worker, a test receiver gets the result and checks the HMAC signature itself."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from pathlib import Path

import pytest
from flask import Flask, request

from grader import db
from grader.accounts import keys
from grader.webhooks import WebhookDelivery, sign, verify
from tests.live import publish_basics, serve, shared_worker, stop

ROOT = Path(__file__).resolve().parent.parent
SOLUTION = (ROOT / "exercises" / "autograd-basics" / "solution.py").read_text()
SQLITE_ONLY = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)


@pytest.fixture
def service(database_url, redis, monkeypatch):
    monkeypatch.setenv("GRADER_DATABASE_URL", database_url)
    monkeypatch.setenv("GRADER_RETRY_BASE_S", "0.5")  # the worker inherits it: retries come quickly
    monkeypatch.setenv("GRADER_WEBHOOK_ALLOW_PRIVATE", "1")  # the receivers listen on 127.0.0.1
    publish_basics(database_url)
    return database_url


@pytest.fixture
def api_key(service):
    with db.transaction(service) as session:
        _, key = keys.create(session, ["submissions:write", "submissions:read"], name="an LMS plug-in")
    return {"Authorization": f"Bearer {key}"}


class Receiver:
    """An integration's endpoint: verifies each delivery with the secret it was given,
    and answers the first ``failures`` deliveries with 500."""

    def __init__(self, failures: int = 0):
        self.secret = ""
        self.failures = failures
        self.received: list[dict] = []
        self.lock = threading.Lock()
        self.app = Flask("receiver")
        self.app.add_url_rule("/hook", "hook", self.hook, methods=["POST"])

    def hook(self):
        body = request.get_data()
        timestamp = request.headers.get("X-Grader-Timestamp", "")
        expected = "sha256=" + hmac.new(self.secret.encode(), timestamp.encode() + b"." + body,
                                        hashlib.sha256).hexdigest()
        valid = hmac.compare_digest(expected, request.headers.get("X-Grader-Signature", ""))
        fresh = timestamp.isdigit() and abs(time.time() - int(timestamp)) < 300
        with self.lock:
            self.received.append({"valid": valid and fresh, "body": json.loads(body),
                                  "event": request.headers.get("X-Grader-Event")})
            if self.failures > 0:
                self.failures -= 1
                return "not now", 500
        return ("", 204) if valid and fresh else ("bad signature", 401)


def test_a_graded_submission_is_delivered_signed_and_retried_after_a_failure(client, api_key, service, tmp_path):
    receiver = Receiver(failures=1)
    with serve(receiver.app) as url:
        registered = client.post("/api/v1/webhooks", json={"url": f"{url}/hook"}, headers=api_key)
        assert registered.status_code == 201, registered.get_json()
        receiver.secret = registered.get_json()["secret"]
        assert receiver.secret.startswith("whsec_") and registered.get_json()["events"] == ["submission.completed"]
        worker = shared_worker(tmp_path)
        try:
            created = client.post("/api/v1/submissions", headers=api_key,
                                  json={"exercise": "autograd-basics", "source": SOLUTION, "user": "s-1"})
            assert created.status_code == 202
            deadline = time.monotonic() + 120
            while len(receiver.received) < 2 and time.monotonic() < deadline:
                time.sleep(0.3)
        finally:
            stop(worker)
    assert len(receiver.received) == 2, (tmp_path / "worker.log").read_text()[-3000:]
    assert all(r["valid"] for r in receiver.received)
    delivered = receiver.received[-1]
    assert delivered["event"] == "submission.completed"
    result = delivered["body"]["submission"]
    assert result["id"] == created.get_json()["id"] and result["user"] == "s-1"
    assert result["status"] == "graded" and result["score"] == result["max_score"] == 6
    assert len(result["report"]["tests"]) == 4
    with db.transaction(service) as session:
        rows = session.query(WebhookDelivery).order_by(WebhookDelivery.id).all()
        assert [(r.attempt, r.ok, r.status_code) for r in rows] == [(1, False, 500), (2, True, 204)]
        assert all("X-Grader-Signature" not in (r.request_headers or {}) for r in rows)


@SQLITE_ONLY
def test_deliveries_are_visible_to_administrators_without_the_secret(client, api_key, service):
    from grader.accounts import users
    from grader.webhooks import Webhook

    secret = client.post("/api/v1/webhooks", json={"url": "https://hooks.example.org/in"},
                         headers=api_key).get_json()["secret"]
    submission = client.post("/api/v1/submissions", headers=api_key, json={
        "exercise": "autograd-basics", "source": SOLUTION, "user": "s-2"}).get_json()["id"]
    with db.transaction(service) as session:
        hook = session.query(Webhook).one()
        session.add(WebhookDelivery(webhook_id=hook.id, submission_id=submission, attempt=1, ok=False,
                                    status_code=None, error="ConnectTimeout: no answer", duration_ms=10000))
        users.create_user(session, email="teacher@example.org", password="correct horse", role="admin")
    with client.session_transaction() as browser_session:
        from grader.accounts.models import User
        with db.transaction(service) as session:
            browser_session["user_id"] = session.query(User).filter_by(email="teacher@example.org").one().id
    page = client.get("/instructor/lti/deliveries")
    text = page.get_data(as_text=True)
    assert page.status_code == 200
    assert "https://hooks.example.org/in" in text and "ConnectTimeout" in text and submission[:8] in text
    assert secret not in text


@SQLITE_ONLY
def test_registering_a_webhook_needs_the_scope_and_a_url(client, service, api_key):
    with db.transaction(service) as session:
        _, reader = keys.create(session, ["submissions:read"])
    refused = client.post("/api/v1/webhooks", json={"url": "https://x.example/h"},
                          headers={"Authorization": f"Bearer {reader}"})
    assert refused.status_code == 403 and refused.get_json()["error"]["code"] == "insufficient_scope"
    for body, code in (({"url": "ftp://x.example/h"}, "invalid_url"), ({"url": 5}, "invalid_url"),
                       ({}, "missing_field"), ({"url": "https://x.example", "events": []}, "unknown_field")):
        answer = client.post("/api/v1/webhooks", json=body, headers=api_key)
        assert answer.status_code == 422 and answer.get_json()["error"]["code"] == code, body
    made = client.post("/api/v1/webhooks", json={"url": "https://x.example/h"}, headers=api_key).get_json()
    assert client.delete(f"/api/v1/webhooks/{made['id']}", headers=api_key).status_code == 204
    gone = client.delete(f"/api/v1/webhooks/{made['id']}", headers=api_key)
    assert gone.status_code == 404 and gone.get_json()["error"]["code"] == "webhook_not_found"


def test_the_signature_covers_the_timestamp_and_the_body():
    body, now = b'{"event":"submission.completed"}', time.time()
    signature = sign("whsec_k", int(now), body)
    assert verify("whsec_k", str(int(now)), body, signature, now_s=now)
    assert not verify("whsec_k", str(int(now)), body + b" ", signature, now_s=now)
    assert not verify("whsec_k", str(int(now) + 1), body, signature, now_s=now)
    assert not verify("whsec_other", str(int(now)), body, signature, now_s=now)
    assert not verify("whsec_k", str(int(now)), body, signature, now_s=now + 3600)  # a replay, later


@SQLITE_ONLY
def test_a_submission_that_could_not_be_graded_is_delivered_too(client, api_key, service, tmp_path):
    from grader.submissions.models import Submission
    from grader.submissions.tasks import MAX_ATTEMPTS

    receiver = Receiver()
    with serve(receiver.app) as url:
        receiver.secret = client.post("/api/v1/webhooks", json={"url": f"{url}/hook"},
                                      headers=api_key).get_json()["secret"]
        created = client.post("/api/v1/submissions", headers=api_key,
                              json={"exercise": "autograd-basics", "source": SOLUTION, "user": "s-3"}).get_json()
        with db.transaction(service) as session:  # as if every attempt had been lost already
            session.get(Submission, created["id"]).attempts = MAX_ATTEMPTS
        worker = shared_worker(tmp_path)
        try:
            deadline = time.monotonic() + 60
            while not receiver.received and time.monotonic() < deadline:
                time.sleep(0.3)
        finally:
            stop(worker)
    assert len(receiver.received) == 1 and receiver.received[0]["valid"]
    result = receiver.received[0]["body"]["submission"]
    assert result["status"] == "failed" and result["score"] is None and result["failure_reason"]


@SQLITE_ONLY
def test_webhooks_cannot_point_into_the_services_own_network(client, api_key, monkeypatch):
    monkeypatch.delenv("GRADER_WEBHOOK_ALLOW_PRIVATE")
    for url in ("http://127.0.0.1:6379/", "http://localhost/hook", "http://10.0.0.7/hook",
                "http://169.254.169.254/latest/meta-data/", "http://[::1]/hook"):
        answer = client.post("/api/v1/webhooks", json={"url": url}, headers=api_key)
        assert answer.status_code == 422, url
        assert answer.get_json()["error"]["code"] == "invalid_url" and "internal address" in \
            answer.get_json()["error"]["message"], url
