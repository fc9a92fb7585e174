"""Class 7: the deep linking return URL became the action of the auto-posting form, so a
``javascript:`` URL ran in the grader's origin. Now a deep linking launch returns only
to an https URL of the launching platform, or is refused."""

from __future__ import annotations

import pytest
import requests

from tests.lti_platform import INSTRUCTOR, Pending, forms
from tests.security.helpers import launch
from tests.lti_service import lms, service, tool  # noqa: F401  (fixtures)

SQLITE_ONLY = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)


@SQLITE_ONLY
@pytest.mark.parametrize("return_url", [
    "javascript:alert(document.domain)//",
    "data:text/html,<script>alert(1)</script>",
    "https://elsewhere.example.org/deep_link_return",
    "https://user@127.0.0.1/deep_link_return",
], ids=["javascript", "data", "another-host", "userinfo"])
def test_deep_linking_returns_only_to_the_platform(lms, tool, return_url, monkeypatch):
    browser = requests.Session()
    page = launch(lms, Pending(user="teacher-1", roles=[INSTRUCTOR], kind="deeplink", return_url=return_url),
                  browser)
    # before: 200 on /lti/deep-link, and choosing an exercise posted the form to return_url
    assert page.status_code == 400 and "<code>bad_return_url</code>" in page.text, page.text[:500]
    assert "Traceback" not in page.text and return_url not in page.text
    chosen = browser.get(f"{tool}/lti/deep-link", timeout=30)  # refused before signing anyone in
    assert "/login" in chosen.url and not any(f["action"] == return_url for f in forms(chosen.text))


@SQLITE_ONLY
def test_a_return_url_over_plain_http_needs_the_development_setting(lms, tool, monkeypatch):
    monkeypatch.delenv("GRADER_LTI_ALLOW_HTTP")  # the platform's own host, but plain http
    page = launch(lms, Pending(user="teacher-1", roles=[INSTRUCTOR], kind="deeplink"))
    assert page.status_code == 400 and "<code>bad_return_url</code>" in page.text
