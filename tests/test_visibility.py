"""Who is shown what of a submission, on every surface, asked of one course core.

The matrix: every surface that shows a submission (its page, the page's status poll, its
code, the staff list, a personal token through the API, which the notebook client reads)
× every viewer (the author, another student of the course, a TA and an instructor of the
course, the instructor of another course the author is also in, the instructor of an LMS
course the author was put into, an administrator) × (hidden results held, released), for
an assignment's submission and for one to the free catalogue on the same exercise (which the
assignment's hold covers too: the same code sent there would undo it). A route that shows a
submission and is missing from SURFACES fails the last test: a new surface is added to
the matrix before it ships.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import select

from grader import clock, courses, db
from grader.accounts import keys, users
from grader.accounts.models import User
from grader.courses.models import Course
from grader.lti.models import LtiPlatform
from grader.submissions.models import Submission
from tests.forms import PASSWORD, sign_in
from tests.test_web import GOOD, site, store_grade, submit  # noqa: F401  (site is a fixture)

DUE = datetime(2099, 1, 1, tzinfo=timezone.utc)
VIEWERS = ("author", "classmate", "ta", "instructor", "other_instructor", "lms_instructor", "admin")
# Who is shown a course's submission at all; the author alone has the hidden results held.
SEES_COURSE_WORK = {"author", "ta", "instructor", "admin"}
SEES_FREE_WORK = {"author", "admin"}  # the free catalogue: its author's own, never a course's


@pytest.fixture
def world(site, database_url):
    """Ada submits to a held assignment of DL101 and to the free catalogue. She is also a
    student of another course (Olga's) that uses the same exercise, and was put into an
    LMS course (Lena's) the old way, by the roster form."""
    people = {"author": "ada@example.org", "classmate": "bob@example.org", "ta": "tess@uni.edu",
              "instructor": "ivy@uni.edu", "other_instructor": "olga@uni.edu", "lms_instructor": "lena@uni.edu",
              "admin": "ines@example.org"}
    with db.transaction(database_url) as s:
        for viewer in ("ta", "instructor", "other_instructor", "lms_instructor"):
            users.create_user(s, email=people[viewer], password=PASSWORD, role="instructor", name=viewer)
        s.flush()
        user = {v: s.scalar(select(User).where(User.email == e)) for v, e in people.items()}
        course = courses.create_course(s, title="Deep learning", code="DL101", time_zone="Asia/Seoul")
        for viewer, role in (("author", "student"), ("classmate", "student"), ("ta", "ta"),
                             ("instructor", "instructor")):
            courses.set_role(s, course.id, user[viewer].id, role)
        held = courses.create_assignment(s, course, exercise="autograd-basics", due_at=DUE.isoformat(),
                                         feedback="after_due")
        courses.place(s, course.id, "autograd-basics")
        other = courses.create_course(s, title="Other", code="OT1")
        courses.set_role(s, other.id, user["other_instructor"].id, "instructor")
        courses.set_role(s, other.id, user["author"].id, "student")
        courses.create_assignment(s, other, exercise="autograd-basics", due_at=DUE.isoformat())
        courses.place(s, other.id, "autograd-basics")
        platform = LtiPlatform(issuer="https://lms.example", client_id="c", auth_login_url="https://lms.example/a",
                               auth_token_url="https://lms.example/t", jwks_url="https://lms.example/j")
        s.add(platform)
        s.flush()
        lms = Course(platform_id=platform.id, context_id="ctx", title="LMS course", code="LMS1")
        s.add(lms)
        s.flush()
        courses.set_role(s, lms.id, user["lms_instructor"].id, "instructor")
        courses.set_role(s, lms.id, user["author"].id, "student")
        courses.place(s, lms.id, "autograd-basics")
        ids = {"course": course.id, "assignment": held.id, "lms": lms.id}
    clients = {}
    for viewer, email in people.items():
        clients[viewer] = site.test_client()
        assert sign_in(clients[viewer], email).status_code == 302
    course_work = clients["author"].post(f"/assignments/{ids['assignment']}/submissions", data={
        "source": GOOD, "csrf_token": _csrf(clients["author"], f"/assignments/{ids['assignment']}")})
    assert course_work.status_code == 303, course_work.get_data(as_text=True)
    free = submit(clients["author"])
    assert free.status_code == 303
    with db.transaction(database_url) as s:
        mine = {row.assignment_id: row.id for row in s.scalars(select(Submission))}
        tokens = {viewer: keys.create(s, keys.PERSONAL_SCOPES, name="t", user_id=user[viewer].id)[1]
                  for viewer in VIEWERS}
    for submission_id in mine.values():
        store_grade(database_url, submission_id, GOOD)
    return {"ids": ids, "course_work": mine[ids["assignment"]], "free": mine[None], "clients": clients,
            "tokens": tokens, "app": site}


def _csrf(client, path: str) -> str:
    from tests.forms import csrf_in
    return csrf_in(client.get(path).get_data(as_text=True))


# Each surface: what it answers ``viewer`` about a submission, as ("absent",) when it says
# nothing exists, else ("full", ...) or ("held", ...), from what it shows.
def page(world, viewer, submission_id):
    response = world["clients"][viewer].get(f"/submissions/{submission_id}")
    if response.status_code == 404:
        return "absent"
    text = response.get_data(as_text=True)
    assert response.status_code == 200
    if "shown after the due date" in text:
        assert "Score</strong>" not in text and "Score: " not in text and "Score that counts" not in text
        return "held"
    assert "Score: 6 / 6" in text, text
    return "full"


def status_poll(world, viewer, submission_id):
    response = world["clients"][viewer].get(f"/submissions/{submission_id}/status")
    if response.status_code == 404:
        return "absent"
    return "held" if response.get_json()["score"] is None else "full"


def code(world, viewer, submission_id):
    response = world["clients"][viewer].get(f"/submissions/{submission_id}/source.py")
    return "absent" if response.status_code == 404 else "full"


def staff_list(world, viewer, submission_id):
    response = world["clients"][viewer].get("/instructor/submissions")
    if response.status_code in (403, 404):
        return "absent"
    return "full" if submission_id in response.get_data(as_text=True) else "absent"


def personal_token(world, viewer, submission_id):
    api = world["app"].test_client()
    response = api.get(f"/api/v1/submissions/{submission_id}",
                       headers={"Authorization": f"Bearer {world['tokens'][viewer]}"})
    if response.status_code == 404:
        return "absent"
    body = response.get_json()
    if body.get("feedback_held_until"):
        assert body["score"] is None and body.get("counted_score") is None
        assert all(t["visible"] for t in body["report"]["tests"])
        return "held"
    return "full"


SURFACES = {"web.submission": page, "web.submission_status": status_poll, "web.source_download": code,
            "web.all_submissions": staff_list, "api.get_submission": personal_token}


def expected(viewer: str, free: bool, released: bool) -> str:
    if viewer not in (SEES_FREE_WORK if free else SEES_COURSE_WORK):
        return "absent"
    if viewer == "author" and not released:
        return "held"  # course work; and free work on the exercise the held assignment uses
    return "full"


def test_each_surface_shows_each_viewer_what_the_course_core_allows(world):
    # The four cases share one world (what it costs to build is most of the test): the matrix
    # only reads, and every held case is looked at before any released one.
    wrong = {}
    for released in (False, True):
        for which in ("course_work", "free"):
            submission_id = world[which]
            with clock.travel(DUE + timedelta(minutes=1) if released else DUE - timedelta(days=1)):
                for name, surface in SURFACES.items():
                    for viewer in VIEWERS:
                        answer = surface(world, viewer, submission_id)
                        want = expected(viewer, which == "free", released)
                        if name in ("web.source_download", "web.all_submissions") and want == "held":
                            want = "full" if name == "web.source_download" else "absent"  # own code; not staff
                        if name == "web.all_submissions" and viewer == "author":
                            want = "absent"  # the staff list is for staff
                        if name == "api.get_submission" and viewer != "author":
                            want = "absent"  # a personal token reads its owner's own work, nobody else's
                        if answer != want:
                            case = (which, "released" if released else "held", name, viewer)
                            wrong[case] = (answer, want)
    assert not wrong, f"(submission, results, surface, viewer): (shown, allowed) {wrong}"


def test_every_route_that_shows_a_submission_is_in_the_matrix(site):
    showing = {rule.endpoint for rule in site.url_map.iter_rules()
               if "<submission_id>" in rule.rule and "GET" in rule.methods}
    assert showing <= set(SURFACES), f"add these to SURFACES: {showing - set(SURFACES)}"


def test_staff_of_an_lms_course_import_no_local_student(world, database_url):
    lena = world["clients"]["lms_instructor"]
    course_id = world["ids"]["lms"]
    page_ = lena.get(f"/courses/{course_id}").get_data(as_text=True)
    assert 'name="roster"' not in page_  # no roster form for an LMS course
    from tests.forms import csrf_in
    refused = lena.post(f"/courses/{course_id}/members", data={
        "roster_text": "email,name,role\nbob@example.org,Bob,student\n", "csrf_token": csrf_in(page_)})
    assert refused.status_code == 422 and "come from the LMS" in refused.get_data(as_text=True)
    with db.transaction(database_url) as s:
        lms = s.get(Course, course_id)
        assert "bob@example.org" not in [u.email for u, _ in courses.members(s, lms)]
        with pytest.raises(courses.CourseError) as caught:
            courses.import_roster(s, lms, [{"email": "bob@example.org", "role": "student"}])
        assert caught.value.code == "lms_course"


# ------------------------------------------------------------------ what counts, shown with the submission

LATE_DUE = datetime(2026, 3, 2, 14, 59, tzinfo=timezone.utc)


@pytest.fixture
def late_assignment(site, database_url):
    """Ada in a course whose assignment takes work until three days late, at 10% a day."""
    with db.transaction(database_url) as s:
        course = courses.create_course(s, title="Late", code="LT1", time_zone="Asia/Seoul")
        ada = s.scalar(select(User).where(User.email == "ada@example.org"))
        courses.set_role(s, course.id, ada.id, "student")
        assignment = courses.create_assignment(
            s, course, exercise="autograd-basics", due_at=LATE_DUE.isoformat(), late_policy="per_day",
            late_percent=10, late_until=(LATE_DUE + timedelta(days=3)).isoformat())
        token = keys.create(s, keys.PERSONAL_SCOPES, name="colab", user_id=ada.id)[1]
        return assignment.id, token


def test_a_late_submission_says_late_with_its_penalty_and_the_score_that_counts(site, database_url,
                                                                                late_assignment):
    assignment_id, token = late_assignment
    api, bearer = site.test_client(), {"Authorization": f"Bearer {token}"}
    with clock.travel(LATE_DUE + timedelta(hours=30)):  # two begun days late: 20% lost
        made = api.post("/api/v1/submissions", json={"assignment": assignment_id, "source": GOOD}, headers=bearer)
        assert made.status_code == 202, made.get_json()
    store_grade(database_url, made.get_json()["id"], GOOD)
    with clock.travel(LATE_DUE + timedelta(days=4)):
        body = api.get(made.get_json()["url"], headers=bearer).get_json()
        assert (body["score"], body["late"], body["late_penalty_percent"]) == (6.0, True, 20.0)
        assert (body["counted_score"], body["counted_max_score"]) == (4.8, 6.0)
        ada = site.test_client()
        sign_in(ada, "ada@example.org")
        text = ada.get(f"/submissions/{body['id']}").get_data(as_text=True)
        listed = ada.get("/submissions").get_data(as_text=True)
    assert "KST (Asia/Seoul)" in listed  # "My submissions" too shows course work in the course's time
    assert "LATE" in text and "loses 20% of its score" in text and "4.8 / 6 after the penalty" in text
    assert "Score that counts on" in text and "<strong>4.8 / 6</strong>" in text
    assert "KST (Asia/Seoul)" in text and "Back to the assignment" in text  # the course's time, its page


def test_a_submission_on_time_is_not_late_and_a_free_one_has_no_course_fields(site, database_url, late_assignment):
    assignment_id, token = late_assignment
    api, bearer = site.test_client(), {"Authorization": f"Bearer {token}"}
    with clock.travel(LATE_DUE - timedelta(hours=1)):
        on_time = api.post("/api/v1/submissions", json={"assignment": assignment_id, "source": GOOD},
                           headers=bearer).get_json()
        free = api.post("/api/v1/submissions", json={"exercise": "autograd-basics", "source": GOOD},
                        headers=bearer).get_json()
        body = api.get(on_time["url"], headers=bearer).get_json()
        assert (body["late"], body["late_penalty_percent"], body["counted_score"]) == (False, 0.0, None)
        assert not {"late", "counted_score"} & set(api.get(free["url"], headers=bearer).get_json())


def test_a_regrade_note_tells_a_held_student_only_that_a_submission_was_regraded(world, database_url):
    from grader.courses import regrades
    from grader.courses.models import Assignment, Regrade, RegradeGrade
    with db.transaction(database_url) as s:
        regrade = Regrade(assignment_id=world["ids"]["assignment"], version=1, status="published",
                          decided_at=DUE - timedelta(days=2))
        s.add(regrade)
        s.flush()
        s.add(RegradeGrade(regrade_id=regrade.id, submission_id=world["course_work"], status="graded", score=6.0,
                           max_score=6.0, old_version=1, old_score=3.0, old_max_score=6.0))
    ada, path = world["clients"]["author"], f"/assignments/{world['ids']['assignment']}"
    with clock.travel(DUE - timedelta(days=1)):
        held = ada.get(path).get_data(as_text=True)
        with db.transaction(database_url) as s:
            assignment, author = s.get(Assignment, world["ids"]["assignment"]), s.get(Submission, world["free"]).user_id
            assert [note for _, note in regrades.notes_for(s, assignment, author)] == [None]
    assert "was regraded" in held and "went from 3 to 6" not in held
    with clock.travel(DUE + timedelta(minutes=1)):
        assert "went from 3 to 6" in ada.get(path).get_data(as_text=True)


def test_staff_of_an_lms_course_see_what_its_lms_students_submitted_through_its_links(world, database_url):
    """Work sent through an LMS course's link to an exercise (no assignment) by a member the
    course's platform named is that course's; the same exercise's free work by a local
    member is not."""
    with db.transaction(database_url) as s:
        lms = s.get(Course, world["ids"]["lms"])
        sam = User(external_id=f"lti:{lms.platform_id}|sam", name="Sam", role="student")
        s.add(sam)
        s.flush()
        courses.set_role(s, lms.id, sam.id, "student")
        sam_id, lms_id = sam.id, lms.id
    # Sent from the exercise's page that the course's link opened (?course=): the course's work.
    through_link = courses.take(lambda: db.transaction(database_url), who=lambda s: s.get(User, sam_id),
                                target=lambda s: "autograd-basics", source=GOOD, via_course=lms_id).id
    lena, olga = world["clients"]["lms_instructor"], world["clients"]["other_instructor"]
    assert lena.get(f"/submissions/{through_link}").status_code == 200
    assert olga.get(f"/submissions/{through_link}").status_code == 404
    assert lena.get(f"/submissions/{world['free']}").status_code == 404  # Ada is local: not the LMS's


def test_the_assignments_a_token_lists_hold_the_score_that_counts_as_the_site_does(world):
    api, bearer = world["app"].test_client(), {"Authorization": f"Bearer {world['tokens']['author']}"}
    with clock.travel(DUE - timedelta(days=1)):
        listed = {a["course"]["code"]: a for a in api.get("/api/v1/assignments", headers=bearer).get_json()["assignments"]}
    held = listed["DL101"]
    assert (held["counted_score"], held["attempts_used"], held["refusal"]) == (None, 1, None)
    assert held["feedback_held_until"].startswith("2099-01-01") and set(listed) == {"DL101", "OT1"}
    with clock.travel(DUE + timedelta(minutes=1)):
        released = {a["course"]["code"]: a for a in
                    api.get("/api/v1/assignments", headers=bearer).get_json()["assignments"]}["DL101"]
    assert (released["counted_score"], released["feedback_held_until"]) == (6.0, None)
    classmate = {"Authorization": f"Bearer {world['tokens']['classmate']}"}
    assert [a["attempts_used"] for a in api.get("/api/v1/assignments", headers=classmate).get_json()["assignments"]] \
        == [0]  # Bo's own standing, never Ada's


# ------------------------------------------------------------------ one way code is handed in

def test_code_is_handed_in_through_the_course_core_alone():
    """Storing a submission or practice run, and sending it to the workers, is
    courses.take's alone: a surface that stores or sends one itself would skip the source
    check, the rules or the commit-before-send order."""
    import re
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent / "grader"
    storing = re.compile(r"\b(submissions\.create|submissions\.send|runs\.start|runs\.send|practice_runs\.start|"
                         r"courses\.submit|courses\.practice|counting\.submit|counting\.practice)\(")
    allowed = {root / "courses" / "taking.py", root / "courses" / "counting.py"}
    found = {f"{path.relative_to(root)}:{number}" for path in root.rglob("*.py") if path not in allowed
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if storing.search(line) and not line.lstrip().startswith(("def ", "#"))}
    assert not found, f"code handed in outside courses.take: {sorted(found)}"


COURSE_PAGES = ("/courses/{course}/gradebook", "/courses/{course}/gradebook.csv", "/assignments/{assignment}/analytics",
                "/assignments/{assignment}/similarity")


def test_a_courses_own_pages_open_to_its_staff_and_administrators_alone(world):
    # One world for every page: the pages are only read.
    for path in COURSE_PAGES:
        url = path.format(**world["ids"])
        with clock.travel(DUE - timedelta(days=1)):  # held from the student, never from staff
            answers = {viewer: world["clients"][viewer].get(url) for viewer in VIEWERS}
        opened = {viewer for viewer, response in answers.items() if response.status_code == 200}
        assert opened == {"ta", "instructor", "admin"}, (path, {v: r.status_code for v, r in answers.items()})
        assert all(answers[v].status_code in (403, 404) for v in set(VIEWERS) - opened), path
        if "gradebook" in path:
            assert all("6" in answers[v].get_data(as_text=True) for v in opened), path  # Ada's score, for staff


def test_code_stored_with_crlf_before_sources_were_normalised_shows_its_lines_plainly(world, database_url):
    with db.transaction(database_url) as s:
        s.get(Submission, world["free"]).source = "import torch\r\ndef grad_2xtx(x):\r\n    return 4 * x\r\n"
    page_ = world["clients"]["author"].get(f"/submissions/{world['free']}").get_data(as_text=True)
    assert "\\x0d" not in page_ and "&#13;" not in page_ and 'id="L3"' in page_ and 'id="L4"' not in page_


def test_the_catalogues_best_scores_wait_while_an_assignment_holds_the_exercise(world):
    ada = world["clients"]["author"]
    with clock.travel(DUE - timedelta(days=1)):
        catalogue, mine = ada.get("/exercises").get_data(as_text=True), ada.get("/submissions").get_data(as_text=True)
    assert "6 / 6" not in catalogue and "after the due date" in catalogue
    assert "after the due date" in mine.split("Best scores")[1].split("</ul>")[0]
    with clock.travel(DUE + timedelta(minutes=1)):
        assert "6 / 6" in ada.get("/exercises").get_data(as_text=True)


def test_an_assignments_practice_run_is_dated_in_its_courses_time(site, database_url, late_assignment):
    assignment_id, token = late_assignment
    api = site.test_client()
    run = api.post("/api/v1/submissions", json={"assignment": assignment_id, "source": GOOD, "practice": True},
                   headers={"Authorization": f"Bearer {token}"}).get_json()
    ada = site.test_client()
    sign_in(ada, "ada@example.org")
    assert "KST (Asia/Seoul)" in ada.get(f"/practice/{run['id']}").get_data(as_text=True)
