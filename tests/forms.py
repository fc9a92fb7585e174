"""Signing in and reading CSRF tokens, as each kind of test client does it: Flask's test
client, a requests session over real HTTP, and a Playwright page."""

from __future__ import annotations

import re

import requests

PASSWORD = "correct horse"  # every account the tests make has it, unless a test says otherwise
CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


def csrf_in(html: str) -> str:
    """The session's CSRF token, from the first form of a page that carries one."""
    return CSRF.search(html).group(1)


def token(client, path: str = "/login") -> str:
    """The CSRF token of the page at ``path``, through Flask's test client."""
    return csrf_in(client.get(path).get_data(as_text=True))


def sign_in(client, email: str, password: str = PASSWORD):
    """Sign in through the form with Flask's test client; the answer to the POST."""
    return client.post("/login", data={"email": email, "password": password, "csrf_token": token(client)})


def csrf_over_http(browser: requests.Session, url: str) -> str:
    return csrf_in(browser.get(url, timeout=30).text)


def sign_in_over_http(base: str, email: str, password: str = PASSWORD,
                      browser: requests.Session | None = None) -> tuple[requests.Session, requests.Response]:
    """A browser (a requests session) signed in through the form; returns it and the answer to the POST."""
    browser = browser or requests.Session()
    answer = browser.post(f"{base}/login", data={"email": email, "password": password,
                                                 "csrf_token": csrf_over_http(browser, f"{base}/login")},
                          allow_redirects=False, timeout=30)
    return browser, answer


def signed_in_over_http(base: str, email: str, password: str = PASSWORD) -> requests.Session:
    browser, answer = sign_in_over_http(base, email, password)
    assert answer.status_code == 302, answer.text[:500]
    return browser


def sign_in_page(page, url: str, email: str, password: str = PASSWORD) -> None:
    """Open ``url`` (the sign-in page, or a page that asks for it) and sign in as a person
    does, in a real browser; returns once the form has let them in."""
    page.goto(url)
    page.fill("#email", email)
    page.fill("#password", password)
    page.press("#password", "Enter")
    page.wait_for_url(lambda url: "/login" not in url)
