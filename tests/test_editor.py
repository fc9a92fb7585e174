"""Code is never lost: the editor opens with the starter or the student's own latest
submission (their choice), any submission can be edited and sent again, and a refusal,
a rate limit's included, gives the page back with the code still in the editor."""

from __future__ import annotations

import html
import io
import re

import pytest

from tests.test_practice import practise_on_site
from tests.forms import sign_in, token
from tests.test_web import GOOD, ada, site, submit  # noqa: F401  (fixtures too)

STARTER = "raise NotImplementedError"


def editor(page) -> str:
    """The text in the page's editor, as the browser would show it."""
    found = re.search(r'<textarea id="source"[^>]*>(.*?)</textarea>', page.get_data(as_text=True), re.S)
    return html.unescape(found.group(1))


def test_a_first_visit_opens_the_starter_code(ada):
    page = ada.get("/exercises/autograd-basics")
    assert STARTER in editor(page) and "The editor holds the starter code." in page.get_data(as_text=True)


def test_after_a_submission_the_editor_opens_with_it_and_the_starter_is_one_click_away(ada):
    submit(ada, "# first try\n" + GOOD)
    page = ada.get("/exercises/autograd-basics")
    assert editor(page).startswith("# first try") and "?from=starter" in page.get_data(as_text=True)
    assert STARTER in editor(ada.get("/exercises/autograd-basics?from=starter"))


def test_any_of_ones_own_submissions_can_be_edited_and_sent_again(ada):
    first = submit(ada, "# first try\n" + GOOD).location.rsplit("/", 1)[1]
    submit(ada, "# second try\n" + GOOD)
    report = ada.get(f"/submissions/{first}").get_data(as_text=True)
    link = re.search(r'href="([^"]+)"[^>]*>Edit and resubmit<', report).group(1)
    page = ada.get(html.unescape(link))
    assert editor(page).startswith("# first try")
    assert "an earlier submission of yours" in page.get_data(as_text=True) and "?from=latest" in page.get_data(as_text=True)


def test_anothers_submission_never_opens_in_ones_editor(site, ada):
    bob = site.test_client()
    sign_in(bob, "bob@example.org")
    bobs = submit(bob, "# bob's secret\n" + GOOD).location.rsplit("/", 1)[1]
    page = ada.get(f"/exercises/autograd-basics?from={bobs}")
    assert "bob's secret" not in page.get_data(as_text=True) and STARTER in editor(page)
    assert ada.get(f"/submissions/{bobs}/source.py").status_code == 404


def test_the_starter_and_ones_own_code_download_as_files(ada):
    starter = ada.get("/exercises/autograd-basics/starter.py")
    assert starter.status_code == 200 and STARTER in starter.get_data(as_text=True)
    assert "attachment" in starter.headers["Content-Disposition"]
    mine = submit(ada, "# mine\n" + GOOD).location.rsplit("/", 1)[1]
    code = ada.get(f"/submissions/{mine}/source.py")
    assert code.status_code == 200 and code.get_data(as_text=True).startswith("# mine")
    assert ada.get("/exercises/no-such-thing/starter.py").status_code == 404


def test_a_rate_limited_upload_comes_back_as_text_in_the_editor(site):
    site.config["SUBMISSION_RATE_LIMIT"] = "1 per minute"
    client = site.test_client()
    sign_in(client, "ada@example.org")
    assert submit(client).status_code == 303
    data = {"source": "", "csrf_token": token(client, "/exercises/autograd-basics"),
            "file": (io.BytesIO(("# from my file\n" + GOOD).encode()), "solution.py")}
    limited = client.post("/exercises/autograd-basics/submissions", data=data, content_type="multipart/form-data")
    assert limited.status_code == 429 and editor(limited).startswith("# from my file")
    assert "The editor holds the code you just sent." in limited.get_data(as_text=True)


def test_a_rate_limited_practice_run_keeps_the_code_too(site):
    site.config["PRACTICE_RATE_LIMIT"] = "1 per minute"
    client = site.test_client()
    sign_in(client, "ada@example.org")
    assert practise_on_site(client).status_code == 303
    limited = practise_on_site(client, "# practising\n" + GOOD)
    assert limited.status_code == 429 and int(limited.headers["Retry-After"]) > 0
    assert editor(limited).startswith("# practising") and "send it again in" in limited.get_data(as_text=True)


def test_the_editor_says_how_to_leave_it_and_submit_from_the_keyboard(ada):
    page = ada.get("/exercises/autograd-basics").get_data(as_text=True)
    assert "press Escape, then Tab" in page and "Ctrl+Enter" in page
    assert re.search(r'<textarea id="source"[^>]*aria-describedby="[^"]*editor-keys', page)


@pytest.mark.slow  # takes seconds: left out of the fast loop
def test_progress_counts_out_of_the_known_total_from_the_start(ada, database_url):
    from tests.test_web import store_grade

    first = submit(ada).location
    assert "0 / ?" in ada.get(first).get_data(as_text=True)  # nothing graded yet: not known
    store_grade(database_url, first.rsplit("/", 1)[1], GOOD)
    second = submit(ada).location
    page = ada.get(second).get_data(as_text=True)
    assert '<span id="count">0 / 4</span>' in page and ada.get(second + "/status").get_json()["total"] == 4
    run = practise_on_site(ada).location
    assert ada.get(run + "/status").get_json()["total"] == 1  # the visible tests alone
