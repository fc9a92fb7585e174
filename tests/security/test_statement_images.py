"""A statement cannot load images from elsewhere (class 13): an exercise's README that
embeds a remote image (a tracking pixel) is shown without it, and the page's policy
would refuse it anyway; images inside the statement (data: URIs) still show."""

from __future__ import annotations

import shutil

import requests

from tests.security.conftest import ROOT
from tests.forms import sign_in_over_http

PIXEL = "https://tracker.example/pixel.png?reader=1"
INLINE = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


def test_a_statement_shows_no_remote_image(site, account, tmp_path):
    catalogue = tmp_path / "exercises"
    shutil.copytree(ROOT / "exercises" / "autograd-basics", catalogue / "autograd-basics")
    readme = catalogue / "autograd-basics" / "README.md"
    readme.write_text(readme.read_text() + f"\n\n![progress]({PIXEL})\n\n![spacer](//tracker.example/p.gif)\n\n"
                      f"![diagram]({INLINE})\n", encoding="utf-8")
    base = site(EXERCISES_DIR=catalogue)
    account("student@example.org")
    browser, _ = sign_in_over_http(base, "student@example.org")
    page = browser.get(f"{base}/exercises/autograd-basics", timeout=30)
    assert page.status_code == 200 and 'alt="progress"' in page.text  # the statement is the edited one
    assert "tracker.example" not in page.text
    assert INLINE in page.text
    policy = page.headers.get("Content-Security-Policy", "")
    assert "img-src 'self' data:" in policy
