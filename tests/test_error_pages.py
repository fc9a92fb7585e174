"""Errors outside the API are pages of the site: styled, translated, with the way on, and
for a refusal when to try again. Nothing of the failure itself reaches the reader."""

from __future__ import annotations

import re

import pytest

from tests.forms import sign_in
from tests.test_web import GOOD, site, submit  # noqa: F401  (site: a fixture)


def title(response) -> str:
    return re.search(r"<h1>(.*?)</h1>", response.get_data(as_text=True), re.S).group(1).strip()


def links(response) -> list[str]:
    return re.findall(r'<a href="([^"]+)"', response.get_data(as_text=True))


def test_an_unknown_address_is_a_page_of_the_site_with_the_way_back(client):
    page = client.get("/no/such/page")
    assert page.status_code == 404 and page.mimetype == "text/html"
    assert title(page) == "Page not found"
    assert "/exercises" in links(page) and "/login" in links(page)
    assert 'href="/static/style.css' in page.get_data(as_text=True)


def test_error_pages_speak_the_readers_language(client):
    page = client.get("/no/such/page", headers={"Accept-Language": "ko-KR,ko;q=0.9"})
    assert page.status_code == 404 and title(page) == "페이지를 찾을 수 없습니다"
    assert 'lang="ko"' in page.get_data(as_text=True)


def test_a_page_a_student_may_not_open_says_so_and_offers_their_own(site):
    student = site.test_client()
    sign_in(student, "bob@example.org")
    page = student.get("/instructor/submissions")
    assert page.status_code == 403 and title(page) == "Not yours to see"
    assert "/submissions" in links(page) and "/courses" in links(page)


def test_a_rate_limited_submission_is_the_form_again_with_the_code_and_when_to_send_it(site):
    site.config["SUBMISSION_RATE_LIMIT"] = "1 per minute"
    client = site.test_client()
    sign_in(client, "ada@example.org")
    assert submit(client).status_code == 303
    limited = submit(client, "# <my second try>\n" + GOOD)
    page = limited.get_data(as_text=True)
    assert limited.status_code == 429 and 0 < int(limited.headers["Retry-After"]) <= 60
    assert 'id="submit-error"' in page and "Your code is still here: send it again in" in page
    assert "# &lt;my second try&gt;" in page  # in the editor, not lost


def test_a_method_not_taken_keeps_its_allow_header(client):
    page = client.delete("/login")
    assert page.status_code == 405 and "POST" in page.headers["Allow"] and title(page) == "Not allowed here"


def test_a_crash_shows_no_trace_of_itself(app, client):
    app.config["PROPAGATE_EXCEPTIONS"] = False  # as in production: the handler answers

    @app.get("/crash-for-the-test")
    def crash():
        raise RuntimeError("SECRET-DETAIL of the failure")

    page = client.get("/crash-for-the-test")
    text = page.get_data(as_text=True)
    assert page.status_code == 500 and title(page) == "Something went wrong on our side"
    assert "SECRET-DETAIL" not in text and "Traceback" not in text and "RuntimeError" not in text


@pytest.mark.parametrize("path", ["/api/v1/nowhere", "/api/v1/exercises/no-such-exercise"])
def test_the_api_still_answers_json(client, path):
    answer = client.get(path, headers={"Authorization": "Bearer nope"})
    assert answer.mimetype == "application/json" and "error" in answer.get_json()
