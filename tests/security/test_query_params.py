"""Hand-edited query parameters and ids are answered with a page, never a 500 (the web
half of class 11): a page number past any integer, NUL characters PostgreSQL refuses, an
id past the integer range."""

from __future__ import annotations

import requests

from tests.forms import sign_in_over_http

URLS = [
    "/instructor/submissions?page=99999999999999999999",
    "/instructor/submissions?page=-3",
    "/instructor/submissions?page=%EF%BC%95",  # a full-width digit
    "/instructor/submissions?student=a%00b",
    "/instructor/submissions?exercise=a%00b",
    "/instructor/submissions?status=%00",
    "/instructor/submissions?student=" + "x" * 5000,
    "/instructor/uploads/99999999999999999999",
]


def test_query_parameters_are_clamped(site, account):
    base = site()
    account("teacher@example.org", "admin")  # the site-wide pages are an administrator's
    browser, _ = sign_in_over_http(base, "teacher@example.org")
    answers = {url: browser.get(base + url, timeout=30).status_code for url in URLS}
    assert answers == {url: 404 if "/uploads/" in url else 200 for url in URLS}


def test_a_sign_in_with_a_nul_in_the_email_is_a_wrong_password(site, account):
    base = site()
    account("teacher@example.org", "instructor")
    _, answer = sign_in_over_http(base, "teacher@example.org\x00", "whatever1")
    assert answer.status_code == 401 and "do not match" in answer.text
