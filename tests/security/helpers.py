"""Browsing the service as its users do: launches from the test LMS, local sign-ins, forms."""

from __future__ import annotations

import requests

from grader import db
from grader.accounts import users
from tests.forms import PASSWORD
from tests.lti_platform import LEARNER, Pending, Platform, follow_forms, forms



def launch(lms: Platform, pending: Pending, browser: requests.Session | None = None) -> requests.Response:
    """A click on the link in the course, through the login and the platform's launch form."""
    browser = browser or requests.Session()
    return follow_forms(browser, browser.get(lms.start_url(pending), timeout=30))


def learner(user: str = "student-1", **kwargs) -> Pending:
    return Pending(user=user, roles=[LEARNER], custom={"exercise": "autograd-basics"}, **kwargs)


def local_account(database_url: str, email: str, role: str) -> None:
    with db.transaction(database_url) as session:
        users.create_user(session, email=email, password=PASSWORD, role=role)


def submit(browser: requests.Session, page: requests.Response, source: str = "def f(): pass\n") -> str:
    """Submit on an exercise page (no worker runs: it stays queued); the submission's URL."""
    form = next(f for f in forms(page.text) if f["action"].split("?")[0].endswith("/submissions"))
    root = page.url.rsplit("/exercises/", 1)[0]
    done = browser.post(root + form["action"], data={"csrf_token": form["fields"]["csrf_token"], "source": source},
                        timeout=30)
    assert done.status_code == 200 and "/submissions/" in done.url, done.text[:500]
    return done.url
