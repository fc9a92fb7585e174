"""schemathesis against /api/v1, as the document served by the app describes it.

Shared by tests/test_api_fuzz.py (a bounded, deterministic run) and bench/api_fuzz.py (a long
one). Every operation is called with a key holding every scope (data that fits the document and
data that breaks it), with keys lacking the operation's scope, with a student's personal token,
without an Authorization header and with malformed ones, and, where it takes a body, with one
mangled on the wire (another content type, broken JSON or UTF-8, too large). A response must be no 5xx and keep to the document (status, content
type, body); a refused write must leave every table as it found it.
"""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass, field

import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from hypothesis import strategies as st
from schemathesis import DataGenerationMethod
from schemathesis.checks import not_a_server_error
from schemathesis.exceptions import SkipTest
from schemathesis.types import NotSet
from schemathesis.specs.openapi.checks import (content_type_conformance, response_schema_conformance,
                                               status_code_conformance)

CHECKS = (not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance)
WRITES = {"POST", "PUT", "PATCH", "DELETE"}
# No Authorization header (None), and values werkzeug can carry (latin-1) that are not a usable bearer key.
MALFORMED_AUTHORIZATION = [None, "Bearer", "Bearer ", "Bearer \t", "bearer", "Basic Zm9vOmJhcg==", "Token abc",
                           "Bearer gk_", "Bearer gk_nope_nope", "Bearer gk_" + "a" * 5000, "Bearer \xe9\xe9",
                           "Bearer gk_a_b c", "Bearer  Bearer gk_a_b", "\x7f", ""]
# What the wire may carry in place of a body the document describes: another content type, JSON
# cut short, bytes that are not UTF-8, a body over every limit. Refused before or as the view
# reads it; the document must say so, with its error body.
MANGLED = {"type": ("text/plain", lambda big: b"hello"),
           "json": ("application/json", lambda big: b'{"exercise": '),
           "utf8": ("application/json", lambda big: b'{"exercise": "\xff"}'),
           "large": ("application/json", lambda big: b" " * big)}
# How many examples per operation, per way of calling it.
BOUNDED = {"full": 16, "lacking": 3, "personal": 4, "unauthenticated": 5, "mangled": 1}


@dataclass
class World:
    """What the operations have to find: ids by path parameter name, and keys."""
    ids: dict = field(default_factory=dict)
    full_key: str = ""
    keys_lacking: dict = field(default_factory=dict)  # scope -> a key with every scope but it
    personal_key: str = ""  # the student's own token: what they may do as themselves


@dataclass(frozen=True)
class Finding:
    operation: str
    calling: str
    kind: str
    message: str
    example: str = field(compare=False, hash=False)

    def __str__(self) -> str:
        return f"{self.operation} [{self.calling}] {self.kind}: {self.message}\n    e.g. {self.example}"


def table_counts(database_url: str) -> dict[str, int]:
    """Rows in every table, in one query (it runs before and after every write)."""
    from sqlalchemy import text

    from grader import db

    names = sorted(db.Base.metadata.tables)
    query = text("SELECT " + ", ".join(f'(SELECT count(*) FROM "{name}")' for name in names))
    with db.engine_for(database_url).connect() as conn:
        return dict(zip(names, conn.execute(query).one()))


def build_world(client, database_url: str) -> World:
    """A course of a key's own with a student, an assignment of autograd-basics, a submission
    to it with a comment, an extension and an override, a webhook and a practice run."""
    from grader import db
    from grader.accounts import keys
    from tests.live import publish_basics
    from tests.test_api import GOOD_SOURCE

    publish_basics(database_url)
    with db.transaction(database_url) as session:
        full = keys.create(session, keys.SCOPES, name="fuzz")[1]
        lacking = {scope: keys.create(session, [s for s in keys.SCOPES if s != scope], name="fuzz")[1]
                   for scope in keys.SCOPES}
    auth = {"Authorization": f"Bearer {full}"}

    def ok(response, status):
        assert response.status_code == status, response.get_data(as_text=True)
        return response.get_json()

    course = ok(client.post("/api/v1/courses", headers=auth,
                            json={"title": "Fuzzed", "code": "FUZZ1", "time_zone": "Asia/Seoul"}), 201)["id"]
    ok(client.put(f"/api/v1/courses/{course}/members", headers={**auth, "Content-Type": "text/csv"},
                  data="user,name,role\nada,Ada,student\n"), 200)
    assignment = ok(client.post(f"/api/v1/courses/{course}/assignments", headers=auth, json={
        "exercise": "autograd-basics", "due_at": "2099-12-10T23:59+09:00"}), 201)["id"]
    submission = ok(client.post("/api/v1/submissions", headers=auth, json={
        "assignment": assignment, "source": GOOD_SOURCE, "user": "ada"}), 202)["id"]
    ok(client.post(f"/api/v1/submissions/{submission}/comments", headers=auth, json={"body": "Good."}), 201)
    ok(client.post(f"/api/v1/assignments/{assignment}/extensions", headers=auth,
                   json={"user": "ada", "extra_attempts": 1, "reason": "ill"}), 201)
    ok(client.post(f"/api/v1/assignments/{assignment}/overrides", headers=auth,
                   json={"user": "ada", "score": 5, "reason": "fixed"}), 201)
    user_id = ok(client.get(f"/api/v1/assignments/{assignment}/extensions", headers=auth), 200)[
        "extensions"][0]["user_id"]
    practice = client.post("/api/v1/submissions", headers=auth, json={
        "exercise": "autograd-basics", "source": GOOD_SOURCE, "user": "ada", "practice": True})
    webhook = client.post("/api/v1/webhooks", headers=auth, json={"url": "https://lms.example.edu/hook"})
    with db.transaction(database_url) as session:
        personal = keys.create(session, keys.PERSONAL_SCOPES, name="fuzz", user_id=user_id)[1]
    ids = {"course_id": course, "assignment_id": assignment, "submission_id": submission, "user_id": user_id,
           "slug": "autograd-basics", "regrade_id": 1, "check_id": 1}
    if practice.status_code == 202:
        ids["run_id"] = practice.get_json()["id"]
    if webhook.status_code == 201:
        ids["webhook_id"] = webhook.get_json()["id"]
    return World(ids=ids, full_key=full, keys_lacking=lacking, personal_key=personal)


def _example(case, response) -> str:
    body = case.body
    if isinstance(body, (bytes, str)) and len(body) > 200:
        body = body[:200]
    shown = repr(body)[:300] if body is not None else "-"
    return (f"{case.method} {case.formatted_path} query={case.query} headers={ {k: v[:60] if isinstance(v, str) else v for k, v in (case.headers or {}).items()} } "
            f"body={shown} -> {response.status_code if response is not None else '-'} "
            f"{response.get_data(as_text=True)[:300] if response is not None else ''}")


def fuzz(app, database_url: str, world: World, examples: dict[str, int] = BOUNDED,
         derandomize: bool = True, only: str | None = None, timings: dict | None = None) -> list[Finding]:
    """Every operation, every way of calling it; the findings, one per distinct failure."""
    schemathesis.experimental.OPEN_API_3_1.enable()  # the document is 3.1 (JSON Schema 2020-12)
    schema = schemathesis.from_wsgi("/api/v1/openapi.json", app)
    findings: dict[Finding, None] = {}
    for result in schema.get_all_operations():
        operation = result.ok()
        name = f"{operation.method.upper()} {operation.path}"
        if only and only not in name:
            continue
        scope = operation.definition.raw.get("x-required-scope")
        started = time.monotonic()
        callings = [("full", world.full_key)]
        if scope:
            callings += [("lacking", world.keys_lacking[scope]), ("personal", world.personal_key),
                         ("unauthenticated", None)]
        for calling, key in callings:
            methods = [DataGenerationMethod.positive]
            if calling == "full":
                methods.append(DataGenerationMethod.negative)
            for method in methods:
                n = examples[calling] if method is DataGenerationMethod.positive else max(1, examples[calling] // 2)
                _run(operation, name, app, database_url, world, calling, key, method, n, derandomize, findings)
        if operation.body:
            for mangled in MANGLED:
                _run(operation, name, app, database_url, world, f"mangled {mangled}", world.full_key,
                     DataGenerationMethod.positive, examples["mangled"], derandomize, findings, mangled)
        if timings is not None:
            timings[name] = time.monotonic() - started
    return list(findings)


def _run(operation, name, app, database_url, world, calling, key, method, n, derandomize, findings,
         mangled: str | None = None) -> None:
    label = calling if method is DataGenerationMethod.positive else f"{calling}, negative"
    try:
        strategy = operation.as_strategy(data_generation_method=method)
    except Exception as exc:  # an operation schemathesis cannot make data for is a finding of its own
        findings[Finding(name, label, "no strategy", str(exc)[:200], "")] = None
        return
    path_names = [p.name for p in operation.path_parameters]

    @given(case=strategy, known=st.booleans(), bad=st.sampled_from(MALFORMED_AUTHORIZATION))
    @settings(max_examples=n, deadline=None, derandomize=derandomize, database=None, report_multiple_bugs=False,
              suppress_health_check=list(HealthCheck))
    def one(case, known, bad):
        if known and method is DataGenerationMethod.positive:
            # Half the cases name what exists, so views get past "not found".
            case.path_parameters = {**(case.path_parameters or {}),
                                    **{p: world.ids[p] for p in path_names if p in world.ids}}
        headers = {k: v for k, v in (case.headers or {}).items() if k.lower() != "authorization"}
        if calling == "unauthenticated":
            if bad is not None:
                headers["Authorization"] = bad
        else:
            headers["Authorization"] = f"Bearer {key}"
        case.headers = headers
        if case.media_type == "multipart/form-data" and not isinstance(case.body, (dict, NotSet)):
            return  # a form that is not an object cannot be put on the wire (werkzeug's test client)
        before = table_counts(database_url) if case.method.upper() in WRITES else None
        response = None
        try:
            if mangled is None:
                response = case.call()
            else:
                response = _send_mangled(app, case, mangled)
        except Exception as exc:
            findings[Finding(name, label, "call raised", f"{type(exc).__name__}: {str(exc)[:200]}",
                             _example(case, None) + "\n" + traceback.format_exc(limit=-3))] = None
            return
        try:
            case.validate_response(response, checks=CHECKS)
        except Exception as exc:  # CheckFailed (or a group of them): one finding per distinct message
            for line in _failures(exc):
                findings[Finding(name, label, "check", line, _example(case, response))] = None
        if before is not None and 400 <= response.status_code:
            after = table_counts(database_url)
            changed = {t: (before[t], after[t]) for t in before if before[t] != after[t]}
            if changed:
                findings[Finding(name, label, "half-stored", f"{response.status_code} left {changed}",
                                 _example(case, response))] = None

    try:
        one()
    except (Unsatisfiable, SkipTest):
        pass  # nothing that breaks the document can be made here (no parameters, no body)


def _send_mangled(app, case, mangled: str):
    import requests
    import werkzeug
    from schemathesis.transports import RequestsTransport
    from schemathesis.transports.responses import WSGIResponse

    from grader.catalog.uploads import MAX_REQUEST_BYTES

    content_type, make = MANGLED[mangled]
    sent = case.as_transport_kwargs()
    for given in ("json", "data", "files"):
        sent.pop(given, None)
    sent["headers"] = {**sent.get("headers", {}), "Content-Type": content_type}
    sent["data"] = make(max(app.config["MAX_CONTENT_LENGTH"], MAX_REQUEST_BYTES) + 1)
    response = werkzeug.Client(app, WSGIResponse).open(**sent)
    # What schemathesis's checks read of the request, as its own WSGI transport leaves it.
    described = RequestsTransport().serialize_case(case, base_url=case.get_full_base_url())
    for given in ("json", "data", "files"):
        described.pop(given, None)
    described["headers"] = sent["headers"]
    response.request = requests.Request(**described, data=sent["data"]).prepare()
    return response


def _failures(exc: BaseException) -> list[str]:
    """One line per failed check: its title and what tells it apart (a status, a schema's path)."""
    causes = getattr(exc, "causes", None) or getattr(exc, "exceptions", None)
    if causes:
        return [line for cause in causes for line in _failures(cause)]
    context = getattr(exc, "context", None)
    if context is None:
        return [f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ''}"]
    if hasattr(context, "schema_path"):
        where = "/".join(map(str, context.instance_path)) or "the top"
        return [f"{context.title} at {where}: {context.validation_message[:200]}"]
    return [f"{context.title}: {context.message.strip().splitlines()[0][:200]}"]
