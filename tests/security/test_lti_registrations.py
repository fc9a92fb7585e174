"""Class 2: one instructor could sign in as another platform's users, by registering its
issuer again with their own keys or by overwriting its registration; platform URLs took
plain http; the platform's JWKS was fetched on every launch. Now an LMS user is keyed by
the registration, a registration is its owner's (or an administrator's), a known issuer
needs an administrator, URLs are https, and the JWKS is cached."""

from __future__ import annotations

import jwt
import pytest
import requests
from click.testing import CliRunner

from grader import db
from grader.lti import platforms
from grader.lti.models import LtiPlatform
from tests.lti_platform import Platform, rsa_pair
from tests.forms import csrf_over_http, signed_in_over_http
from tests.security.helpers import launch, learner, local_account, submit
from tests.lti_service import lms, service, tool  # noqa: F401  (fixtures)

SQLITE_ONLY = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)


def register(browser: requests.Session, tool: str, **fields) -> requests.Response:
    form = {"csrf_token": csrf_over_http(browser, f"{tool}/instructor/lti/platforms"), "name": "", **fields}
    if isinstance(form.get("deployment_ids"), list):
        form["deployment_ids"] = " ".join(form["deployment_ids"])
    return browser.post(f"{tool}/instructor/lti/platforms", data=form, allow_redirects=False, timeout=30)


@SQLITE_ONLY
def test_an_issuer_registered_again_reaches_none_of_its_users(lms, tool, service):
    victim = requests.Session()
    theirs = submit(victim, launch(lms, learner("student-1"), victim))
    local_account(service, "mallory@example.org", "instructor")
    mallory = signed_in_over_http(tool, "mallory@example.org")
    with Platform(tool, issuer=lms.issuer, client_id="mallorys-client").served() as forger:
        refused = register(mallory, tool, **forger.tool_registration())
        assert refused.status_code == 403 and "only an administrator" in refused.text  # before: 303
        # Registered by an administrator after all (a second client of the same LMS), its
        # launches still name other users: the key is the registration, not the issuer.
        with db.transaction(service) as session:
            platforms.add(session, **forger.tool_registration())
        intruder = requests.Session()
        page = launch(forger, learner("student-1"), intruder)
        assert page.status_code == 200
        assert intruder.get(theirs, timeout=30).status_code == 404  # before: 200, the victim's source
        assert "/submissions/" + theirs.rsplit("/", 1)[-1] not in intruder.get(f"{tool}/submissions").text


@SQLITE_ONLY
def test_only_its_owner_or_an_administrator_changes_a_registration(tool, service):
    fields = dict(issuer="https://moodle.example.edu", client_id="abc", deployment_ids=["1"],
                  auth_login_url="https://moodle.example.edu/mod/lti/auth.php",
                  auth_token_url="https://moodle.example.edu/mod/lti/token.php",
                  jwks_url="https://moodle.example.edu/mod/lti/certs.php")
    for email in ("ines@example.org", "mallory@example.org"):
        local_account(service, email, "instructor")
    ines = signed_in_over_http(tool, "ines@example.org")
    assert register(ines, tool, **fields).status_code == 303
    mallory = signed_in_over_http(tool, "mallory@example.org")
    taken = register(mallory, tool, **{**fields, "jwks_url": "https://mallory.example.org/jwks",
                                       "deployment_ids": ["mallorys"]})
    assert taken.status_code == 403 and "belongs to someone else" in taken.text  # before: 303, overwritten
    assert "moodle.example.edu" not in mallory.get(f"{tool}/instructor/lti/platforms").text.split("<form")[0]
    with db.transaction(service) as session:
        row = session.query(LtiPlatform).one()
        assert (row.jwks_url, row.deployment_ids) == (fields["jwks_url"], ["1"])
    assert register(ines, tool, **{**fields, "deployment_ids": ["2"]}).status_code == 303
    local_account(service, "root@example.org", "admin")
    root = signed_in_over_http(tool, "root@example.org")
    assert register(root, tool, **{**fields, "deployment_ids": ["3"]}).status_code == 303
    with db.transaction(service) as session:
        assert session.query(LtiPlatform).one().deployment_ids == ["1", "2", "3"]


@SQLITE_ONLY
def test_platform_urls_must_be_https(tool, service, monkeypatch):
    from grader.cli import main

    monkeypatch.delenv("GRADER_LTI_ALLOW_HTTP")
    plain = ["--issuer", "https://lms.example.edu", "--client-id", "abc", "--deployment-id", "1",
             "--auth-login-url", "http://lms.example.edu/auth", "--auth-token-url", "https://lms.example.edu/token",
             "--jwks-url", "https://lms.example.edu/jwks"]
    refused = CliRunner().invoke(main, ["lti", "add-platform", *plain])
    assert refused.exit_code == 1 and "https URL" in refused.output  # before: 0, registered
    local_account(service, "ines@example.org", "instructor")
    ines = signed_in_over_http(tool, "ines@example.org")
    page = register(ines, tool, issuer="https://lms.example.edu", client_id="abc", deployment_ids=["1"],
                    auth_login_url="https://lms.example.edu/auth", auth_token_url="https://lms.example.edu/token",
                    jwks_url="http://lms.example.edu/jwks")
    assert page.status_code == 422 and "JWKS" in page.text
    with db.transaction(service) as session:
        assert session.query(LtiPlatform).count() == 0


def _signed_by_a_stranger(token: str, platform: Platform) -> str:
    body = jwt.decode(token, options={"verify_signature": False})
    return jwt.encode(body, rsa_pair()[0], algorithm="RS256", headers={"kid": "a-kid-nobody-published"})


@SQLITE_ONLY
def test_the_platforms_keyset_is_cached_and_fetched_again_for_a_new_key(lms, redis):
    from grader.lti import jwks

    for _ in range(2):
        assert launch(lms, learner()).status_code == 200
    assert lms.jwks_requests == 1  # before: 2, one a launch
    [cached] = redis.keys("lti:jwks:*")
    assert 0 < redis.ttl(cached) <= jwks.CACHE_SECONDS  # a bounded lifetime
    lms.rotate_key()  # the platform signs with a new kid from now on
    assert launch(lms, learner()).status_code == 200
    assert lms.jwks_requests == 2
    for _ in range(2):  # a kid the platform does not publish: asked about once, then remembered
        page = launch(lms, learner(tamper=_signed_by_a_stranger))
        assert page.status_code == 403 and "<code>bad_signature</code>" in page.text
    assert lms.jwks_requests == 3
