"""The instructor's desk: every gradebook cell leads to that student's submissions to that
assignment, the total says what it is out of, and an assignment's submissions come as one
zip (a folder per student, each attempt's source, report and staff comments, index.csv) from its page, the
gradebook, the API and `grader gradebook submissions`, each the same archive. The class is
made by hand: reports written as the worker stores them, no sandbox. The service's clock
is fixed."""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
import zipfile
from datetime import datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import unquote

import pytest
from click.testing import CliRunner
from sqlalchemy import select

from grader import courses, db
from grader.accounts import keys, users
from grader.accounts.models import User
from grader.cli import main
from grader.courses.gradebook import gradebook
from grader.courses.models import Assignment, Course, SubmissionComment
from grader.submissions.models import Submission
from tests.forms import sign_in
from tests.test_analytics import EVERY, VISIBLE, report

ROOT = Path(__file__).resolve().parent.parent
DUE = datetime(2026, 12, 10, 14, 59, tzinfo=timezone.utc)  # 23:59 in Seoul
NOW = DUE + timedelta(days=3)
HOUR, DAY = timedelta(hours=1), timedelta(days=1)
TITLE = "역전파: 첫 기울기"  # the assignment's title, in Korean
NOTEBOOK_MAP = {"cells": [[3, 1, 4]]}  # the notebook's cell 3 became lines 1-4 of the graded source


def crashed() -> dict:
    """A report whose code failed on line 2 of the graded source (a notebook's cell 3, line 2)."""
    return {**report(), "status": "submission_error", "score": 0, "tests": [],
            "message": 'Traceback:\n  File "submission.py", line 2, in grad_2xtx\nNameError: name \'y\' is not defined'}


# Who handed in what, relative to the due date: (when, status, report, notebook).
#   ada   2 points, then 6, then a failed grading: her 6 counts
#   bo    6 an hour late (10% off), with a score set by hand: no attempt counts
#   kim   a notebook that crashed, then 2 points a day late
#   cy    nothing
#   prof  (the instructor) a try of his own: never in the zip
SUBMITTED = {
    "ada@uni.edu": [(-2 * DAY, "graded", report({VISIBLE}), None), (-DAY, "graded", report(EVERY), None),
                    (-HOUR, "failed", None, None)],
    "bo@uni.edu": [(HOUR, "graded", report(EVERY), None)],
    "kim@uni.edu": [(-DAY + HOUR, "graded", crashed(), NOTEBOOK_MAP), (DAY, "graded", report({VISIBLE}), None)],
    "prof@uni.edu": [(-DAY, "graded", report(EVERY), None)],
}
# What staff said of which attempt (its student, its index in SUBMITTED): (line, body, author),
# in the order they were made; the zip gives the overall ones first, then by line.
COMMENTS = {
    ("ada@uni.edu", 1): [(3, "Line 3 could use x.grad directly.", "Tess"),
                         (None, "Well done: every gradient right.\n두 번째 줄도 있습니다.", "Prof"),
                         (1, "A clear name.", "Tess")],
    ("kim@uni.edu", 0): [(1, "Cell 3 never defines y.", "Tess")],
}


@pytest.fixture
def desk(app, basics, database_url, monkeypatch):
    """DL101 (Seoul), run by Prof on the site and by an API key: Ada, Bo, Kim (김민지) and
    Cy its students, Tess its TA; Otto teaches CV200 with Tom as his TA. One assignment,
    titled in Korean, with what SUBMITTED says handed in. Returns the ids and the key."""
    monkeypatch.setenv("GRADER_NOW", NOW.isoformat())
    with db.transaction(database_url) as s:
        key, secret = keys.create(s, ["grades:read"], name="lms")
        people = {email: users.create_user(s, email=email, password="correct horse", name=name,
                                           role="instructor" if email in ("prof@uni.edu", "otto@uni.edu") else "student")
                  for email, name in (("prof@uni.edu", "Prof"), ("ada@uni.edu", "Ada Lovelace"), ("bo@uni.edu", "Bo"),
                                      ("kim@uni.edu", "김민지"), ("cy@uni.edu", "Cy"), ("tess@uni.edu", "Tess"),
                                      ("otto@uni.edu", "Otto"), ("tom@uni.edu", "Tom"))}
        course = courses.create_course(s, title="Deep learning", code="DL101", time_zone="Asia/Seoul",
                                       api_key_id=key.id, instructor=people["prof@uni.edu"])
        for name in ("ada", "bo", "kim", "cy"):
            courses.set_role(s, course.id, people[f"{name}@uni.edu"].id, "student")
        courses.set_role(s, course.id, people["tess@uni.edu"].id, "ta")
        other = courses.create_course(s, title="Vision", code="CV200", instructor=people["otto@uni.edu"])
        courses.set_role(s, other.id, people["tom@uni.edu"].id, "ta")
        assignment = courses.create_assignment(s, course, exercise="autograd-basics", title=TITLE,
                                               due_at=DUE.isoformat(), late_until=(DUE + 2 * DAY).isoformat(),
                                               late_policy="per_day", late_percent=10)
        for email, made in SUBMITTED.items():
            for n, (offset, status, graded, notebook) in enumerate(made):
                s.add(sub := Submission(user_id=people[email].id, exercise_slug="autograd-basics", exercise_version=1,
                                 assignment_id=assignment.id, source=f"def grad_2xtx(x):  # {email} {offset}\n",
                                 status=status, created_at=DUE + offset, notebook=notebook,
                                 score=graded and graded["score"], max_score=graded and 6.0, report=graded))
                s.flush()
                for k, (line, body, author) in enumerate(COMMENTS.get((email, n), [])):
                    s.add(SubmissionComment(submission_id=sub.id, author_name=author, line=line, body=body,
                                            told=True, created_at=NOW - DAY + k * HOUR))
        courses.set_override(s, assignment, people["bo@uni.edu"], score=5, reason="oral exam", by="prof@uni.edu")
        return {"course": course.id, "other": other.id, "assignment": assignment.id, "key": secret,
                "users": {email.split("@")[0]: user.id for email, user in people.items()}}


def signed_in(app, email: str):
    client = app.test_client()
    assert sign_in(client, email).status_code == 302
    return client


def unzipped(data: bytes) -> tuple[zipfile.ZipFile, list[dict]]:
    archive = zipfile.ZipFile(io.BytesIO(data))
    assert archive.testzip() is None
    return archive, list(csv.DictReader(io.StringIO(archive.read("index.csv").decode("utf-8"))))


def the_archive_is_the_class(archive: zipfile.ZipFile, index: list[dict], desk, database_url, lang="en") -> None:
    """The zip holds each student's every attempt, in folders and rows that agree with the
    gradebook; the staff's own try is not in it."""
    ids = desk["users"]
    folders = {name: f"{name}@uni.edu-{ids[name]}" for name in ("ada", "bo", "kim")}
    assert {name.split("/")[0] for name in archive.namelist()} == {*folders.values(), "index.csv"}
    assert [(r["student"], r["attempt"], r["status"], r["score"], r["max_score"], r["counted"], r["late"])
            for r in index] == [
        ("ada@uni.edu", "1", "graded", "2", "6", "no", "no"),
        ("ada@uni.edu", "2", "graded", "6", "6", "yes", "no"),
        ("kim@uni.edu", "1", "graded", "0", "6", "no", "no"),
        ("ada@uni.edu", "3", "failed", "", "", "no", "no"),
        ("bo@uni.edu", "1", "graded", "6", "6", "no", "yes"),      # his score was set by hand
        ("kim@uni.edu", "2", "graded", "2", "6", "yes", "yes")]
    with db.transaction(database_url) as s:
        book = gradebook(s, s.get(Course, desk["course"]))
        counted = {row.user.email: row.cells[desk["assignment"]].counted for row in book.rows}
        made = {row.id: row for row in s.scalars(select(Submission))}
        for row in index:
            sub = made[row["submission"]]
            assert int(row["user_id"]) == sub.user_id and row["name"] == sub.user.name
            assert (row["counted"] == "yes") == (counted[row["student"]].submission_id == sub.id
                                                 and counted[row["student"]].how != "override")
            assert datetime.fromisoformat(row["submitted_at"]) == DUE + SUBMITTED[row["student"]][
                int(row["attempt"]) - 1][0]
            assert row["submitted_at"].endswith("+09:00")  # the course's time zone, with its offset
            folder = folders[row["student"].split("@")[0]]
            assert row["source"] == f"{folder}/attempt-{row['attempt']}.py"
            assert archive.read(row["source"]).decode() == sub.source
            said = COMMENTS.get((row["student"], int(row["attempt"]) - 1))
            if said is None:  # no comment, no comment files
                assert (row["comments"], row["comments_json"], row["comments_text"]) == ("0", "", "")
                assert not any(name.startswith(f"{folder}/attempt-{row['attempt']}.comments")
                               for name in archive.namelist())
            else:
                assert row["comments"] == str(len(said))
                assert row["comments_json"] == f"{folder}/attempt-{row['attempt']}.comments.json"
                assert row["comments_text"] == f"{folder}/attempt-{row['attempt']}.comments.txt"
            if sub.report is None:
                assert row["report_json"] == row["report_text"] == ""
            else:
                assert row["report_json"] == f"{folder}/attempt-{row['attempt']}.report.json"
                assert row["report_text"] == f"{folder}/attempt-{row['attempt']}.report.txt"
    assert [(r["student"], r["counted"]) for r in index if r["counted"] == "yes"] == [
        ("ada@uni.edu", "yes"), ("kim@uni.edu", "yes")]
    # The report as the API gives it (a notebook's line numbers name their cell), and as `grader grade` prints it.
    crash = json.loads(archive.read(f"{folders['kim']}/attempt-1.report.json"))
    assert "line 2 (cell 3, line 2)" in crash["message"] and crash["notebook"]["cells"][0]["cell"] == 3
    full = archive.read(f"{folders['ada']}/attempt-2.report.txt").decode()
    assert full.startswith("autograd-basics v1: " + ("6/6점  [채점됨" if lang == "ko" else "6/6 points  [graded"))
    assert ("통과 4x를 반환" if lang == "ko" else "PASS returns 4x") in full
    assert json.loads(archive.read(f"{folders['ada']}/attempt-2.report.json"))["score"] == 6
    # Staff comments beside the attempt: overall first, then by line; each with its author and time.
    said = json.loads(archive.read(f"{folders['ada']}/attempt-2.comments.json"))
    assert [(c["line"], c["author"], c["body"]) for c in said] == [
        (None, "Prof", "Well done: every gradient right.\n두 번째 줄도 있습니다."),
        (1, "Tess", "A clear name."), (3, "Tess", "Line 3 could use x.grad directly.")]
    assert [datetime.fromisoformat(c["created_at"]) for c in said] == [NOW - DAY + k * HOUR for k in (1, 2, 0)]
    assert all(c["created_at"].endswith("+09:00") for c in said)
    text = archive.read(f"{folders['ada']}/attempt-2.comments.txt").decode()
    assert text.startswith("on the whole submission, by Prof at 2026-12-13T00:59:00+09:00:\n"
                           "  Well done: every gradient right.\n  두 번째 줄도 있습니다.\n\n")
    assert "on line 3, by Tess at 2026-12-12T23:59:00+09:00:\n  Line 3 could use x.grad directly.\n" in text
    assert [c["body"] for c in json.loads(archive.read(f"{folders['kim']}/attempt-1.comments.json"))] == [
        "Cell 3 never defines y."]


# ------------------------------------------------------------------ the gradebook

def test_each_gradebook_cell_leads_to_that_students_submissions_and_the_total_says_its_maximum(app, desk):
    prof = signed_in(app, "prof@uni.edu")
    page = prof.get(f"/courses/{desk['course']}/gradebook").get_data(as_text=True)
    links = re.findall(r'href="(/assignments/\d+/students/\d+)"', page)
    ids = desk["users"]
    assert sorted(links) == sorted(f"/assignments/{desk['assignment']}/students/{ids[name]}"
                                   for name in ("ada", "bo", "kim", "cy"))
    assert "6 / 6" in page and "5 / 6" in page and "0 / 6" in page  # ada, bo (by hand), cy; kim's 1.8
    assert f'href="/assignments/{desk["assignment"]}/submissions.zip"' in page
    ada = prof.get(f"/assignments/{desk['assignment']}/students/{ids['ada']}")
    assert ada.status_code == 200
    text = ada.get_data(as_text=True)
    with db.transaction(app.config["DATABASE_URL"]) as s:
        hers = s.scalars(select(Submission.id).where(Submission.user_id == ids["ada"])).all()
        others = s.scalars(select(Submission.id).where(Submission.user_id != ids["ada"])).all()
    assert all(f"/submissions/{sub}" in text for sub in hers) and not any(sub in text for sub in others)
    assert "the best of 2 graded attempts" in text and "Ada Lovelace" in text
    nothing = prof.get(f"/assignments/{desk['assignment']}/students/{ids['cy']}").get_data(as_text=True)
    assert "No submissions yet." in nothing
    # Every submission link on a student's page opens for the course's staff.
    for sub in hers:
        assert prof.get(f"/submissions/{sub}").status_code == 200


def test_a_students_work_page_counts_each_attempts_comments_and_leads_to_them(app, desk, database_url):
    ids = desk["users"]
    with db.transaction(database_url) as s:
        hers = s.scalars(select(Submission.id).where(Submission.user_id == ids["ada"])
                         .order_by(Submission.created_at)).all()
    tess = signed_in(app, "tess@uni.edu")  # the TA
    page = tess.get(f"/assignments/{desk['assignment']}/students/{ids['ada']}").get_data(as_text=True)
    rows = {int(n): re.sub(r">\s+<", "><", row) for n, row in
            re.findall(r"<tr><td>(\d+)</td>(.*?)</tr>", page, re.S)}
    assert sorted(rows) == [1, 2, 3]
    link = f'<a href="/submissions/{hers[1]}#comments">3<span class="visually-hidden"> comments on attempt 2'
    assert link in rows[2]
    assert rows[1].endswith("<td>0</td>") and rows[3].endswith("<td>0</td>")
    assert "#comments" not in rows[1] + rows[3]
    shown = tess.get(f"/submissions/{hers[1]}").get_data(as_text=True)
    assert 'id="comments"' in shown and "Well done: every gradient right." in shown
    kim = tess.get(f"/assignments/{desk['assignment']}/students/{ids['kim']}").get_data(as_text=True)
    assert ">1<span class=\"visually-hidden\"> comments on attempt 1" in kim


def test_the_csv_and_json_say_what_the_total_is_out_of(app, desk):
    prof = signed_in(app, "prof@uni.edu")
    rows = list(csv.DictReader(io.StringIO(prof.get(f"/courses/{desk['course']}/gradebook.csv")
                                           .get_data(as_text=True))))
    assert {(r["student"], r["total"], r["max_total"]) for r in rows} == {
        ("ada@uni.edu", "6", "6"), ("bo@uni.edu", "5", "6"), ("kim@uni.edu", "1.8", "6"), ("cy@uni.edu", "0", "6")}
    book = app.test_client().get(f"/api/v1/courses/{desk['course']}/gradebook",
                                 headers={"Authorization": f"Bearer {desk['key']}"}).get_json()
    assert book["assignments"][0]["max_score"] == 6 and {s["max_total"] for s in book["students"]} == {6}


# ------------------------------------------------------------------ the zip, from each surface

def test_staff_download_the_zip_from_the_assignment_page_and_the_gradebook(app, desk, database_url):
    for email in ("prof@uni.edu", "tess@uni.edu"):  # the instructor and the TA
        client = signed_in(app, email)
        page = client.get(f"/assignments/{desk['assignment']}").get_data(as_text=True)
        link = re.search(r'href="([^"]+\.zip)"', page).group(1)
        answer = client.get(link)
        assert answer.status_code == 200 and answer.mimetype == "application/zip"
        archive, index = unzipped(answer.data)
        the_archive_is_the_class(archive, index, desk, database_url)


def test_the_api_gives_the_same_zip_named_in_any_language(app, desk, database_url):
    answer = app.test_client().get(f"/api/v1/assignments/{desk['assignment']}/submissions.zip",
                                   headers={"Authorization": f"Bearer {desk['key']}", "Accept-Language": "ko"})
    assert answer.status_code == 200 and answer.mimetype == "application/zip"
    disposition = answer.headers["Content-Disposition"]
    assert disposition.startswith("attachment; filename=\"") and disposition.isascii()
    plain = re.search(r'filename="([^"]+)"', disposition).group(1)
    assert plain.startswith("DL101") and plain.endswith(".zip")
    named = re.search(r"filename\*=UTF-8''(\S+)", disposition).group(1)
    assert unquote(named) == "DL101-역전파-첫-기울기-submissions.zip"
    archive, index = unzipped(answer.data)
    the_archive_is_the_class(archive, index, desk, database_url, lang="ko")


def test_the_command_writes_the_same_zip_and_refuses_an_unknown_assignment(desk, database_url, monkeypatch, tmp_path):
    monkeypatch.setenv("GRADER_DATABASE_URL", database_url)
    folder = tmp_path / "out"
    folder.mkdir()
    out = folder / "submissions.zip"
    ran = CliRunner().invoke(main, ["gradebook", "submissions", "--assignment", str(desk["assignment"]),
                                    "-o", str(out)])
    assert ran.exit_code == 0, ran.output
    assert "wrote 6 submissions of 3 students" in ran.output
    archive, index = unzipped(out.read_bytes())
    the_archive_is_the_class(archive, index, desk, database_url)
    missing = folder / "missing.zip"
    refused = CliRunner().invoke(main, ["gradebook", "submissions", "--assignment", "999999", "-o", str(missing)])
    assert refused.exit_code == 1 and "there is no assignment 999999" in refused.output
    assert list(folder.iterdir()) == [out]  # nothing half-written is left behind


def test_a_students_folder_is_named_safely_and_apart_from_a_namesake(desk, database_url):
    from grader.courses.archive import folder_of, safe_name

    assert safe_name("../../etc/passwd", "x") == "etc-passwd"
    assert safe_name("\u202egnp.exe\x00 김민지", "x") == "gnp.exe-김민지"
    assert safe_name("...", "student") == "student"
    with db.transaction(database_url) as s:
        a, b = (User(name="Ada / Lovelace", role="student"), User(name="Ada  Lovelace", role="student"))
        s.add_all([a, b])
        s.flush()
        assert folder_of(a) == f"Ada-Lovelace-{a.id}" and folder_of(b) == f"Ada-Lovelace-{b.id}"


def test_an_assignment_with_no_submissions_is_an_index_alone(app, desk, database_url):
    with db.transaction(database_url) as s:
        empty = courses.create_assignment(s, s.get(Course, desk["course"]), exercise="autograd-basics",
                                          due_at=DUE.isoformat())
        empty_id = empty.id
        assert s.get(Assignment, empty_id) is not None
    answer = signed_in(app, "prof@uni.edu").get(f"/assignments/{empty_id}/submissions.zip")
    archive, index = unzipped(answer.data)
    assert archive.namelist() == ["index.csv"] and index == []


def test_the_web_process_builds_the_zip_without_loading_the_engine_or_torch(desk, database_url):
    """The reports' text is the grader's own (grader.report_text), not a second copy, and
    rendering it loads nothing of the engine's side."""
    code = ("import sys; from grader.app import create_app; app = create_app(); "
            f"answer = app.test_client().get('/api/v1/assignments/{desk['assignment']}/submissions.zip', "
            f"headers={{'Authorization': 'Bearer {desk['key']}'}}); "
            "assert answer.status_code == 200 and answer.data.startswith(b'PK'), answer.status_code; "
            "bad = sorted(m for m in sys.modules if m.startswith(('grader.engine', 'grader.protocol', 'torch'))); "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT,
                   env={"GRADER_DATABASE_URL": database_url, "PATH": "/usr/bin:/bin"})
