"""Every response carries the security headers (class 9): a CSP that allows scripts from
the site only and images from the site or data: only; instructor pages and the sign-in
form never framed, the pages an LMS frames only by the registered platforms; nosniff,
Referrer-Policy, and HSTS when cookies are Secure."""

from __future__ import annotations

import re

import requests

from grader import db
from grader.lti.models import LtiPlatform
from tests.forms import sign_in_over_http


def csp(response: requests.Response) -> dict[str, str]:
    policy = response.headers.get("Content-Security-Policy", "")
    return {part.split()[0]: " ".join(part.split()[1:]) for part in policy.split(";") if part.strip()}


def test_every_response_carries_the_headers(site, account, database_url):
    with db.transaction(database_url) as session:
        session.add(LtiPlatform(name="LMS", issuer="https://lms.example.edu", client_id="tool",
                                deployment_ids=["1"], auth_login_url="https://lms.example.edu/auth",
                                auth_token_url="https://lms.example.edu/token", jwks_url="https://lms.example.edu/jwks"))
    base = site()
    account("teacher@example.org", "admin")  # the every-submission page is an administrator's
    account("student@example.org")
    teacher, _ = sign_in_over_http(base, "teacher@example.org")
    student, _ = sign_in_over_http(base, "student@example.org")
    pages = {
        "sign-in": requests.get(f"{base}/login", timeout=30),
        "instructor": teacher.get(f"{base}/instructor/submissions", timeout=30),
        "platforms": teacher.get(f"{base}/instructor/lti/platforms", timeout=30),
        "student": student.get(f"{base}/exercises/autograd-basics", timeout=30),
        "api": requests.get(f"{base}/api/v1/openapi.json", timeout=30),
        "static": requests.get(f"{base}/static/style.css", timeout=30),
        "not found": requests.get(f"{base}/no/such/page", timeout=30),
    }
    assert pages["instructor"].status_code == pages["student"].status_code == 200
    for name, response in pages.items():
        policy = csp(response)
        assert policy.get("script-src", "").split()[0:1] == ["'self'"], name
        assert "unsafe-inline" not in policy.get("script-src", "") and "*" not in policy.get("script-src", ""), name
        assert policy.get("img-src") == "'self' data:", name
        assert policy.get("object-src") == "'none'", name
        assert response.headers.get("X-Content-Type-Options") == "nosniff", name
        assert response.headers.get("Referrer-Policy") == "same-origin", name
        assert "Strict-Transport-Security" not in response.headers, name  # plain HTTP here
    for name in ("sign-in", "instructor", "platforms"):
        assert csp(pages[name])["frame-ancestors"] == "'none'", name
        assert pages[name].headers["X-Frame-Options"] == "DENY", name
    framing = csp(pages["student"])["frame-ancestors"].split()
    assert "https://lms.example.edu" in framing and "*" not in framing and "https:" not in framing
    # The pages' own scripts are files of the site, which the policy allows.
    assert not re.search(r"<script(?![^>]*\bsrc=)(?![^>]*\bnonce=)", pages["student"].text)


def test_with_secure_cookies_the_site_asks_for_https_only(site, monkeypatch):
    monkeypatch.setenv("GRADER_COOKIE_SECURE", "1")
    base = site()
    answer = requests.get(f"{base}/login", timeout=30)
    assert int(answer.headers["Strict-Transport-Security"].split("max-age=")[1].split(";")[0]) >= 180 * 86400
    assert csp(answer)["frame-ancestors"] == "'none'"
