"""The shape of an LTI message, checked before anything reads it.

An id_token is three base64url parts; its header and payload must be JSON objects and
every claim the tool or the library reads must have the type the specification gives
it. A message that is not so is malformed: refused with a page (MalformedMessage),
never read half-way into a stack trace. Checked before the signature is (a shape
check needs no trust, and the library itself reads these claims while validating).
"""

from __future__ import annotations

import base64
import binascii
import json

CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
AGS = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
NRPS = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
DEEP_LINKING = "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"
MAX_TOKEN = 64 * 1024  # far above any platform's launch; a JSON bomb stops here


class MalformedMessage(ValueError):
    """What is wrong, for the log (a claim's name, never its value)."""


def _b64json(part: str, what: str):
    try:
        raw = base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
        return json.loads(raw)
    except (binascii.Error, ValueError, UnicodeDecodeError, RecursionError):
        raise MalformedMessage(f"the id_token's {what} is not base64url JSON") from None


def _is(value, kind) -> bool:
    if kind is str:
        return isinstance(value, str)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "strings":
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if kind == "audience":
        return isinstance(value, str) or (isinstance(value, list) and bool(value)
                                          and all(isinstance(v, str) for v in value))
    if kind is dict:
        return isinstance(value, dict)
    raise AssertionError(kind)


_REQUIRED = {"iss": str, "aud": "audience", "nonce": str, "exp": "number", "iat": "number",
             CLAIM + "deployment_id": str, CLAIM + "message_type": str}
_OPTIONAL = {"sub": str, "azp": str, "name": str, "given_name": str, "family_name": str, "email": str,
             CLAIM + "version": str, CLAIM + "roles": "strings", CLAIM + "target_link_uri": str,
             CLAIM + "context": dict, CLAIM + "resource_link": dict, CLAIM + "custom": dict,
             CLAIM + "for_user": dict, AGS: dict, NRPS: dict, DEEP_LINKING: dict}
# Inside the objects above: (claim, member) -> type; "id" members are required.
_MEMBERS = {(CLAIM + "context", "id"): str, (CLAIM + "context", "title"): str,
            (CLAIM + "context", "label"): str, (CLAIM + "context", "type"): "strings",
            (CLAIM + "resource_link", "id"): str, (CLAIM + "resource_link", "title"): str,
            (CLAIM + "for_user", "user_id"): str,
            (AGS, "scope"): "strings", (AGS, "lineitem"): str, (AGS, "lineitems"): str,
            (NRPS, "context_memberships_url"): str,
            (DEEP_LINKING, "deep_link_return_url"): str, (DEEP_LINKING, "accept_types"): "strings"}
# (deep linking "data" is opaque: echoed back as it came, whatever its JSON type)
_REQUIRED_MEMBERS = {(CLAIM + "context", "id"), (CLAIM + "resource_link", "id"),
                     (DEEP_LINKING, "deep_link_return_url")}
_NAMES = {"number": "a number", "strings": "a list of strings", "audience": "a string or a list of strings",
          str: "a string", dict: "an object"}


def check(id_token) -> tuple[dict, dict]:
    """(header, payload) of an id_token of the right shape, or MalformedMessage."""
    if not isinstance(id_token, str) or not id_token or len(id_token) > MAX_TOKEN:
        raise MalformedMessage("no id_token, or one too long")
    parts = id_token.split(".")
    if len(parts) != 3:
        raise MalformedMessage("the id_token is not three dot-separated parts")
    header, body = _b64json(parts[0], "header"), _b64json(parts[1], "payload")
    if not isinstance(header, dict):
        raise MalformedMessage("the id_token's header is not a JSON object")
    if not isinstance(header.get("alg"), str) or not isinstance(header.get("kid"), str) or not header["kid"]:
        raise MalformedMessage("the id_token's header names no key (kid) or algorithm (alg) as strings")
    if not isinstance(body, dict):
        raise MalformedMessage("the id_token's payload is not a JSON object")
    for name, kind in _REQUIRED.items():
        if name not in body or not _is(body[name], kind):
            raise MalformedMessage(f"claim {name} must be {_NAMES[kind]}")
    for name, kind in _OPTIONAL.items():
        if name in body and body[name] is not None and not _is(body[name], kind):
            raise MalformedMessage(f"claim {name} must be {_NAMES[kind]}")
    for (name, member), kind in _MEMBERS.items():
        claim = body.get(name)
        if not isinstance(claim, dict):
            continue
        value = claim.get(member)
        if value is None:
            if (name, member) in _REQUIRED_MEMBERS:
                raise MalformedMessage(f"claim {name} has no {member}")
        elif not _is(value, kind):
            raise MalformedMessage(f"{member} of claim {name} must be {_NAMES[kind]}")
    custom = body.get(CLAIM + "custom")
    if isinstance(custom, dict) and not all(isinstance(v, (str, int, float, bool)) for v in custom.values()):
        raise MalformedMessage(f"the values of claim {CLAIM}custom must be strings")
    return header, body
