"""Running a course on a real database (SQLite and PostgreSQL): members from a roster,
assignments with deadlines, attempts and cool-downs refused with the reason and when
they reopen, extensions, the score that counts with its late penalty, overrides, and the
gradebook exported as CSV and read back. Time is the service's own (grader.clock)."""

from __future__ import annotations

import csv
import io
from datetime import datetime, timedelta, timezone

import pytest

from grader.courses.models import Assignment, Course
from grader import clock, db
from grader.accounts.models import User
from grader.bundle import CatalogError
from grader.catalog.models import Exercise
from grader.catalog.uploads import bundle_at
from grader import courses
from grader.courses.gradebook import gradebook, students_csv, submissions_csv
from grader.submissions import SubmissionError
from grader.submissions.models import Submission, SubmissionStatus

DUE = datetime(2026, 12, 10, 14, 59, tzinfo=timezone.utc)  # 23:59 in Seoul
HOUR, DAY, MINUTE = timedelta(hours=1), timedelta(days=1), timedelta(minutes=1)
SOURCE = "def grad_2xtx(x):\n    return x\n"


@pytest.fixture
def course_db(database_url):
    """A course in Seoul with three students and a TA, and autograd-basics published."""
    with db.transaction(database_url) as s:
        s.add(Exercise(slug="autograd-basics", version=1, title={"en": "Your first gradient"}, device="any",
                       max_score=6.0, functions=["grad_2xtx"], published=True))
        s.flush()
        course = courses.create_course(s, title="Deep learning", code="DL101", time_zone="Asia/Seoul")
        roster = courses.import_roster(s, course, courses.roster_rows(
            "email,name,role\nada@uni.edu,Ada,student\nbo@uni.edu,Bo,\ncy@uni.edu,Cy,student\nta@uni.edu,Tess,ta\n"))
        assert roster.added == ["ada@uni.edu", "bo@uni.edu", "cy@uni.edu", "ta@uni.edu"]
        assignment = courses.create_assignment(
            s, course, exercise="autograd-basics", due_at=DUE.isoformat(), late_until=(DUE + 3 * DAY).isoformat(),
            late_policy="per_day", late_percent=10, late_cap=25, attempts=2, cooldown_minutes=10)
        ids = (course.id, assignment.id)
    return database_url, *ids


def student(s, email: str) -> User:
    return s.query(User).filter_by(email=email).one()


def submit(url, assignment_id, email, at) -> str:
    with clock.travel(at), db.transaction(url) as s:
        return courses.submit(s, user=student(s, email), assignment=s.get(Assignment, assignment_id),
                              source=SOURCE).id


def grade(url, submission_id, score):
    """What a worker stores once a submission is graded."""
    with db.transaction(url) as s:
        row = s.get(Submission, submission_id)
        row.status, row.score, row.max_score = SubmissionStatus.GRADED, score, 6.0


def refusal(url, assignment_id, email, at) -> SubmissionError:
    with pytest.raises(SubmissionError) as caught:
        submit(url, assignment_id, email, at)
    return caught.value


def test_submissions_are_taken_under_the_rules_and_refusals_say_why_and_when(course_db):
    url, course_id, assignment_id = course_db
    submit(url, assignment_id, "ada@uni.edu", DUE - HOUR)
    pause = refusal(url, assignment_id, "ada@uni.edu", DUE - HOUR + 4 * MINUTE)
    assert pause.code == "cooling_down" and abs(pause.reopens_at - (DUE - HOUR + 10 * MINUTE)) < MINUTE
    submit(url, assignment_id, "ada@uni.edu", DUE - 30 * MINUTE)
    assert refusal(url, assignment_id, "ada@uni.edu", DUE).code == "no_attempts_left"
    assert refusal(url, assignment_id, "bo@uni.edu", DUE + 3 * DAY + MINUTE).code == "closed"
    with db.transaction(url) as s:
        s.add(User(email="stranger@uni.edu", name="Stranger", role="student"))
    assert refusal(url, assignment_id, "stranger@uni.edu", DUE).code == "not_a_member"
    with db.transaction(url) as s:  # an extension gives one more attempt, with its reason
        courses.grant_extension(s, s.get(Assignment, assignment_id), student(s, "ada@uni.edu"),
                                extra_attempts=1, reason="ill on the due date", by="ines@uni.edu")
    submit(url, assignment_id, "ada@uni.edu", DUE + MINUTE)


def test_the_score_that_counts_is_the_best_after_late_penalties_or_the_override(course_db):
    url, course_id, assignment_id = course_db
    grade(url, submit(url, assignment_id, "ada@uni.edu", DUE - DAY), 3)
    grade(url, submit(url, assignment_id, "ada@uni.edu", DUE + HOUR), 6)          # late by a day: 5.4
    grade(url, submit(url, assignment_id, "bo@uni.edu", DUE + 2 * DAY + HOUR), 6)   # late 3 days: capped at 25%
    with db.transaction(url) as s:
        assignment = s.get(Assignment, assignment_id)
        ada = courses.standing(s, assignment, student(s, "ada@uni.edu"))
        assert (ada.counted.score, ada.counted.penalty, ada.counted.late, ada.counted.of) == (5.4, 10, True, 2)
        assert ada.attempts_left == 0 and ada.refusal.code == "no_attempts_left"
        bo = courses.standing(s, assignment, student(s, "bo@uni.edu"))
        assert (bo.counted.score, bo.counted.penalty) == (4.5, 25)
        courses.set_override(s, assignment, student(s, "bo@uni.edu"), score=6, reason="the late rule was waived",
                             by="ines@uni.edu")
        assert courses.standing(s, assignment, student(s, "bo@uni.edu")).counted.score == 6
        with pytest.raises(courses.CourseError, match="the score must be a number from 0 to 6"):
            courses.set_override(s, assignment, student(s, "cy@uni.edu"), score=7, reason="x", by="ines@uni.edu")


def test_the_gradebook_exports_as_csv_that_reads_back_in_the_courses_time_zone(course_db):
    url, course_id, assignment_id = course_db
    grade(url, submit(url, assignment_id, "ada@uni.edu", DUE + HOUR), 6)
    grade(url, submit(url, assignment_id, "bo@uni.edu", DUE - DAY), 4)
    with db.transaction(url) as s:
        assignment = s.get(Assignment, assignment_id)
        courses.grant_extension(s, assignment, student(s, "cy@uni.edu"), due_at=(DUE + 2 * DAY).isoformat(),
                                reason="exchange semester", by="ines@uni.edu")
        book = gradebook(s, s.get(Course, course_id))
        per_student = list(csv.DictReader(io.StringIO(students_csv(book))))
        per_submission = list(csv.DictReader(io.StringIO(submissions_csv(s, book))))
    title = "Your first gradient"
    assert [(r["student"], r[f"{title} (score)"], r[f"{title} (note)"], r["total"]) for r in per_student] == [
        ("ada@uni.edu", "5.4", "late: -10%", "5.4"), ("bo@uni.edu", "4", "", "4"),
        ("cy@uni.edu", "", "extension: exchange semester", "0")]  # the TA is no student of it
    ada = next(r for r in per_submission if r["student"] == "ada@uni.edu")
    assert ada["submitted_at"] == "2026-12-11T00:59:00+09:00"  # ISO 8601, in Seoul, with its offset
    assert datetime.fromisoformat(ada["submitted_at"]) == DUE + HOUR
    assert (ada["assignment"], ada["assignment_id"]) == (title, str(assignment_id))
    assert (ada["late"], ada["late_penalty_percent"], ada["counts"], ada["score"]) == ("yes", "10", "yes", "6")


def test_two_assignments_with_one_title_get_a_column_each(course_db):
    url, course_id, first = course_db
    with db.transaction(url) as s:
        second = courses.create_assignment(s, s.get(Course, course_id), exercise="autograd-basics",
                                           due_at=(DUE + DAY).isoformat()).id
    grade(url, submit(url, first, "ada@uni.edu", DUE - DAY), 6)
    grade(url, submit(url, second, "ada@uni.edu", DUE), 3)
    with db.transaction(url) as s:
        book = gradebook(s, s.get(Course, course_id))
        text = students_csv(book)
    header = next(csv.reader(io.StringIO(text)))
    assert len(header) == len(set(header))
    ada = next(r for r in csv.DictReader(io.StringIO(text)) if r["student"] == "ada@uni.edu")
    title = "Your first gradient"
    assert (ada[f"{title} (#{first}) (score)"], ada[f"{title} (#{second}) (score)"], ada["total"]) == ("6", "3", "9")


@pytest.mark.parametrize("name", ["=HYPERLINK(\"http://x\")", "+1+1", "-2+3", "@SUM(A1)", "\t=1+1", "\r=1+1",
                                  "  =1+1", "\u3000@cmd", "\tAda"])
def test_no_cell_of_an_export_starts_a_formula(course_db, name):
    """OWASP's CSV injection list, also after leading whitespace: such a name (an LMS can send
    one) is written with a quote first, so a spreadsheet shows it as text."""
    url, course_id, assignment_id = course_db
    with db.transaction(url) as s:
        student(s, "ada@uni.edu").name = name
        s.get(Assignment, assignment_id).title = name
        book = gradebook(s, s.get(Course, course_id))
        per_student, per_submission = students_csv(book), submissions_csv(s, book)
    [ada] = [r for r in csv.DictReader(io.StringIO(per_student)) if r["student"] == "ada@uni.edu"]
    assert ada["name"] == "'" + name
    assert next(csv.reader(io.StringIO(per_student)))[2] == f"'{name} (score)"
    assert next(csv.reader(io.StringIO(per_submission)))[2] == "assignment"


def test_a_course_code_is_the_sites_alone_whatever_its_case(course_db):
    url, course_id, _ = course_db
    for code in ("DL101", "dl101", " Dl101 "):
        with pytest.raises(courses.CourseError) as caught, db.transaction(url) as s:
            courses.create_course(s, title="Another", code=code)
        assert caught.value.code == "course_code_taken" and caught.value.status == 409
        assert "there is already a course with the code" in caught.value.message
    with db.transaction(url) as s:
        assert s.query(Course).count() == 1  # nothing half-made
        assert courses.course_called(s, "dl101").id == course_id
        assert courses.create_course(s, title="Next term", code="DL101-2").code == "DL101-2"


def test_the_database_refuses_a_second_course_with_a_code_the_check_did_not_see(course_db, monkeypatch):
    """Two requests racing past the check: the unique index stops the second, as a refusal."""
    from grader.courses import codes

    url, _, _ = course_db
    monkeypatch.setattr(codes, "require_free", lambda session, code: None)  # the other request's view
    with pytest.raises(courses.CourseError) as caught, db.transaction(url) as s:
        courses.create_course(s, title="Raced", code="dl101")
    assert caught.value.code == "course_code_taken"
    with db.transaction(url) as s:
        assert s.query(Course).filter_by(title="Raced").count() == 0


def test_a_roster_with_a_bad_line_imports_nothing_and_says_which(course_db):
    url, course_id, _ = course_db
    with db.transaction(url) as s:
        course = s.get(Course, course_id)
        with pytest.raises(courses.CourseError) as caught:
            courses.import_roster(s, course, courses.roster_rows(
                "email,name,role\nnew@uni.edu,New,student\nnot-an-email,X,student\nold@uni.edu,Old,professor\n"))
        assert "nothing was imported" in caught.value.message and "line 3" in caught.value.message
        assert "line 4: the role must be one of student, ta, instructor" in caught.value.message
    with db.transaction(url) as s:
        assert s.query(User).filter_by(email="new@uni.edu").count() == 0


@pytest.mark.parametrize("fields, says", [
    ({"due_at": "2026-12-10T23:59"}, "must say its time zone"),
    ({"late_until": (DUE - HOUR).isoformat()}, "must end after the due date"),
    ({"opens_at": (DUE + HOUR).isoformat()}, "must open before it is due"),
    ({"late_policy": "per_week"}, "the late policy must be one of none, per_day, per_hour"),
    ({"late_policy": "per_day"}, "needs a penalty above 0 percent"),
    ({"attempts": 0}, "the number of attempts must be a whole number from 1"),
    ({"exercise": "no-such-exercise"}, "there is no exercise"),
    ({"version": 7}, "version 7 of autograd-basics is not kept"),
])
def test_an_assignment_with_a_bad_rule_is_refused_with_the_reason(course_db, fields, says):
    url, course_id, _ = course_db
    with db.transaction(url) as s:
        with pytest.raises(courses.CourseError, match=says):
            courses.create_assignment(s, s.get(Course, course_id),
                                      **{"exercise": "autograd-basics", "due_at": DUE.isoformat(), **fields})


def test_an_assignment_grades_against_the_version_it_pinned_while_that_is_kept(course_db):
    url, *_ = course_db
    with db.transaction(url) as s:
        assert bundle_at(s, "autograd-basics", 1).version == 1
        with pytest.raises(CatalogError, match="version 2 of autograd-basics is no longer kept"):
            bundle_at(s, "autograd-basics", 2)


def test_the_services_clock_can_be_set_for_a_whole_process(monkeypatch):
    monkeypatch.setenv("GRADER_NOW", "2026-12-10T23:59:00+09:00")
    assert clock.now() == DUE
    with clock.travel(DUE + DAY):
        assert abs(clock.now() - (DUE + DAY)) < timedelta(seconds=5)


def test_a_running_process_clock_is_moved_through_the_file_it_was_given(tmp_path, monkeypatch):
    held = tmp_path / "clock"
    monkeypatch.setenv("GRADER_NOW", f"@{held}")
    assert abs(clock.now() - datetime.now(timezone.utc)) < timedelta(seconds=5)  # no file: the real time
    held.write_text("2026-12-10T23:59:00+09:00\n")
    assert clock.now() == DUE
    held.write_text((DUE + DAY).isoformat())
    assert clock.now() == DUE + DAY  # read again at every use
    held.write_text("")
    assert abs(clock.now() - datetime.now(timezone.utc)) < timedelta(seconds=5)
    held.write_text("next tuesday")
    with pytest.raises(ValueError):
        clock.now()


def test_a_course_runs_from_the_command_line(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from grader.cli import main

    url = f"sqlite:///{tmp_path / 'grader.db'}"
    monkeypatch.setenv("GRADER_DATABASE_URL", url)
    db.upgrade(url)
    with db.transaction(url) as s:
        s.add(Exercise(slug="autograd-basics", version=1, title={"en": "Your first gradient"}, device="any",
                       max_score=6.0, functions=["grad_2xtx"], published=True))
    roster = tmp_path / "roster.csv"
    roster.write_text("email,name,role\nada@uni.edu,Ada,student\n")
    runner = CliRunner()
    made = runner.invoke(main, ["course", "create", "--title", "Deep learning", "--code", "DL101",
                                "--time-zone", "Asia/Seoul", "--roster", str(roster)])
    assert made.exit_code == 0, made.output
    course_id = made.stdout.strip().splitlines()[-1]
    assignment = runner.invoke(main, ["assignment", "create", "--course", course_id, "--exercise", "autograd-basics",
                                      "--due", "2026-12-10T23:59+09:00", "--attempts", "0"])
    assert assignment.exit_code != 0 and "the number of attempts must be a whole number from 1" in assignment.output
    assignment = runner.invoke(main, ["assignment", "create", "--course", course_id, "--exercise", "autograd-basics",
                                      "--due", "2026-12-10T23:59+09:00"])
    assert assignment.exit_code == 0 and "due 2026-12-10 23:59 KST (Asia/Seoul)" in assignment.output
    grade(url, submit(url, int(assignment.stdout.strip().splitlines()[-1]), "ada@uni.edu", DUE - HOUR), 6)
    again = runner.invoke(main, ["course", "create", "--title", "Deep learning again", "--code", "dl101"])
    assert again.exit_code == 1 and "there is already a course with the code 'dl101'" in again.output
    exported = runner.invoke(main, ["gradebook", "export", "--course", "DL101", "--csv", str(tmp_path / "g.csv")])
    assert exported.exit_code == 0, exported.output
    rows = list(csv.DictReader((tmp_path / "g.csv").open()))
    assert [(r["student"], r["total"]) for r in rows] == [("ada@uni.edu", "6")]
    per_submission = runner.invoke(main, ["gradebook", "export", "--course", "dl101", "--per", "submission"])
    [row] = list(csv.DictReader(io.StringIO(per_submission.stdout)))
    assert row["submitted_at"] == "2026-12-10T22:59:00+09:00"
    db.release(url)


def test_a_regrade_starts_from_the_command_line(course_db, redis, monkeypatch):
    from click.testing import CliRunner

    from grader.cli import main

    url, course_id, assignment_id = course_db
    monkeypatch.setenv("GRADER_DATABASE_URL", url)
    runner = CliRunner()
    refused = runner.invoke(main, ["regrade", "--assignment", str(assignment_id)])
    assert refused.exit_code != 0 and "no graded submission to regrade" in refused.output
    grade(url, submit(url, assignment_id, "ada@uni.edu", DUE - HOUR), 6)
    started = runner.invoke(main, ["regrade", "--assignment", str(assignment_id)])
    assert started.exit_code == 0 and "1 submissions sent to the workers" in started.output
    assert redis.llen("cpu-regrade") == 1
