"""Webhooks (and every other outgoing request) never reach the service's own network:
not through a URL two parsers read differently (class 3), nor through a name that
resolves to a public address when checked and to loopback when connected (DNS
rebinding), nor through IPv6 forms that carry a loopback address (class 4).

Only loopback addresses are ever connected to here. The rebinding worker runs with a
resolver of the test's own (a sitecustomize on its path) and a guard that refuses any
connection to a non-loopback address before a packet leaves."""

from __future__ import annotations

import socket
import textwrap
import threading
import time
from pathlib import Path

import pytest
import requests
from flask import Flask

from grader import db
from grader.accounts import keys
from grader.webhooks import ApiSubmission, Webhook, WebhookDelivery
from tests.live import publish_basics, serve, shared_worker, start_worker, stop

ROOT = Path(__file__).resolve().parents[2]
SOLUTION = (ROOT / "exercises" / "autograd-basics" / "solution.py").read_text()
SQLITE_ONLY = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
PUBLIC = "1.1.1.1"  # what a checker is shown; never connected to (see the guard)

# The worker's resolver and connection guard: the first lookup of rebind.test answers a
# public address, every later one 127.0.0.1; a connection to anything but loopback fails.
SITECUSTOMIZE = textwrap.dedent(f"""
    import ipaddress, socket
    _real_getaddrinfo, _real_connect, _asked = socket.getaddrinfo, socket.socket.connect, []

    def getaddrinfo(host, port, *args, **kwargs):
        if host == "rebind.test":
            _asked.append(host)
            address = "{PUBLIC}" if len(_asked) == 1 else "127.0.0.1"
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, int(port or 80)))]
        return _real_getaddrinfo(host, port, *args, **kwargs)

    def connect(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6) and \\
                not ipaddress.ip_address(address[0].split("%")[0]).is_loopback:
            raise ConnectionRefusedError(f"test guard: no connection to {{address[0]}}")
        return _real_connect(self, address)

    socket.getaddrinfo, socket.socket.connect = getaddrinfo, connect
""")


class Receiver:
    """An internal service on 127.0.0.1 that records whatever reaches it."""

    def __init__(self):
        self.hits: list[str] = []
        self.app = Flask("internal")
        self.app.add_url_rule("/<path:path>", "any", self.hit, methods=["GET", "POST"])

    def hit(self, path):
        self.hits.append(path)
        return "internal data", 200


@pytest.fixture
def service(database_url, redis, monkeypatch):
    monkeypatch.setenv("GRADER_DATABASE_URL", database_url)
    monkeypatch.setenv("GRADER_RETRY_BASE_S", "0.2")
    # Set, not unset: a lent worker allows 127.0.0.1 where the environment does not say.
    monkeypatch.setenv("GRADER_WEBHOOK_ALLOW_PRIVATE", "0")
    monkeypatch.setenv("GRADER_OUTBOUND_ALLOW_PRIVATE", "0")
    publish_basics(database_url)
    from grader.app import create_app

    with serve(create_app({"TESTING": True, "DATABASE_URL": database_url})) as url:
        yield url


@pytest.fixture
def api_key(database_url):
    with db.transaction(database_url) as session:
        row, key = keys.create(session, ["submissions:write", "submissions:read"], name="integration")
    return row.id, {"Authorization": f"Bearer {key}"}


def _deliveries(database_url: str, receiver: Receiver, seconds: float = 90) -> list[WebhookDelivery]:
    """The delivery attempts, once one was refused as internal (or the receiver was hit)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with db.transaction(database_url) as session:
            rows = session.query(WebhookDelivery).order_by(WebhookDelivery.id).all()
        if receiver.hits or any((r.error or "").startswith("not sent") for r in rows):
            return rows
        time.sleep(0.2)
    raise AssertionError(f"no refused delivery after {seconds} s: {[(r.status_code, r.error) for r in rows]}")


@SQLITE_ONLY
def test_a_backslash_url_is_refused_at_registration_and_never_delivered(service, database_url, api_key, tmp_path):
    key_id, headers = api_key
    receiver = Receiver()
    with serve(receiver.app) as internal:
        port = internal.rsplit(":", 1)[1]
        sneaky = f"http://127.0.0.1:{port}\\@{PUBLIC}/admin/flush"
        answer = requests.post(f"{service}/api/v1/webhooks", json={"url": sneaky}, headers=headers, timeout=30)
        assert answer.status_code == 422, answer.text
        assert answer.json()["error"]["code"] == "invalid_url" and "backslash" in answer.json()["error"]["message"]
        for url in (f"http://user@{PUBLIC}/", f"http://127.0.0.1:{port}@{PUBLIC}/"):
            answer = requests.post(f"{service}/api/v1/webhooks", json={"url": url}, headers=headers, timeout=30)
            assert answer.status_code == 422 and "user name" in answer.json()["error"]["message"], url

        # A row registered before the check existed is refused when it is delivered.
        with db.transaction(database_url) as session:
            session.add(Webhook(api_key_id=key_id, url=sneaky, secret="whsec_x", active=True))
        worker = shared_worker(tmp_path)
        try:
            created = requests.post(f"{service}/api/v1/submissions", headers=headers, timeout=30, json={
                "exercise": "autograd-basics", "source": SOLUTION, "user": "s-1"})
            assert created.status_code == 202, created.text
            rows = _deliveries(database_url, receiver)
        finally:
            stop(worker)
    assert receiver.hits == []
    assert rows[-1].error.startswith("not sent") and "backslash" in rows[-1].error


@SQLITE_ONLY
def test_a_name_that_rebinds_to_loopback_is_connected_to_only_at_the_address_checked(
        service, database_url, api_key, tmp_path, monkeypatch):
    key_id, headers = api_key
    real = socket.getaddrinfo

    def registration_resolver(host, port, *args, **kwargs):  # what the web process is told
        if host == "rebind.test":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (PUBLIC, int(port or 80)))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", registration_resolver)
    (tmp_path / "resolver").mkdir()
    (tmp_path / "resolver" / "sitecustomize.py").write_text(SITECUSTOMIZE)
    receiver = Receiver()
    with serve(receiver.app) as internal:
        port = internal.rsplit(":", 1)[1]
        answer = requests.post(f"{service}/api/v1/webhooks", json={"url": f"http://rebind.test:{port}/hook"},
                               headers=headers, timeout=30)
        assert answer.status_code == 201, answer.text
        worker = start_worker(tmp_path, "worker", env={"PYTHONPATH": str(tmp_path / "resolver")})
        try:
            created = requests.post(f"{service}/api/v1/submissions", headers=headers, timeout=30, json={
                "exercise": "autograd-basics", "source": SOLUTION, "user": "s-1"})
            assert created.status_code == 202, created.text
            rows = _deliveries(database_url, receiver)
        finally:
            stop(worker)
    assert receiver.hits == [], "the delivery reached 127.0.0.1 after the check saw a public address"
    # The first attempt went to the address it checked (the guard stopped it there); the
    # next looked the name up again, found loopback and sent nothing.
    assert f"test guard: no connection to {PUBLIC}" in (rows[0].error or "")
    assert rows[-1].error.startswith("not sent") and "127.0.0.1" in rows[-1].error


IPV6_FORMS_OF_INTERNAL = [
    "::127.0.0.1",            # IPv4-compatible
    "::ffff:127.0.0.1",       # IPv4-mapped
    "64:ff9b::127.0.0.1",     # NAT64 (well-known prefix)
    "64:ff9b:1::7f00:1",      # NAT64 (local-use prefix)
    "2002:7f00:1::1",         # 6to4 of 127.0.0.1
    "2001:0:4136:e378:8000:63bf:80ff:fffe",  # Teredo (its client is 127.0.0.1)
    "::",
]


@SQLITE_ONLY
def test_ipv6_forms_of_internal_addresses_are_refused(service, api_key):
    _, headers = api_key
    accepted = []
    for address in IPV6_FORMS_OF_INTERNAL:  # registering connects to nothing
        answer = requests.post(f"{service}/api/v1/webhooks", json={"url": f"http://[{address}]:8080/hook"},
                               headers=headers, timeout=30)
        if answer.status_code != 422 or "internal address" not in answer.json()["error"]["message"]:
            accepted.append((address, answer.status_code))
    assert accepted == []


def test_the_outbound_client_follows_no_redirect_and_keeps_the_host_header(monkeypatch):
    from grader import outbound

    seen: list[str] = []
    app = Flask("redirector")

    @app.get("/start")
    def start():
        from flask import request

        seen.append(request.headers["Host"])
        return "", 302, {"Location": "http://127.0.0.1:1/elsewhere"}

    real = socket.getaddrinfo
    monkeypatch.setattr(socket, "getaddrinfo", lambda host, port, *a, **k: real(
        "127.0.0.1" if host == "hooks.example.test" else host, port, *a, **k))
    with serve(app) as url:
        port = url.rsplit(":", 1)[1]
        with outbound.Session(10, private=True) as client:
            answer = client.get(f"http://hooks.example.test:{port}/start")
    assert answer.status_code == 302 and seen == [f"hooks.example.test:{port}"]
    with pytest.raises(outbound.Refused):
        outbound.Session(10, private=False).get(f"http://hooks.example.test:{port}/start")


def _certificates(folder: Path, name: str) -> tuple[Path, Path, Path]:
    """A CA and a server certificate for ``name`` signed by it: (ca.pem, cert.pem, key.pem)."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(2).not_valid_before(now)
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    paths = folder / "ca.pem", folder / "cert.pem", folder / "key.pem"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return paths


def test_over_https_the_pinned_connection_still_verifies_the_urls_host(tmp_path, monkeypatch):
    import ssl

    from werkzeug.serving import make_server

    from grader import outbound

    ca, cert, key = _certificates(tmp_path, "hooks.example.test")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    names: list[str] = []
    context.sni_callback = lambda sock, name, ctx: names.append(name)
    app = Flask("tls")
    app.add_url_rule("/in", "in", lambda: "ok", methods=["POST"])
    server = make_server("127.0.0.1", 0, app, ssl_context=context)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    real = socket.getaddrinfo
    monkeypatch.setattr(socket, "getaddrinfo", lambda host, port, *a, **k: real(
        "127.0.0.1" if host.endswith(".example.test") else host, port, *a, **k))
    try:
        with outbound.Session(10, private=True) as client:
            answer = client.post(f"https://hooks.example.test:{server.server_port}/in", data=b"{}", verify=str(ca))
            assert answer.status_code == 200 and answer.text == "ok"
            assert names == ["hooks.example.test"]  # the URL's name, not the address connected to
            with pytest.raises(requests.exceptions.SSLError):  # a certificate for another name fails
                client.post(f"https://other.example.test:{server.server_port}/in", data=b"{}", verify=str(ca))
    finally:
        server.shutdown()
