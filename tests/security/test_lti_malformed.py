"""Class 11 (LTI): a malformed launch message (an id_token whose header or payload is a
JSON array, a claim of the wrong type) gave a 500. Now each is a refused launch, with its
page and status 400. The tokens are signed with the platform's own key, so nothing but
their shape is wrong."""

from __future__ import annotations

import base64
import json

import jwt
import pytest
from jwt.algorithms import RSAAlgorithm

from tests.lti_platform import INSTRUCTOR, Pending
from tests.security.helpers import launch, learner
from tests.lti_service import lms, service, tool  # noqa: F401  (fixtures)

SQLITE_ONLY = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
AGS = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
DEEP_LINKING = "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"


def _part(value) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()


def signed(header, body, private_pem: str) -> str:
    """A JWS over any JSON header and payload, arrays included (PyJWT makes only objects)."""
    message = f"{_part(header)}.{_part(body)}".encode()
    algorithm = RSAAlgorithm(RSAAlgorithm.SHA256)
    signature = algorithm.sign(message, algorithm.prepare_key(private_pem))
    return f"{message.decode()}.{base64.urlsafe_b64encode(signature).rstrip(b'=').decode()}"


def rewritten(header=lambda h: h, body=lambda b: b):
    def tamper(token, platform):
        return signed(header(jwt.get_unverified_header(token)),
                      body(jwt.decode(token, options={"verify_signature": False})), platform.private_key)
    return tamper


def with_claim(name, value):
    return rewritten(body=lambda b: {**b, name: value})


def without_name(b):
    b = {k: v for k, v in b.items() if k != "name"}
    return {**b, "given_name": ["Ada"], "family_name": {"x": 1}}


MALFORMED = {
    "header-array": rewritten(header=lambda h: [h]),
    "payload-array": rewritten(body=lambda b: [b]),
    "ags-claim-a-string": with_claim(AGS, "https://lms.example.edu/lineitems/1"),
    "resource-link-a-string": with_claim(CLAIM + "resource_link", "link-1"),
    "issuer-a-list": with_claim("iss", ["https://lms.example.edu"]),
    "names-not-strings": rewritten(body=without_name),
}


@SQLITE_ONLY
@pytest.mark.parametrize("tamper", MALFORMED.values(), ids=MALFORMED.keys())
def test_a_malformed_launch_is_refused_with_its_page(lms, tamper):
    page = launch(lms, learner(tamper=tamper))
    assert page.status_code == 400, page.text[:300]  # before: 500
    assert "<code>invalid_launch</code>" in page.text and "cannot accept" in page.text
    assert "Traceback" not in page.text


@SQLITE_ONLY
def test_a_malformed_deep_linking_claim_is_refused_with_its_page(lms):
    page = launch(lms, Pending(user="teacher-1", roles=[INSTRUCTOR], kind="deeplink",
                               tamper=with_claim(DEEP_LINKING, "https://lms.example.edu/return")))
    assert page.status_code == 400 and "<code>invalid_launch</code>" in page.text  # before: 500
