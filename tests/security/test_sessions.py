"""Sessions end (class 10): at sign-out, for every copy of the cookie; at a password
change; and a fixed time after the sign-in, however the cookie is kept."""

from __future__ import annotations

import subprocess
import sys
import time
from datetime import timedelta
from email.utils import parsedate_to_datetime
from pathlib import Path

import requests

from grader.app import create_app
from tests.forms import csrf_in, sign_in_over_http

ROOT = Path(__file__).resolve().parents[2]
SECRET = "a test's own signing key, so that the test can sign a cookie too"


def signed_in(base: str, browser: requests.Session) -> bool:
    return browser.get(f"{base}/submissions", allow_redirects=False, timeout=30).status_code == 200


def copy_of(browser: requests.Session) -> requests.Session:
    thief = requests.Session()
    thief.cookies.set("session", browser.cookies["session"])
    return thief


def test_signing_out_ends_every_copy_of_the_session(site, account):
    base = site()
    account("student@example.org")
    browser, answer = sign_in_over_http(base, "student@example.org")
    assert answer.status_code == 302
    thief = copy_of(browser)
    assert signed_in(base, thief)
    token = csrf_in(browser.get(f"{base}/submissions", timeout=30).text)
    assert browser.post(f"{base}/logout", data={"csrf_token": token}, allow_redirects=False,
                        timeout=30).status_code == 302
    assert not signed_in(base, browser) and not signed_in(base, thief)
    again, _ = sign_in_over_http(base, "student@example.org")  # signing in again works as before
    assert signed_in(base, again) and not signed_in(base, thief)


def test_a_new_password_ends_the_accounts_sessions(site, account, database_url):
    base = site()
    account("student@example.org")
    browser, _ = sign_in_over_http(base, "student@example.org")
    assert signed_in(base, browser)
    result = subprocess.run([sys.executable, "-m", "grader.cli", "set-password", "--email", "student@example.org",
                             "--password", "a brand new password"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert not signed_in(base, browser)
    assert sign_in_over_http(base, "student@example.org", "a brand new password")[1].status_code == 302


def test_a_session_ends_its_lifetime_after_the_sign_in(site, account, database_url):
    base = site(SECRET_KEY=SECRET, PERMANENT_SESSION_LIFETIME=timedelta(hours=12))
    user_id = account("student@example.org")
    browser, answer = sign_in_over_http(base, "student@example.org")
    assert "Expires=" in answer.headers["Set-Cookie"]  # not a cookie the browser keeps until it quits
    expires = parsedate_to_datetime(answer.headers["Set-Cookie"].split("Expires=")[1].split(";")[0])
    assert expires.timestamp() - time.time() <= 12 * 3600 + 60  # not the 31 days of Flask's default

    # The same session, kept (and refreshed) for 13 hours: a cookie the app itself signed.
    app = create_app({"SECRET_KEY": SECRET, "DATABASE_URL": database_url})
    serializer = app.session_interface.get_signing_serializer(app)
    old = requests.Session()
    old.cookies.set("session", serializer.dumps({"user_id": user_id, "v": 0, "began": int(time.time()) - 13 * 3600}))
    assert not signed_in(base, old)
    assert signed_in(base, browser)
