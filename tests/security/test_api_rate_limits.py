"""A key's submissions are limited per key, not only per (key, user), and the users a key
makes per hour are capped (class 6): changing `user` neither resets the count nor fills
the users table."""

from __future__ import annotations

import requests
from sqlalchemy import func, select

from grader import db
from grader.accounts.models import User
from tests.security.conftest import SOLUTION


def submit(base: str, headers: dict, user: str) -> requests.Response:
    return requests.post(f"{base}/api/v1/submissions", headers=headers, timeout=30,
                         json={"exercise": "autograd-basics", "source": SOLUTION, "user": user})


def test_changing_user_does_not_escape_the_keys_rate_limit(site, make_key):
    base = site(SUBMISSION_RATE_LIMIT="2 per minute", API_KEY_RATE_LIMIT="5 per minute")
    (_, key), (_, other) = make_key(), make_key()
    answers = [submit(base, key, f"student-{n}").status_code for n in range(7)]
    assert answers == [202] * 5 + [429] * 2
    limited = submit(base, key, "student-99")
    assert limited.json()["error"]["code"] == "rate_limited" and int(limited.headers["Retry-After"]) > 0
    assert submit(base, other, "student-0").status_code == 202  # another key has its own count


def test_a_key_makes_a_bounded_number_of_new_users_per_hour(site, make_key, database_url):
    base = site(API_NEW_USERS_PER_HOUR=3)
    key_id, key = make_key()
    assert [submit(base, key, f"new-{n}").status_code for n in range(3)] == [202] * 3
    refused = submit(base, key, "new-3")
    assert refused.status_code == 429, refused.text
    assert refused.json()["error"]["code"] == "too_many_new_users"
    assert 0 < int(refused.headers["Retry-After"]) <= 3601
    assert submit(base, key, "new-0").status_code == 202  # users it already has still submit
    with db.transaction(database_url) as session:
        assert session.scalar(select(func.count()).select_from(User)) == 3
