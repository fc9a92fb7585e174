"""A student who guesses a draft's slug (it is in a URL an instructor shared, or a course's
assignment names it): the page, the starter code, submitting, a practice run, the API with
their personal token, releasing it. Each answers as for a slug that names nothing, and
nothing is stored. Over real HTTP, on the service's own forms and API."""

from __future__ import annotations

import re

import requests
from sqlalchemy import func, select

from grader import courses, db
from grader.accounts.models import User
from grader.catalog.models import Exercise
from grader.submissions.models import PracticeRun, Submission
from tests.forms import csrf_over_http, signed_in_over_http
from tests.live import publish_draft

DRAFT = "ines-draft"
SOURCE = "def grad_2xtx(x):\n    return 2 * x\n"


def stored(database_url: str) -> tuple[int, int]:
    with db.transaction(database_url) as s:
        return (s.scalar(select(func.count()).select_from(Submission)),
                s.scalar(select(func.count()).select_from(PracticeRun)))


def personal_token(browser: requests.Session, base: str) -> str:
    page = browser.post(f"{base}/account/tokens", data={"name": "laptop",
                                                          "csrf_token": csrf_over_http(browser, f"{base}/account/tokens")},
                        timeout=30)
    return re.search(r"gk_[0-9a-f]{12}_[A-Za-z0-9_-]{43}", page.text).group(0)


def test_a_student_guessing_a_drafts_slug_finds_nothing(site, account, database_url):
    base = site()
    publish_draft(database_url, DRAFT, uploaded_by=account("ines@example.org", "admin"))
    account("ada@example.org")
    ada = signed_in_over_http(base, "ada@example.org")
    csrf = csrf_over_http(ada, f"{base}/exercises")
    assert DRAFT not in ada.get(f"{base}/exercises", timeout=30).text
    for path in (f"/exercises/{DRAFT}", f"/exercises/{DRAFT}/starter.py"):
        assert ada.get(base + path, timeout=30).status_code == 404, path
    for action in ("submissions", "practice"):
        answer = ada.post(f"{base}/exercises/{DRAFT}/{action}", data={"source": SOURCE, "csrf_token": csrf},
                          timeout=30, allow_redirects=False)
        assert answer.status_code == 404, action
    assert ada.post(f"{base}/exercises/{DRAFT}/release", data={"csrf_token": csrf}, timeout=30,
                    allow_redirects=False).status_code == 404

    key = {"Authorization": f"Bearer {personal_token(ada, base)}"}
    api = f"{base}/api/v1"
    assert [e["slug"] for e in requests.get(f"{api}/exercises", headers=key, timeout=30).json()["exercises"]] \
        == ["autograd-basics"]
    for path in (f"/exercises/{DRAFT}", f"/exercises/{DRAFT}/versions"):
        answer = requests.get(api + path, headers=key, timeout=30)
        assert answer.status_code == 404 and answer.json()["error"]["code"] == "exercise_not_found", path
    for practice in (False, True):
        answer = requests.post(f"{api}/submissions", headers=key, timeout=30,
                               json={"exercise": DRAFT, "source": SOURCE, "practice": practice})
        assert answer.status_code == 422 and answer.json()["error"]["code"] == "unknown_exercise", practice
    # A personal token never publishes nor releases.
    refused = requests.post(f"{api}/exercises/{DRAFT}/release", headers=key, timeout=30)
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "insufficient_scope"
    assert stored(database_url) == (0, 0)
    with db.transaction(database_url) as s:
        assert s.get(Exercise, DRAFT).released is False


def test_an_assignment_opens_a_draft_to_its_own_course_alone(site, account, database_url):
    """Ada's course places the draft; she reaches it through the assignment, never on its
    own: not by its slug, not by naming it with her token."""
    base = site()
    ines = account("ines@example.org", "admin")
    publish_draft(database_url, DRAFT, uploaded_by=ines)
    ada_id = account("ada@example.org")
    with db.transaction(database_url) as s:
        course = courses.create_course(s, title="Deep learning", code="DL101")
        courses.set_role(s, course.id, ada_id, "student")
        assignment = courses.create_assignment(s, course, exercise=DRAFT, due_at="2099-01-01T00:00:00+00:00",
                                               by=s.get(User, ines)).id
    ada = signed_in_over_http(base, "ada@example.org")
    assert ada.get(f"{base}/assignments/{assignment}", timeout=30).status_code == 200
    assert ada.get(f"{base}/exercises/{DRAFT}", timeout=30).status_code == 404
    key = {"Authorization": f"Bearer {personal_token(ada, base)}"}
    answer = requests.post(f"{base}/api/v1/submissions", headers=key, timeout=30,
                           json={"exercise": DRAFT, "source": SOURCE, "practice": True})
    assert answer.status_code == 422 and answer.json()["error"]["code"] == "unknown_exercise"
    assert stored(database_url) == (0, 0)
    through = requests.post(f"{base}/api/v1/submissions", headers=key, timeout=30,
                            json={"assignment": assignment, "source": SOURCE, "practice": True})
    assert through.status_code == 202, through.text
    assert stored(database_url) == (0, 1)
