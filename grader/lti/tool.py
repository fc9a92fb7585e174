"""The LTI 1.3 library behind a small interface of ours: the only module that imports
pylti1p3, so that replacing the library means rewriting this file and nothing else.

What it offers: ``Tool.login()`` (OIDC login initiation), ``Tool.launch()`` (a validated
launch: its shape (claims.py), state, nonce, signature through the platform's JWKS
(cached, jwks.py), expiry, registration, deployment; or ``LaunchError``), ``Tool.deep_link_response()``, ``find_or_create_lineitem()``,
``post_score()``, ``fetch_members()`` (a course's roster, NRPS) and ``check_registration()``.
Nonces, states and launch data live in Redis.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Callable
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit, urlunsplit

import jwt
import redis as redis_py
import requests
from flask import request as flask_request
from flask_babel import lazy_gettext as _
from pylti1p3.assignments_grades import AssignmentsGradesService
from pylti1p3.contrib.flask import (FlaskCacheDataStorage, FlaskMessageLaunch, FlaskOIDCLogin,
                                    FlaskRequest)
from pylti1p3.deep_link_resource import DeepLinkResource
from pylti1p3.deployment import Deployment
from pylti1p3.exception import LtiException, LtiServiceException, OIDCException
from pylti1p3.grade import Grade
from pylti1p3.lineitem import LineItem
from pylti1p3.names_roles import NamesRolesProvisioningService
from pylti1p3.registration import Registration
from pylti1p3.service_connector import ServiceConnector
from pylti1p3.tool_config.abstract import ToolConfAbstract

from grader import outbound
from grader.escapes import plain
from grader.lti import jwks
from grader.lti.claims import MalformedMessage, check as check_shape

log = logging.getLogger(__name__)

SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
LINEITEM_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
AGS_CLAIM = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
DL_CLAIM = "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"
NRPS_CLAIM = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
NRPS_SCOPE = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
MEMBERSHIPS = "application/vnd.ims.lti-nrps.v2.membershipcontainer+json"
# A roster read stops here with an error rather than holding a worker (or the memory of
# one) for ever: far above any course's, a platform sending more is broken or hostile.
MAX_MEMBER_PAGES = 200
MAX_MEMBERS = 50_000
MAX_PAGE_BYTES = 8 * 1024 * 1024
LAUNCH_DATA_SECONDS = 3600  # how long a login's nonce and a launch's data are kept
USED_NONCE_SECONDS = 86400  # how long a used nonce is remembered (longer than any token lives)

# What a person is told, by kind of failure: (HTTP status, message). The messages are lazy (this
# table is built at import, outside any request): each is translated when shown, for its reader.
PROBLEMS = {
    "unknown_platform": (400, _("This LMS is not registered with the grader. An instructor or administrator "
                                "registers it on the grader's LMS platforms page (issuer and client id as the "
                                "LMS shows them).")),
    "platform_disabled": (403, _("This LMS's registration with the grader is disabled, so its launches are "
                                 "refused for now. Whoever manages it can enable it again on the grader's LMS "
                                 "platforms page.")),
    "unknown_deployment": (403, _("This deployment of the tool is not registered for this LMS. An instructor "
                                  "adds its deployment id to the platform's registration on the grader's LMS "
                                  "platforms page.")),
    "bad_signature": (403, _("The LMS's launch message is not signed by a key the LMS publishes. Check the "
                             "JWKS URL of the platform's registration on the grader's LMS platforms page.")),
    "expired_token": (403, _("The launch message has expired. Open the exercise from the LMS again.")),
    "replayed_nonce": (403, _("This launch message was already used. Open the exercise from the LMS again.")),
    "invalid_state": (400, _("This launch does not belong to a sign-in started in this browser. If the "
                             "LMS shows the grader in a frame, allow third-party cookies or open it in a new "
                             "window.")),
    "invalid_launch": (400, _("The LMS sent a launch the grader cannot accept.")),
    "platform_unreachable": (502, _("The grader could not reach the LMS to check the launch. Try again "
                                    "shortly.")),
}


class LaunchError(Exception):
    """A login or launch refused; ``kind`` is a key of PROBLEMS, ``detail`` is for the log."""

    def __init__(self, kind: str, detail: str = ""):
        super().__init__(f"{kind}: {detail}")
        self.kind, self.detail = kind, detail

    @property
    def status(self) -> int:
        return PROBLEMS[self.kind][0]

    @property
    def message(self) -> str:
        return str(PROBLEMS[self.kind][1])


class ServiceError(Exception):
    """A platform service call that failed; ``status`` is the HTTP status, None when the
    platform could not be reached at all."""

    def __init__(self, status: int | None, detail: str):
        super().__init__(f"{status}: {detail}")
        self.status, self.detail = status, detail


@dataclass(frozen=True)
class Platform:
    id: int
    issuer: str
    client_id: str
    deployment_ids: tuple[str, ...]
    auth_login_url: str
    auth_token_url: str
    jwks_url: str
    disabled: bool = False  # its launches are refused (grader.lti.platforms)


@dataclass(frozen=True)
class KeyPair:
    kid: str
    private_pem: str
    public_pem: str


@dataclass(frozen=True)
class Launch:
    """What a validated launch says, in our terms: the person's name and the context's title
    and label as one plain line each (grader.escapes.plain), as they are stored."""

    launch_id: str
    platform_id: int
    issuer: str
    deployment_id: str
    message_type: str  # LtiResourceLinkRequest or LtiDeepLinkingRequest
    sub: str
    name: str
    roles: tuple[str, ...]  # as the platform spells them (full URIs); roles.py reads them
    resource_link_id: str | None
    custom: dict = field(default_factory=dict)
    lineitem: str | None = None
    lineitems: str | None = None  # the context's line item container
    ags_scopes: tuple[str, ...] = ()
    context_id: str | None = None  # the course (LTI context) launched from
    context_title: str = ""
    context_label: str = ""
    deep_link_return_url: str | None = None
    memberships_url: str | None = None  # the context's roster (NRPS), where the platform offers one


@dataclass(frozen=True)
class LinkItem:
    """One item of a deep linking response: an LTI resource link with a line item."""

    title: str
    url: str
    custom: dict
    score_maximum: float
    resource_id: str


class _Session(outbound.Session):
    """What the library calls the platform with: the outbound client (public addresses,
    checked and pinned, no redirects), with a timeout on every call (the library sets none)."""

    def __init__(self, timeout: float):
        super().__init__(timeout, user_agent="autograd-grader-lti")


class _RedisCache:
    """The cache interface pylti1p3's cache storage expects, on Redis, values as JSON."""

    def __init__(self, client: redis_py.Redis):
        self.client = client

    def get(self, key: str):
        raw = self.client.get("lti:" + key)
        return None if raw is None else json.loads(raw)

    def set(self, key: str, value, exp: int | None = None) -> None:
        self.client.set("lti:" + key, json.dumps(value), ex=exp or None)


class _ToolConf(ToolConfAbstract):
    """Registrations from our database (through ``find``), signed with our current key."""

    def __init__(self, find: Callable[[str], list[Platform]], key: KeyPair,
                 keyset: Callable[[Platform, str], dict] | None = None):
        super().__init__()
        self._find, self._key, self._keyset = find, key, keyset
        self.platform: Platform | None = None
        self.kid: str | None = None  # of the token being verified: its platform's keyset is handed over

    def check_iss_has_one_client(self, iss: str) -> bool:
        return False

    def check_iss_has_many_clients(self, iss: str) -> bool:
        return True

    def _platform(self, iss: str, client_id: str | None) -> Platform:
        candidates = self._find(iss) if iss else []
        if client_id:
            candidates = [p for p in candidates if p.client_id == client_id]
        if len(candidates) != 1:
            raise LaunchError("unknown_platform", f"issuer {iss!r}, client id {client_id!r}: "
                                                  f"{len(candidates)} registrations match")
        if candidates[0].disabled:
            raise LaunchError("platform_disabled", f"issuer {iss!r}, client id {client_id!r}: registration "
                                                   f"{candidates[0].id} is disabled")
        self.platform = candidates[0]
        return self.platform

    def registration(self, platform: Platform) -> Registration:
        registration = (Registration().set_issuer(platform.issuer).set_client_id(platform.client_id)
                        .set_key_set_url(platform.jwks_url).set_auth_token_url(platform.auth_token_url)
                        .set_auth_login_url(platform.auth_login_url)
                        .set_tool_private_key(self._key.private_pem).set_tool_public_key(self._key.public_pem))
        if self.kid is not None and self._keyset is not None:
            # ours, cached: the library would fetch the keyset anew for every launch
            registration.set_key_set(self._keyset(platform, self.kid))
        return registration

    def find_registration_by_issuer(self, iss, *args, **kwargs):
        return self.registration(self._platform(iss, None))

    def find_registration_by_params(self, iss, client_id, *args, **kwargs):
        return self.registration(self._platform(iss, client_id))

    def find_deployment(self, iss, deployment_id):
        return self.find_deployment_by_params(iss, deployment_id, None)

    def find_deployment_by_params(self, iss, deployment_id, client_id, *args, **kwargs):
        platform = self._platform(iss, client_id)
        if deployment_id not in platform.deployment_ids:
            raise LaunchError("unknown_deployment", f"deployment {deployment_id!r} of issuer {iss!r}")
        return Deployment().set_deployment_id(deployment_id)


def _classify(exc: Exception) -> LaunchError:
    """The library's exception as one of our kinds (its messages are its API)."""
    if isinstance(exc, LaunchError):
        return exc
    text = str(exc)
    cause = exc.__cause__
    if isinstance(cause, jwt.ExpiredSignatureError):
        return LaunchError("expired_token", text)
    if "Can't decode id_token" in text or "Unable to find public key" in text or "KID not found" in text \
            or "ALG not found" in text:
        return LaunchError("bad_signature", text)
    if "Nonce" in text or '"nonce"' in text:
        return LaunchError("replayed_nonce", text)
    if "state" in text.lower():
        return LaunchError("invalid_state", text)
    if "Error during fetch URL" in text or "Invalid response from" in text:
        return LaunchError("platform_unreachable", text)
    if "Registration not found" in text or "Client id not registered" in text or "issuer" in text.lower():
        return LaunchError("unknown_platform", text)
    if "deployment" in text.lower():
        return LaunchError("unknown_deployment", text)
    return LaunchError("invalid_launch", text)


def _text(claim, name: str) -> str | None:
    value = claim.get(name) if isinstance(claim, dict) else None
    return value if isinstance(value, str) and value else None


def _fetch_keyset(url: str, timeout: float) -> bytes:
    """The platform's JWKS document, as bytes (redirects not followed)."""
    try:
        with _Session(timeout) as http:
            response = http.get(url, allow_redirects=False, stream=True)
            if response.status_code != 200:
                raise jwks.KeysetError(f"{url} answered {response.status_code}")
            raw = response.raw.read(jwks.MAX_BYTES + 1, decode_content=True)
    except requests.RequestException as exc:
        raise jwks.KeysetError(f"{url}: {exc}") from None
    if len(raw) > jwks.MAX_BYTES:
        raise jwks.KeysetError(f"{url}: the keyset is larger than {jwks.MAX_BYTES} bytes")
    return raw


class Tool:
    """The tool side of LTI 1.3 for one Flask request."""

    def __init__(self, find: Callable[[str], list[Platform]], key: KeyPair, redis_url: str, timeout: float = 10):
        self._redis = redis_py.Redis.from_url(redis_url)
        self._timeout = timeout
        self._conf = _ToolConf(find, key, self._keyset)

    def _keyset(self, platform: Platform, kid: str) -> dict:
        return jwks.key_set(self._redis, platform.id, platform.jwks_url, kid,
                            lambda url: _fetch_keyset(url, self._timeout))

    def _storage(self) -> FlaskCacheDataStorage:
        return FlaskCacheDataStorage(_RedisCache(self._redis))

    def login(self, launch_url: str):
        """Answer an OIDC login initiation: a redirect to the platform's auth endpoint
        carrying a fresh state (also set as a cookie) and nonce."""
        try:
            login = FlaskOIDCLogin(FlaskRequest(), self._conf)
            login.set_launch_data_storage(self._storage())
            login.set_launch_data_lifetime(LAUNCH_DATA_SECONDS)
            return login.redirect(launch_url)
        except (LtiException, OIDCException, LaunchError) as exc:
            raise _classify(exc) from None

    def launch(self) -> Launch:
        """The launch this request POSTs, validated, or LaunchError."""
        try:
            header, _body = check_shape(flask_request.form.get("id_token"))
        except MalformedMessage as exc:
            raise LaunchError("invalid_launch", str(exc)) from None
        self._conf.kid = header["kid"]
        try:
            message = FlaskMessageLaunch(FlaskRequest(), self._conf, launch_data_storage=self._storage(),
                                         requests_session=_Session(self._timeout))
            message.set_launch_data_lifetime(LAUNCH_DATA_SECONDS)
            body = message.get_launch_data()
            launch_id = message.get_launch_id()
        except (LtiException, OIDCException, LaunchError) as exc:
            raise _classify(exc) from None
        except (requests.RequestException, jwks.KeysetError) as exc:
            raise LaunchError("platform_unreachable", str(exc)) from None
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            # the library choking on a message our shape check let through: still a refusal
            log.warning("LTI launch the library could not read", exc_info=True)
            raise LaunchError("invalid_launch", f"{type(exc).__name__}: {exc}") from None
        platform = self._conf.platform
        assert platform is not None
        # pylti1p3 checks the nonce was issued here, not that it is used only once.
        used = "lti:used-nonce:" + hashlib.sha256(f"{platform.issuer}|{body.get('nonce')}".encode()).hexdigest()
        if not self._redis.set(used, "1", nx=True, ex=USED_NONCE_SECONDS):
            raise LaunchError("replayed_nonce", f"nonce of issuer {platform.issuer!r} used before")
        # Every claim read here has the type claims.check gave it (or is absent).
        ags = body.get(AGS_CLAIM) or {}
        link = body.get(CLAIM + "resource_link") or {}
        custom = body.get(CLAIM + "custom") or {}
        context = body.get(CLAIM + "context") or {}
        deep_linking = body.get(DL_CLAIM) or {}
        name = body.get("name") or " ".join(filter(None, (body.get("given_name"), body.get("family_name"))))
        return Launch(
            launch_id=launch_id, platform_id=platform.id, issuer=platform.issuer,
            deployment_id=body[CLAIM + "deployment_id"], message_type=body[CLAIM + "message_type"],
            sub=body.get("sub") or "", name=plain(name), roles=tuple(body.get(CLAIM + "roles") or ()),
            resource_link_id=link.get("id") or None,
            custom={str(k): str(v) for k, v in custom.items()},
            lineitem=_text(ags, "lineitem"), lineitems=_text(ags, "lineitems"),
            ags_scopes=tuple(ags.get("scope") or ()),
            context_id=context.get("id") or None, context_title=plain(context.get("title")),
            context_label=plain(context.get("label")),
            deep_link_return_url=_text(deep_linking, "deep_link_return_url"),
            memberships_url=_text(body.get(NRPS_CLAIM), "context_memberships_url"),
        )

    def deep_link_response(self, launch_id: str, items: list[LinkItem]) -> tuple[str, str, Platform]:
        """The signed LtiDeepLinkingResponse for the deep linking launch ``launch_id``:
        (the platform's return URL, the JWT to POST there as ``JWT``, the platform)."""
        try:
            message = FlaskMessageLaunch.from_cache(launch_id, FlaskRequest(), self._conf,
                                                    launch_data_storage=self._storage())
            if not message.is_deep_link_launch():
                raise LaunchError("invalid_launch", "not a deep linking launch")
            deep_link = message.get_deep_link()
            resources = []
            for item in items:
                line_item = (LineItem().set_score_maximum(item.score_maximum).set_label(item.title)
                             .set_resource_id(item.resource_id))
                resources.append(DeepLinkResource().set_title(item.title).set_url(item.url)
                                 .set_custom_params(item.custom).set_lineitem(line_item))
            token = deep_link.get_response_jwt(resources)
            return message.get_launch_data()[DL_CLAIM]["deep_link_return_url"], token, self._conf.platform
        except (LtiException, OIDCException) as exc:
            raise _classify(exc) from None


def _service_error(exc: Exception) -> ServiceError:
    """A failed service call as ServiceError (status None: the platform was not reached or
    its answer was unusable)."""
    if isinstance(exc, LtiServiceException):
        return ServiceError(exc.response.status_code, exc.response.text[:500])
    return ServiceError(None, f"{type(exc).__name__}: {exc}"[:500])


def _with_query(url: str, **params: str) -> str:
    """``url`` with query parameters added (a container URL may carry its own, as Moodle's does)."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True) + list(params.items())
    return urlunsplit(parts._replace(query=urlencode(query)))


class _LinkLineItems(AssignmentsGradesService):
    """The library's find-or-create, reading the container through the spec's
    resource_link_id filter (one short page instead of every line item of the course)
    and still creating in the container itself."""

    def __init__(self, connector: ServiceConnector, data: dict, resource_link_id: str):
        super().__init__(connector, data)
        self._filtered = _with_query(data["lineitems"], resource_link_id=resource_link_id)

    def get_lineitems_page(self, lineitems_url=None):
        if lineitems_url in (None, self._service_data["lineitems"]):  # the first page; later ones are the platform's
            lineitems_url = self._filtered
        return super().get_lineitems_page(lineitems_url)


def find_or_create_lineitem(platform: Platform, key: KeyPair, *, lineitems_url: str, resource_link_id: str,
                            label: str, score_maximum: float, resource_id: str, tag: str,
                            timeout: float = 10) -> str:
    """The URL of the line item of a resource link in the container ``lineitems_url``,
    created there if it has none (a placement that came with no line item). ServiceError
    when it failed."""
    registration = _ToolConf(lambda iss: [platform], key).registration(platform)
    service = _LinkLineItems(ServiceConnector(registration, _Session(timeout)),
                             {"scope": [LINEITEM_SCOPE], "lineitems": lineitems_url}, resource_link_id)
    wanted = (LineItem().set_label(label).set_score_maximum(score_maximum)
              .set_resource_link_id(resource_link_id).set_resource_id(resource_id).set_tag(tag))
    try:
        # The library compares resourceLinkId itself too: a platform may ignore the filter.
        found = service.find_or_create_lineitem(wanted, find_by="resource_link_id")
    except (LtiException, requests.RequestException, KeyError, ValueError) as exc:
        raise _service_error(exc) from None
    url = found.get_id()
    if not isinstance(url, str) or not url:
        raise ServiceError(None, f"the platform's line item has no id: {found.get_value()[:400]}")
    return url


def post_score(platform: Platform, key: KeyPair, *, lineitem_url: str, user_id: str, score: float | None,
               maximum: float | None, timestamp: datetime, comment: str = "", timeout: float = 10) -> int:
    """Publish one score to a line item (AGS), with a client-credentials token got by a
    JWT signed with our key. Returns the HTTP status; ServiceError when it failed.

    ``score`` None: the work is in but its grade is not to be shown yet ("Pending", with
    no scoreGiven nor scoreMaximum, both optional in an AGS Score); a later post, with a
    newer timestamp, brings the score."""
    registration = _ToolConf(lambda iss: [platform], key).registration(platform)
    service = AssignmentsGradesService(ServiceConnector(registration, _Session(timeout)),
                                       {"scope": [SCORE_SCOPE], "lineitem": lineitem_url})
    if timestamp.tzinfo is None:
        timestamp = timestamp.replace(tzinfo=timezone.utc)
    grade = Grade().set_user_id(user_id).set_timestamp(timestamp.isoformat(timespec="milliseconds"))
    if score is None:
        grade.set_activity_progress("Submitted").set_grading_progress("Pending")
    else:
        grade = (grade.set_score_given(score).set_score_maximum(maximum)
                 .set_activity_progress("Completed").set_grading_progress("FullyGraded"))
    if comment:
        grade.set_comment(comment)
    try:
        service.put_grade(grade)
    except requests.exceptions.JSONDecodeError:
        pass  # accepted; the platform's answer just is not JSON
    except (LtiException, requests.RequestException, KeyError, ValueError) as exc:
        raise _service_error(exc) from None
    return 200


# ------------------------------------------------------------------ checking a registration

@dataclass(frozen=True)
class Step:
    """One thing checked of a registration: ``name`` "keyset" or "token"; ``detail`` what
    was found, or why it failed (never a token or a key's private part)."""

    name: str
    ok: bool
    detail: str


def _keyset_step(platform: Platform, timeout: float) -> Step:
    try:
        keyset = jwks.parse(_fetch_keyset(platform.jwks_url, timeout))
    except jwks.KeysetError as exc:
        return Step("keyset", False, str(exc)[:500])
    usable = []
    for entry in keyset["keys"]:
        try:
            jwt.PyJWK(entry)
        except (jwt.PyJWKError, jwt.InvalidKeyError, TypeError, ValueError):
            continue
        if entry.get("kty") == "RSA" and isinstance(entry.get("kid"), str) and entry["kid"]:
            usable.append(entry["kid"])
    if not usable:  # the library finds a launch's key by its kid, and the LMS signs with RS256
        return Step("keyset", False, f"{platform.jwks_url} lists {len(keyset['keys'])} keys, none an RSA key "
                                     f"with a kid to verify launches by")
    return Step("keyset", True, f"{len(usable)} RSA keys with a kid: " + ", ".join(k[:60] for k in usable[:5]))


def _token_step(platform: Platform, key: KeyPair, timeout: float) -> Step:
    registration = _ToolConf(lambda iss: [platform], key).registration(platform)
    try:
        ServiceConnector(registration, _Session(timeout)).get_access_token([SCORE_SCOPE])
    except LtiServiceException as exc:
        return Step("token", False, f"{platform.auth_token_url} answered {exc.response.status_code}: "
                                    f"{plain(exc.response.text)[:300]}")
    except requests.exceptions.JSONDecodeError:
        return Step("token", False, f"{platform.auth_token_url} answered with something other than JSON")
    except requests.RequestException as exc:
        return Step("token", False, f"{platform.auth_token_url}: {exc}"[:500])
    except (KeyError, TypeError, ValueError):
        return Step("token", False, f"{platform.auth_token_url} answered with no access token")
    return Step("token", True, "an access token for score passback was issued")


def check_registration(platform: Platform, key: KeyPair, timeout: float = 10) -> list[Step]:
    """What the tool can check of a registration from its side (a launch only the LMS
    can start), each step on its own: the platform's keyset (fetched through the outbound
    client, a JWKS with a key to verify launches by), and its token URL (a client-credentials
    token asked for with a JWT signed by the tool's key, as score passback and roster reads ask)."""
    return [_keyset_step(platform, timeout), _token_step(platform, key, timeout)]


# ------------------------------------------------------------------ a course's roster (NRPS)

@dataclass(frozen=True)
class Member:
    """One member of a course as its platform lists it: ``user_id`` is the ``sub`` of the
    member's launches; ``name`` plain (grader.escapes.plain); ``status`` Active, Inactive or
    Deleted."""

    user_id: str
    name: str
    roles: tuple[str, ...]
    status: str


class _CappedSession(_Session):
    """The outbound client reading at most ``limit`` bytes of any answer."""

    def __init__(self, timeout: float, limit: int):
        super().__init__(timeout)
        self.limit = limit

    def request(self, method, url, *args, **kwargs):
        kwargs["stream"] = True
        response = super().request(method, url, *args, **kwargs)
        try:
            body = response.raw.read(self.limit + 1, decode_content=True)
        finally:
            response.close()
        if len(body) > self.limit:
            raise ServiceError(None, f"{url[:300]} answered more than {self.limit} bytes")
        response._content = body  # what .content, .text and .json() read
        return response


class _Memberships(NamesRolesProvisioningService):
    """The library's service, reading the next page from the Link header as sent: the
    library lower-cases the header before taking the URL out of it, and a page token may
    well hold capitals."""

    def get_members_page(self, members_url=None):
        url = members_url or self._service_data["context_memberships_url"]
        data = self._service_connector.make_service_request([NRPS_SCOPE], url, accept=MEMBERSHIPS,
                                                            case_insensitive_headers=True)
        following = [link.get("url", "") for link in requests.utils.parse_header_links(
            data["headers"].get("Link", "")) if link.get("rel", "").lower() == "next"]
        return data["body"], urljoin(url, following[0]) if following and following[0] else None


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    try:
        port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    except ValueError:
        port = None
    return parts.scheme.lower(), (parts.hostname or "").lower(), port


def _members(body, url: str) -> list[Member]:
    """A page's members, or ServiceError when the page is not a membership container."""
    def malformed(what: str) -> ServiceError:
        return ServiceError(None, f"the roster page {url[:300]} is malformed: {what}")

    if not isinstance(body, dict) or not isinstance(body.get("members"), list):
        raise malformed('not an object with a list of "members"')
    found = []
    for entry in body["members"]:
        if not isinstance(entry, dict):
            raise malformed("a member is not an object")
        user_id, roles = entry.get("user_id"), entry.get("roles", [])
        if not isinstance(user_id, str) or not 0 < len(user_id) <= 255 or any(ord(c) < 32 for c in user_id):
            raise malformed("a member's user_id is not 1 to 255 printable characters")
        if not isinstance(roles, list) or not all(isinstance(role, str) for role in roles):
            raise malformed(f"the roles of member {user_id!r} are not a list of strings")
        status = entry.get("status") or "Active"  # the specification's default
        name = entry.get("name") or " ".join(
            part for part in (entry.get("given_name"), entry.get("family_name")) if isinstance(part, str) and part)
        if not isinstance(status, str) or not isinstance(name, str):
            raise malformed(f"the status or name of member {user_id!r} is not a string")
        found.append(Member(user_id=user_id, name=plain(name), roles=tuple(roles), status=status))
    return found


def fetch_members(platform: Platform, key: KeyPair, *, memberships_url: str, timeout: float = 10,
                  max_pages: int = MAX_MEMBER_PAGES, max_members: int = MAX_MEMBERS) -> list[Member]:
    """Every member of a course (NRPS), page after page (Link rel="next"), with one
    client-credentials token. ServiceError when a page fails or is malformed, when a next
    page is on another origin than ``memberships_url`` (the token would go with it), or
    when there are more than ``max_pages`` pages or ``max_members`` members."""
    registration = _ToolConf(lambda iss: [platform], key).registration(platform)
    service = _Memberships(ServiceConnector(registration, _CappedSession(timeout, MAX_PAGE_BYTES)),
                           {"context_memberships_url": memberships_url})
    found: list[Member] = []
    url, seen = memberships_url, set()
    while url:
        if _origin(url) != _origin(memberships_url):
            raise ServiceError(None, f"the roster's next page {url[:300]} is not on the memberships URL's "
                                     f"origin; not followed")
        if url in seen:
            raise ServiceError(None, f"the roster's pages lead back to {url[:300]}")
        if len(seen) >= max_pages:
            raise ServiceError(None, f"the roster has more than {max_pages} pages; not read")
        seen.add(url)
        try:
            body, following = service.get_members_page(url)
        except requests.exceptions.JSONDecodeError:
            raise ServiceError(None, f"the roster page {url[:300]} is not JSON") from None
        except (LtiException, requests.RequestException, KeyError, ValueError) as exc:
            raise _service_error(exc) from None
        found += _members(body, url)
        if len(found) > max_members:
            raise ServiceError(None, f"the roster has more than {max_members} members; not read")
        url = following
    return found
