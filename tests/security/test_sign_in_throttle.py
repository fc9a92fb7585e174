"""Sign-in is throttled per account and per address (class 8): after a run of wrong
passwords even the right one waits, with a page that says so and a Retry-After."""

from __future__ import annotations

from tests.forms import PASSWORD, sign_in_over_http


def test_wrong_passwords_lock_the_account_for_a_while(site, account):
    base = site(LOGIN_ACCOUNT_LIMIT="5 per minute", LOGIN_ADDRESS_LIMIT="100 per minute")
    account("teacher@example.org", "instructor")
    # Signing in right never counts (nor does showing the form).
    assert [sign_in_over_http(base, "teacher@example.org")[1].status_code for _ in range(6)] == [302] * 6
    answers = [sign_in_over_http(base, "teacher@example.org", f"guess-{n}")[1].status_code for n in range(5)]
    assert answers == [401] * 5
    browser, right = sign_in_over_http(base, "Teacher@Example.org ", PASSWORD)  # however the email is spelled
    assert right.status_code == 429
    assert "Too many failed sign-ins" in right.text and int(right.headers["Retry-After"]) > 0
    assert browser.get(f"{base}/instructor/submissions", allow_redirects=False, timeout=30).status_code == 302
    account("other@example.org")
    assert sign_in_over_http(base, "other@example.org", PASSWORD)[1].status_code == 302  # other accounts are not


def test_one_address_trying_many_accounts_is_throttled(site, account):
    base = site(LOGIN_ACCOUNT_LIMIT="100 per minute", LOGIN_ADDRESS_LIMIT="8 per minute")
    account("student@example.org")
    for n in range(8):
        assert sign_in_over_http(base, f"user{n}@example.org", "password1")[1].status_code == 401
    _, right = sign_in_over_http(base, "student@example.org", PASSWORD)
    assert right.status_code == 429 and int(right.headers["Retry-After"]) > 0
