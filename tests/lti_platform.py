"""A small LTI 1.3 platform (an LMS, as far as the tool can tell) for the tests, built on
lti1p3platform, a platform-side LTI library none of us wrote, and served over HTTP.

It exposes what a real LMS does: its JWKS, an OIDC authorization endpoint that answers
the tool's login redirect with a signed launch form, an OAuth2 token endpoint, a line
item scores endpoint (AGS) that checks each score against the spec and records what it
keeps (a score older than the last one kept is refused, as a platform does), the course's
line item container (AGS: listed and added to by a tool holding the line item scope, as
for a placement that came without a line item), a deep linking return endpoint that
validates the tool's response, and the course's roster (NRPS: /memberships, the members a
test sets, a page at a time with a Link rel="next" header). Launches start at /start, as
a click on a link in a course would.

Also: ``follow_forms`` drives an HTTP session through auto-submitting forms, the way a
browser runs the platform's and the tool's form-post JavaScript.
"""

from __future__ import annotations

import contextlib
import functools
import json
import secrets
import threading
from dataclasses import dataclass, field
from datetime import datetime
from html.parser import HTMLParser
from typing import Callable
from urllib.parse import urljoin

import jwt
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from flask import Flask, jsonify, redirect, request
from jinja2 import Template
from lti1p3platform.ltiplatform import LTI1P3PlatformConfAbstract
from lti1p3platform.message_launch import LTIAdvantageMessageLaunchAbstract
from lti1p3platform.oidc_login import OIDCLoginAbstract
from lti1p3platform.registration import Registration
from lti1p3platform.request import Request
from lti1p3platform.exceptions import LineItemNotFoundException, LtiServiceException
from lti1p3platform.membership import Context
from lti1p3platform.score import UpdateScoreStatus
from lti1p3platform.service_connector import AssignmentsGradesService, NamesRoleProvisioningService

from tests.live import serve

LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
TEACHING_ASSISTANT = "http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant"
MEMBERSHIPS = "application/vnd.ims.lti-nrps.v2.membershipcontainer+json"
_LAUNCH_FORM = Template(
    '<!doctype html><form id="launch" method="post" action="{{ launch_url }}">'
    '<input type="hidden" name="id_token" value="{{ id_token }}">'
    '<input type="hidden" name="state" value="{{ state }}"></form>'
    '<script>document.getElementById("launch").submit();</script>')


@functools.lru_cache(maxsize=64)
def _jwk_json(pem: str) -> str:
    return json.dumps(Registration.get_jwk(pem))


@functools.lru_cache(maxsize=64)
def _private_key(pem: str):
    return serialization.load_pem_private_key(pem.encode(), password=None)


class _Registration(Registration):
    """lti1p3platform's registration, reading each key once rather than at every launch and
    token (parsing and checking a PEM key took a tenth of the fast loop's LTI tests)."""

    def get_platform_private_key(self):
        pem = super().get_platform_private_key()
        return _private_key(pem) if pem else None  # PyJWT signs with a key object as with its PEM

    def get_kid(self):
        public = self.get_platform_public_key()
        return json.loads(_jwk_json(public))["kid"] if public else None

    def get_jwks(self):
        public = self.get_platform_public_key()
        return [json.loads(_jwk_json(public))] if public else []


def rsa_pair() -> tuple[str, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return private, public


class _Request(Request):
    def build_metadata(self, flask_request):
        return {"method": flask_request.method, "form_data": flask_request.form.to_dict(),
                "get_data": flask_request.args.to_dict(), "headers": flask_request.headers,
                "content_type": flask_request.content_type, "path": flask_request.path,
                "json": flask_request.get_json(silent=True)}


class _PagedRequest(_Request):
    """The query as lti1p3platform's member paging can use it: it makes the next page
    ``page + 1``, which fails on the string a query holds (so the page is a number here),
    and it pages only when the tool asked for a limit (so the platform's page size stands
    in for one)."""

    def __init__(self, flask_request, page_size: int):
        self.page_size = page_size
        super().__init__(flask_request)

    def build_metadata(self, flask_request):
        metadata = super().build_metadata(flask_request)
        query = metadata["get_data"]
        query["page"] = int(query.get("page") or 1)
        query.setdefault("limit", str(self.page_size))
        return metadata


ACTIVITY_PROGRESS = ("Initialized", "Started", "InProgress", "Submitted", "Completed")
GRADING_PROGRESS = ("FullyGraded", "Pending", "PendingManual", "Failed", "NotReady")


def score_problem(score: dict) -> str | None:
    """What makes a posted score invalid under AGS 2.0 (section 3.4): userId, timestamp and
    both progress values required, each progress one of its vocabulary; scoreGiven optional
    (none: no score is shown), but a number at or above 0 and with a scoreMaximum above 0
    when present. lti1p3platform leaves this check to its platform."""
    if not score.get("userId") or not score.get("timestamp"):
        return "userId and timestamp are required"
    if score.get("activityProgress") not in ACTIVITY_PROGRESS:
        return f"activityProgress {score.get('activityProgress')!r} is not one of {ACTIVITY_PROGRESS}"
    if score.get("gradingProgress") not in GRADING_PROGRESS:
        return f"gradingProgress {score.get('gradingProgress')!r} is not one of {GRADING_PROGRESS}"
    given, maximum = score.get("scoreGiven"), score.get("scoreMaximum")
    if given is not None and not (isinstance(given, (int, float)) and given >= 0
                                  and isinstance(maximum, (int, float)) and maximum > 0):
        return "scoreGiven needs a scoreMaximum above 0, and both must be numbers"
    return None


def member(user: str, roles: list[str], name: str = "", status: str = "Active") -> dict:
    """One member of the course's roster, as NRPS lists one."""
    return {"user_id": user, "roles": roles, "status": status, **({"name": name} if name else {})}


@dataclass
class Pending:
    """A launch a user started by clicking a link in the course."""

    user: str
    roles: list[str]
    name: str = "Ada Lovelace"
    kind: str = "resource"  # or "deeplink"
    resource_link: str = "link-1"
    lineitem: bool = True  # False: the AGS claim names only the container (the tool may create one)
    custom: dict = field(default_factory=dict)
    expires_in: int = 300  # seconds; negative: the id token is expired when it is made
    deployment_id: str | None = None  # another than the registered one
    sign_with: str | None = None  # a private key other than the platform's, same kid
    context: str | None = "course-1"  # the course (LTI context) launched from; None: no context claim
    context_title: str | None = None  # the context's title and label: by default made from its id
    context_label: str | None = None
    return_url: str | None = None  # deep linking: another return URL than the platform's own
    nrps: bool = False  # the launch names the course's roster (NRPS claim)
    # the signed id token rewritten (tamper(token, platform) -> token), e.g. a malformed one
    tamper: Callable[[str, "Platform"], str] | None = None


class Platform:
    def __init__(self, tool_url: str, *, issuer: str = "https://lms.example.edu", client_id: str = "grader-tool",
                 deployment_id: str = "deployment-1"):
        self.tool_url, self.issuer, self.client_id, self.deployment_id = tool_url, issuer, client_id, deployment_id
        self.private_key, self.public_key = rsa_pair()
        self.url = ""  # once served
        self.pending: dict[str, Pending] = {}
        self.scores: list[dict] = []
        self.lineitems: list[dict] = []  # created by the tool, in the container
        self.lineitem_queries: list[dict] = []  # the container's GETs, by their query parameters
        self.deep_links: list[list[dict]] = []
        self.errors: list[str] = []
        self.token_requests = 0
        self.jwks_requests = 0
        self.fail_scores = 0  # answer this many score posts with 503 first
        self.roster: list[dict] = []  # the course's members (member()), as /memberships lists them
        self.roster_page_size = 50
        self.memberships_requests: list[dict] = []  # the query of each GET, as sent
        self.memberships_answers: dict[int, tuple[int, str]] = {}  # page -> (status, body) sent instead
        self.next_page_origin: str | None = None  # a next page's link names this origin instead
        self._lock = threading.Lock()
        self.app = self._make_app()

    # ---------------------------------------------------------------- lti1p3platform wiring

    def registration(self) -> Registration:
        return (_Registration().set_iss(self.issuer).set_client_id(self.client_id)
                .set_deployment_id(self.deployment_id)
                .set_oidc_login_url(f"{self.tool_url}/lti/login").set_launch_url(f"{self.tool_url}/lti/launch")
                .set_deeplink_launch_url(f"{self.tool_url}/lti/launch")
                .set_tool_key_set_url(f"{self.tool_url}/lti/jwks")
                .set_platform_public_key(self.public_key).set_platform_private_key(self.private_key))

    def config(self) -> LTI1P3PlatformConfAbstract:
        platform = self

        class Config(LTI1P3PlatformConfAbstract):
            def init_platform_config(self, **kwargs):
                self._registration = platform.registration()

            def get_registration_by_params(self, **kwargs):
                return platform.registration()

        return Config()

    def rotate_key(self) -> None:
        """A new key pair (so a new kid), as a platform rotating its keys does."""
        self.private_key, self.public_key = rsa_pair()

    @property
    def kid(self) -> str:
        return json.loads(_jwk_json(self.public_key))["kid"]

    def tool_registration(self) -> dict:
        """What an administrator types into the tool's platform form."""
        return dict(issuer=self.issuer, client_id=self.client_id, deployment_ids=[self.deployment_id],
                    auth_login_url=f"{self.url}/auth", auth_token_url=f"{self.url}/token",
                    jwks_url=f"{self.url}/jwks")

    def start_url(self, pending: Pending) -> str:
        hint = secrets.token_hex(8)
        self.pending[hint] = pending
        return f"{self.url}/start/{hint}"

    # ---------------------------------------------------------------- the HTTP side

    def _make_app(self) -> Flask:
        app = Flask("test_platform")
        platform = self

        class Login(OIDCLoginAbstract):
            def set_lti_message_hint(self, **kwargs):
                self._lti_message_hint = kwargs["hint"]

            def get_redirect(self, url):
                return redirect(url)

        class Launch(LTIAdvantageMessageLaunchAbstract):
            def get_preflight_response(self):
                return request.args.to_dict() if request.method == "GET" else request.form.to_dict()

            def prepare_launch(self, preflight_response):
                pending = platform.pending[preflight_response["lti_message_hint"]]
                self.set_user_data(pending.user, pending.roles, full_name=pending.name)
                self.set_id_token_expiration(pending.expires_in)
                if pending.context:
                    self.set_launch_context_claim(
                        pending.context, context_title=pending.context_title or f"Deep learning ({pending.context})",
                        context_label=pending.context_label or pending.context.upper())
                if pending.kind == "deeplink":
                    self.set_dl(pending.return_url or f"{platform.url}/deep_link_return", title="Choose exercises",
                                accept_types={"ltiResourceLink"}, extra_data={"opaque": "kept"})
                else:
                    self.set_resource_link_claim(pending.resource_link, title="An exercise")
                    self.set_custom_parameters_claim(pending.custom)
                    if pending.lineitem:
                        self.set_ags(f"{platform.url}/lineitems", lineitem_url=f"{platform.url}/lineitems/1",
                                     allow_creating_lineitems=False)
                    else:  # no line item; the lineitem scope lets the tool make one
                        self.set_ags(f"{platform.url}/lineitems", allow_creating_lineitems=True)
                if pending.nrps and pending.context:
                    self.set_nrps(f"{platform.url}/memberships")
                if pending.deployment_id:
                    self.set_extra_claims({"https://purl.imsglobal.org/spec/lti/claim/deployment_id":
                                           pending.deployment_id})
                self._pending = pending

            def generate_launch_request(self):
                data = super().generate_launch_request()
                if self._pending.sign_with:  # a forgery: the body re-signed by another key, same kid
                    body = jwt.decode(data["id_token"], options={"verify_signature": False})
                    data["id_token"] = jwt.encode(body, self._pending.sign_with, algorithm="RS256",
                                                  headers={"kid": platform.kid})
                if self._pending.tamper:
                    data["id_token"] = self._pending.tamper(data["id_token"], platform)
                return data

            def render_launch_form(self, launch_data, **kwargs):
                return _LAUNCH_FORM.render(**launch_data)

        class Grades(AssignmentsGradesService):
            def find_lineitems(self, page=1, limit=None, line_item_id=None, resource_link_id=None,
                               resource_id=None, tag=None):
                wanted = {"resourceLinkId": resource_link_id, "resourceId": resource_id, "tag": tag}
                with platform._lock:
                    platform.lineitem_queries.append({k: v for k, v in wanted.items() if v is not None})
                    found = [item for item in platform.lineitems
                             if all(v is None or item.get(k) == v for k, v in wanted.items())]
                return {"content": found, "has_next": False}

            def find_lineitem(self, line_item_id):
                return {"id": f"{platform.url}/lineitems/{line_item_id}", "scoreMaximum": 6, "label": "x"}

            def create_lineitem(self, creation_data):
                if not creation_data.get("label") or not creation_data.get("scoreMaximum"):
                    raise LtiServiceException("a line item needs a label and a scoreMaximum", 400)
                with platform._lock:  # "1" is the launch's line item
                    item = {**creation_data, "id": f"{platform.url}/lineitems/{len(platform.lineitems) + 2}"}
                    platform.lineitems.append(item)
                return item

            def update_lineitem(self, *args, **kwargs):
                raise NotImplementedError

            def delete_lineitem(self, *args, **kwargs):
                raise NotImplementedError

            def get_results(self, *args, **kwargs):
                return []

            def update_score(self, line_item_id, score):
                problem = score_problem(score)
                if problem:
                    raise LtiServiceException(problem, 400)
                with platform._lock:
                    if line_item_id != "1" and f"{platform.url}/lineitems/{line_item_id}" not in \
                            [item["id"] for item in platform.lineitems]:
                        raise LineItemNotFoundException(line_item_id)
                    mine = [s for s in platform.scores if s["userId"] == score["userId"]
                            and s["lineitem"] == line_item_id]
                    stamp = datetime.fromisoformat(score["timestamp"])
                    if mine and datetime.fromisoformat(mine[-1]["timestamp"]) > stamp:
                        return UpdateScoreStatus.OLD_TIMESTAMP
                    platform.scores.append({**score, "lineitem": line_item_id})
                return UpdateScoreStatus.SUCCESS

        class Members(NamesRoleProvisioningService):
            def get_member_data_page(self, page=1, limit=None, role=None, since=None, **query):
                size = int(limit)
                with platform._lock:
                    everyone = [dict(m) for m in platform.roster]
                start = (page - 1) * size
                return {"content": everyone[start:start + size], "has_next": start + size < len(everyone)}

            def get_context_by_id(self):
                return Context(id="course-1", label="COURSE-1", title="Deep learning (course-1)")

        @app.get("/jwks")
        def jwks():
            platform.jwks_requests += 1
            return jsonify(keys=platform.registration().get_jwks())

        @app.get("/start/<hint>")
        def start(hint):
            login = Login(_Request(request), platform.config())
            login.set_lti_message_hint(hint=hint)
            return login.initiate_login(platform.pending[hint].user)

        @app.route("/auth", methods=("GET", "POST"))
        def auth():
            try:
                return Launch(_Request(request), platform.config()).lti_launch()
            except Exception as exc:  # noqa: BLE001 - a test double: say what went wrong
                platform.errors.append(f"auth: {exc!r}")
                return f"refused: {exc!r}", 400

        @app.post("/token")
        def token():
            platform.token_requests += 1
            try:
                return jsonify(platform.config().get_access_token(request.form.to_dict()))
            except Exception as exc:  # noqa: BLE001
                platform.errors.append(f"token: {exc!r}")
                return jsonify(error="invalid_client", error_description=repr(exc)), 400

        @app.post("/lineitems/<line_item_id>/scores")
        def scores(line_item_id):
            if platform.fail_scores > 0:
                platform.fail_scores -= 1
                return "busy", 503
            config = platform.config()
            config.get_registration()
            service = Grades(_Request(request), config, f"{platform.url}/lineitems",
                             f"{platform.url}/lineitems/{line_item_id}", allow_creating_lineitems=False)
            result = service.handle_resp(service.handle_update_score, line_item_id=line_item_id)
            if result.code >= 400:
                platform.errors.append(f"scores: {result.code} {result.message}")
            return jsonify(message=result.message), result.code

        @app.route("/lineitems", methods=("GET", "POST"))
        def lineitems():
            config = platform.config()
            config.get_registration()
            # Only the line item scope opens the container: not the score scope the tool also holds.
            service = Grades(_Request(request), config, f"{platform.url}/lineitems", allow_creating_lineitems=True,
                             results_service_enabled=False, scores_service_enabled=False)
            handler = service.handle_get_lineitems if request.method == "GET" else service.handle_create_lineitem
            try:
                result = service.handle_resp(handler)
            except Exception as exc:  # noqa: BLE001 - the library raises on a token it cannot decode
                platform.errors.append(f"lineitems: {exc!r}")
                return jsonify(message=repr(exc)), 401
            if result.code >= 400:
                platform.errors.append(f"lineitems: {result.code} {result.message}")
                return jsonify(message=result.message), result.code
            body = result.result["content"] if request.method == "GET" else result.result
            return jsonify(body), result.code, {"Content-Type": result.media_type}

        @app.get("/memberships")
        def memberships():
            with platform._lock:
                platform.memberships_requests.append(request.args.to_dict())
            page = int(request.args.get("page") or 1)
            if page in platform.memberships_answers:
                status, body = platform.memberships_answers[page]
                return body, status, {"Content-Type": MEMBERSHIPS}
            config = platform.config()
            config.get_registration()
            service = Members(_PagedRequest(request, platform.roster_page_size), config, f"{platform.url}/memberships")
            try:  # the library checks the bearer token and its scope
                result = service.handle_resp(service.handle_get_members)
            except Exception as exc:  # noqa: BLE001 - it raises on a token it cannot decode
                platform.errors.append(f"memberships: {exc!r}")
                return jsonify(message=repr(exc)), 401
            if result.code >= 400:
                platform.errors.append(f"memberships: {result.code} {result.message}")
                return jsonify(message=result.message), result.code
            body = dict(result.result)
            following = body.pop("next", None)  # NRPS 2.0 names the next page in a Link header
            headers = {"Content-Type": result.media_type}
            if following:
                if platform.next_page_origin:
                    following = platform.next_page_origin + following[len(platform.url):]
                headers["Link"] = f'<{following}>; rel="next"'
            return jsonify(body), 200, headers

        @app.post("/deep_link_return")
        def deep_link_return():
            config = platform.config()
            config.get_registration()
            try:
                items = config.validate_deeplinking_resp({"JWT": request.form["JWT"]})
            except Exception as exc:  # noqa: BLE001
                platform.errors.append(f"deep link: {exc!r}")
                return f"refused: {exc!r}", 400
            platform.deep_links.append(items)
            return "the course now links to the chosen exercises"

        return app

    @contextlib.contextmanager
    def served(self):
        with serve(self.app) as url:
            self.url = url
            yield self


# ------------------------------------------------------------------ a browser, as far as forms go

class _Forms(HTMLParser):
    def __init__(self):
        super().__init__()
        self.forms: list[dict] = []
        self._current: dict | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form":
            self._current = {"id": attrs.get("id"), "action": attrs.get("action") or "",
                             "method": (attrs.get("method") or "get").lower(), "fields": {}}
            self.forms.append(self._current)
        elif tag in ("input", "textarea") and self._current is not None and attrs.get("name"):
            if attrs.get("type") not in ("checkbox", "file", "submit"):
                self._current["fields"][attrs["name"]] = attrs.get("value") or ""

    def handle_endtag(self, tag):
        if tag == "form":
            self._current = None


def forms(html: str) -> list[dict]:
    parser = _Forms()
    parser.feed(html)
    return parser.forms


def follow_forms(session: requests.Session, response: requests.Response, limit: int = 5) -> requests.Response:
    """Submit auto-submitting forms (a page whose script submits a form) as a browser would."""
    for _ in range(limit):
        if "text/html" not in response.headers.get("Content-Type", "") or ".submit()" not in response.text:
            return response
        form = forms(response.text)[0]
        response = session.post(urljoin(response.url, form["action"]), data=form["fields"], timeout=30)
    return response
