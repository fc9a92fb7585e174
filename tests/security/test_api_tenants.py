"""API clients are tenants (class 5): a key's `user` values are its own, apart from LMS
users and from every other key's, and a key reads only the submissions it made."""

from __future__ import annotations

import pytest
import requests
from sqlalchemy import func, select

from grader import db
from grader.accounts.models import User
from grader.submissions.models import Submission
from tests.security.conftest import SOLUTION

SQLITE_ONLY = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)


def submit(base: str, headers: dict, user: str) -> requests.Response:
    return requests.post(f"{base}/api/v1/submissions", headers=headers, timeout=30,
                         json={"exercise": "autograd-basics", "source": SOLUTION, "user": user})


def owner_of(database_url: str, submission_id: str) -> int:
    with db.transaction(database_url) as session:
        return session.get(Submission, submission_id).user_id


def test_a_key_naming_an_lms_student_does_not_submit_as_that_student(site, database_url, make_key):
    base = site()
    with db.transaction(database_url) as session:  # as an LMS launch made it
        student = User(external_id="https://lms.example.edu|student-1", name="Student One", role="student")
        session.add(student)
        session.flush()
        student_id = student.id
    _, key_b = make_key()
    answer = submit(base, key_b, "https://lms.example.edu|student-1")
    assert answer.status_code == 202, answer.text
    assert owner_of(database_url, answer.json()["id"]) != student_id
    with db.transaction(database_url) as session:
        assert session.scalar(select(func.count()).where(Submission.user_id == student_id)) == 0


def test_two_keys_naming_the_same_user_are_two_users(site, database_url, make_key):
    base = site()
    (_, key_a), (_, key_b) = make_key(), make_key()
    mine, theirs = submit(base, key_a, "alice"), submit(base, key_b, "alice")
    assert mine.status_code == theirs.status_code == 202
    assert owner_of(database_url, mine.json()["id"]) != owner_of(database_url, theirs.json()["id"])
    again = submit(base, key_a, "alice")
    assert owner_of(database_url, again.json()["id"]) == owner_of(database_url, mine.json()["id"])
    # The key still sees its own value, not the namespace it is stored in.
    shown = requests.get(mine.json()["url"], headers=key_a, timeout=30)
    assert shown.status_code == 200 and shown.json()["user"] == "alice"


def test_a_key_reads_only_the_submissions_it_made(site, make_key):
    base = site()
    (_, key_a), (_, key_b) = make_key(), make_key()
    url = submit(base, key_a, "alice").json()["url"]
    assert requests.get(url, headers=key_a, timeout=30).status_code == 200
    other = requests.get(url, headers=key_b, timeout=30)
    assert other.status_code == 404 and other.json()["error"]["code"] == "submission_not_found"
    assert "source" not in other.text and "alice" not in other.text
