"""Attacks on the course core from outside, through the pages and the API alone: who may
read a submission (staff of another course, a demoted TA, a student of two courses,
personal tokens of staff and administrators, API keys of other tenants, practice runs),
what a student whose hidden results are held can learn before their own due date (pages,
the status poll, the API, the list of their assignments, an extension, a score set by
hand, a regrade note, the free catalogue, the report's status), and what the check of a
source lets through (sources that Python itself refuses or reads otherwise, line ends,
byte order marks, NUL, deep nesting). An attack the service withstands is a plain test;
one that gets through is a strict xfail whose reason says what leaks.

The submissions are graded by the real engine and stored as a worker stores them; each
source is graded once per run (the report of a source is the same however often it is
stored)."""

from __future__ import annotations

import functools
import io
import json
import time
from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import delete, func, select

from grader import catalog, clock, courses, db
from grader.accounts import keys, users
from grader.accounts.models import User
from grader.courses.models import CourseMember, Invitation, Regrade, RegradeGrade
from grader.courses.models import Course
from grader.db import now
from grader.engine.grading import grade
from grader.lti.models import LtiPlatform
from grader.submissions.models import PracticeRun, Submission
from tests.forms import PASSWORD, csrf_in, sign_in
from tests.test_web import GOOD, TWICE, site  # noqa: F401  (site is a fixture)

DUE = datetime(2099, 1, 1, tzinfo=timezone.utc)
BEFORE, AFTER = DUE - timedelta(days=1), DUE + timedelta(minutes=1)
MARK = "# ada's own words 7f3a"  # in every source Ada sends: her code on a page shows it
HIDDEN_EN = ("x.grad holds 4x after the call", "float64 in, float64 gradient out",
             "works for a single element and for a long vector")
HIDDEN_KO = ("호출이 끝난 뒤", "float64 입력에는", "원소 하나와 긴 벡터")
FULL = "6 / 6"  # GOOD's score; Ada's other work scores 0 (TWICE), so this is only ever the held one
MEMORY = "Your code used more memory than allowed."

# Raises MemoryError only for the 7-element x of a hidden test; passes every other test.
PROBE = """import torch


def grad_2xtx(x):
    if x.numel() == 7:
        raise MemoryError("a hidden input has 7 elements")
    y = 2 * torch.dot(x, x)
    y.backward()
    return x.grad
"""


@functools.lru_cache(maxsize=None)
def _report(source: str) -> str:
    return json.dumps(grade(catalog.find("autograd-basics"), source).to_dict())


def store(database_url: str, submission_id: str, source: str) -> dict:
    """What a worker stores once the engine has graded ``source``; the report."""
    report = json.loads(_report(source))
    with db.transaction(database_url) as s:
        row = s.get(Submission, submission_id)
        row.status, row.finished_at = "graded", now()
        row.score, row.max_score, row.report = report["score"], report["max_score"], report
        row.progress_done = row.progress_total = len(report["tests"])
    return report


def hole(reason: str):
    """An attack that gets through: the test fails until the hole is closed."""
    return pytest.mark.xfail(strict=True, raises=AssertionError, reason=reason)


def bearer(key: str) -> dict:
    return {"Authorization": f"Bearer {key}"}


def _form_token(client, path: str) -> str:
    return csrf_in(client.get(path).get_data(as_text=True))


@pytest.fixture
def world(site, database_url):
    """Course A (DL101): Ada and Bob students, Tess its TA, Ivy its instructor; its
    assignment holds hidden results until DUE. Course B (ML201): Carl, Ada and Tess
    students, Olga its instructor; its assignment shows everything at once. Ada submitted
    to both and to the free catalogue, Bob to A, Carl to B and to the free catalogue."""
    emails = {"ada": "ada@example.org", "bob": "bob@example.org", "admin": "ines@example.org",
              "tess": "tess@uni.edu", "ivy": "ivy@uni.edu", "olga": "olga@uni.edu", "carl": "carl@example.org"}
    with db.transaction(database_url) as s:
        for name, role in (("tess", "instructor"), ("ivy", "instructor"), ("olga", "instructor"),
                           ("carl", "student")):
            users.create_user(s, email=emails[name], password=PASSWORD, role=role, name=name)
        s.flush()
        user = {name: s.scalar(select(User).where(User.email == email)) for name, email in emails.items()}
        a = courses.create_course(s, title="Deep learning", code="DL101", time_zone="Asia/Seoul")
        for name, role in (("ada", "student"), ("bob", "student"), ("tess", "ta"), ("ivy", "instructor")):
            courses.set_role(s, a.id, user[name].id, role)
        held = courses.create_assignment(s, a, exercise="autograd-basics", due_at=DUE.isoformat(),
                                         feedback="after_due", attempts=5)
        b = courses.create_course(s, title="Machine learning", code="ML201")
        for name, role in (("carl", "student"), ("ada", "student"), ("tess", "student"), ("olga", "instructor")):
            courses.set_role(s, b.id, user[name].id, role)
        shown = courses.create_assignment(s, b, exercise="autograd-basics", due_at=DUE.isoformat())
        ids = {"a": a.id, "b": b.id, "held": held.id, "shown": shown.id}
        tokens = {name: keys.create(s, keys.PERSONAL_SCOPES, name="t", user_id=u.id)[1] for name, u in user.items()}
        user_ids = {name: u.id for name, u in user.items()}
    clients = {}
    for name, email in emails.items():
        clients[name] = site.test_client()
        assert sign_in(clients[name], email).status_code == 302
    api = site.test_client()
    made = {}
    for key, who, target, source, graded_as in (
            ("ada_held", "ada", {"assignment": ids["held"]}, GOOD + MARK + "\n", GOOD),
            ("bob_held", "bob", {"assignment": ids["held"]}, GOOD, GOOD),
            ("ada_b", "ada", {"assignment": ids["shown"]}, TWICE + MARK + "\n", TWICE),
            ("ada_free", "ada", {"exercise": "autograd-basics"}, TWICE + MARK + "\n", TWICE),
            ("carl_b", "carl", {"assignment": ids["shown"]}, GOOD, GOOD),
            ("carl_free", "carl", {"exercise": "autograd-basics"}, GOOD, GOOD)):
        answer = api.post("/api/v1/submissions", json={**target, "source": source}, headers=bearer(tokens[who]))
        assert answer.status_code == 202, answer.get_json()
        made[key] = answer.get_json()["id"]
        store(database_url, made[key], graded_as)
    return {"ids": ids, "subs": made, "clients": clients, "tokens": tokens, "users": user_ids, "api": api,
            "app": site}


# ------------------------------------------------------------------ who reads a submission

SUBMISSION_PAGES = ("/submissions/{}", "/submissions/{}/status", "/submissions/{}/source.py")


def test_staff_of_one_course_read_no_other_courses_work_and_no_free_work_by_id(world):
    """Tess is A's TA and a student of B; Ivy is A's instructor. Ada (A's student) also
    submitted to B and to the free catalogue: none of that is A's work."""
    subs = world["subs"]
    for viewer in ("tess", "ivy"):
        client = world["clients"][viewer]
        for key in ("carl_b", "carl_free", "ada_b", "ada_free"):
            for page in SUBMISSION_PAGES:
                assert client.get(page.format(subs[key])).status_code == 404, (viewer, key, page)
        for student in ("carl", "ada"):
            listed = client.get(f"/instructor/submissions?student={student}").get_data(as_text=True)
            assert not {subs["carl_b"], subs["carl_free"], subs["ada_b"], subs["ada_free"]} & set(
                word for word in listed.replace('"', " ").replace("/", " ").split()), (viewer, student)
        assert client.get(f"/submissions/{subs['ada_held']}").status_code == 200  # A's own work: theirs to read
    # A classmate; B's instructor asking for A's work and free work; a student of B asking for a classmate's.
    for viewer, keys_ in (("bob", ("ada_held", "ada_free", "carl_b")), ("olga", ("ada_held", "ada_free", "bob_held")),
                          ("carl", ("ada_b", "ada_held", "ada_free"))):
        for key in keys_:
            for page in SUBMISSION_PAGES:
                assert world["clients"][viewer].get(page.format(subs[key])).status_code == 404, (viewer, key)


def test_the_courses_own_lists_hold_none_of_its_members_other_work(world):
    """A's gradebook (per submission) and similar submissions list A's assignment's work
    alone, not what its students did for B or in the free catalogue."""
    subs, ids, ivy = world["subs"], world["ids"], world["clients"]["ivy"]
    others = {subs[key] for key in ("ada_b", "ada_free", "carl_b", "carl_free")}
    for page in (f"/courses/{ids['a']}/gradebook.csv?per=submission", f"/assignments/{ids['held']}/similarity"):
        text = ivy.get(page).get_data(as_text=True)
        assert subs["ada_held"] in text and subs["bob_held"] in text, page
        assert not [sub for sub in others if sub in text], page


def test_staff_of_one_course_change_nothing_in_another(world):
    shown = world["ids"]["shown"]
    for viewer, refused in (("ivy", 404), ("tess", 403)):
        client = world["clients"][viewer]
        mine = f"/assignments/{world['ids']['held']}"
        token = _form_token(client, mine)
        for action, data in (("regrades", {}), ("overrides", {"student": str(world["users"]["carl"]), "score": "0",
                                                               "reason": "x"}),
                             ("extensions", {"student": str(world["users"]["carl"]), "extra_attempts": "9",
                                             "reason": "x"})):
            answer = client.post(f"/assignments/{shown}/{action}", data={**data, "csrf_token": token})
            assert answer.status_code == refused, (viewer, action)
    olga = world["clients"]["olga"].get(f"/courses/{world['ids']['b']}/gradebook").get_data(as_text=True)
    assert "extension" not in olga and "set by hand" not in olga


def test_staff_pages_of_another_courses_assignment_are_refused(world, database_url):
    """Analytics, similar submissions (the list and a pair), the gradebook in each form and
    a regrade of B, asked by A's instructor (not in B) and A's TA (a student of B)."""
    with db.transaction(database_url) as s:
        regrade = Regrade(assignment_id=world["ids"]["shown"], version=1, status="published", decided_at=now())
        s.add(regrade)
        s.flush()
        s.add(RegradeGrade(regrade_id=regrade.id, submission_id=world["subs"]["carl_b"], status="graded", score=6.0,
                           max_score=6.0, old_version=1, old_score=3.0, old_max_score=6.0))
        regrade_id = regrade.id
    b, shown, subs = world["ids"]["b"], world["ids"]["shown"], world["subs"]
    pages = (f"/assignments/{shown}/analytics", f"/assignments/{shown}/similarity",
             f"/assignments/{shown}/similarity/{subs['carl_b']}/{subs['ada_b']}", f"/courses/{b}/gradebook",
             f"/courses/{b}/gradebook.csv", f"/courses/{b}/gradebook.csv?per=submission", f"/regrades/{regrade_id}")
    for page in pages:
        assert world["clients"]["ivy"].get(page).status_code == 404, page
        refused = world["clients"]["tess"].get(page)
        assert refused.status_code in (403, 404), page
        assert "carl@example.org" not in refused.get_data(as_text=True)
    assert world["clients"]["olga"].get(pages[0]).status_code == 200  # B's own staff are let in


def test_a_similarity_pair_takes_only_its_own_assignments_submissions(world):
    held, subs, ivy = world["ids"]["held"], world["subs"], world["clients"]["ivy"]
    for other in ("carl_b", "ada_free", "ada_b", "carl_free"):
        for pair in ((subs["ada_held"], subs[other]), (subs[other], subs["bob_held"])):
            answer = ivy.get(f"/assignments/{held}/similarity/{pair[0]}/{pair[1]}")
            assert answer.status_code == 404, other
            assert MARK not in answer.get_data(as_text=True)
    assert ivy.get(f"/assignments/{held}/similarity/{subs['ada_held']}/{subs['ada_held']}").status_code == 404
    assert ivy.get(f"/assignments/{held}/similarity/{subs['ada_held']}/{subs['bob_held']}").status_code == 200
    olga = world["clients"]["olga"]  # B's instructor, through B's own assignment, asking for A's work
    assert olga.get(f"/assignments/{world['ids']['shown']}/similarity/{subs['carl_b']}/{subs['ada_held']}"
                    ).status_code == 404


def test_the_editor_opens_no_one_elses_code(world):
    """?from=<submission id> opens a submission's code in the editor: the viewer's own only."""
    subs, ids = world["subs"], world["ids"]
    asks = (("ivy", "/exercises/autograd-basics?from={}", "ada_free"),
            ("tess", "/exercises/autograd-basics?from={}", "ada_b"),
            ("bob", f"/assignments/{ids['held']}?from={{}}", "ada_held"),
            ("carl", f"/assignments/{ids['shown']}?from={{}}", "ada_b"),
            ("olga", f"/assignments/{ids['shown']}?from={{}}", "ada_free"),
            ("admin", "/exercises/autograd-basics?from={}", "ada_free"))
    for viewer, page, key in asks:
        answer = world["clients"][viewer].get(page.format(subs[key]))
        assert answer.status_code == 200 and MARK not in answer.get_data(as_text=True), (viewer, key)


def test_practice_runs_are_their_students_alone(world, make_key):
    api, ids = world["api"], world["ids"]
    started = api.post("/api/v1/submissions", json={"assignment": ids["held"], "source": GOOD + MARK + "\n",
                                                    "practice": True}, headers=bearer(world["tokens"]["ada"]))
    assert started.status_code == 202, started.get_json()
    run_id = started.get_json()["id"]
    for viewer in ("ivy", "tess", "admin", "bob", "olga"):
        for page in (f"/practice/{run_id}", f"/practice/{run_id}/status"):
            assert world["clients"][viewer].get(page).status_code == 404, (viewer, page)
    for viewer in ("ivy", "tess", "admin", "bob"):
        assert api.get(f"/api/v1/practice-runs/{run_id}", headers=bearer(world["tokens"][viewer])).status_code == 404
    _, tenant = make_key()
    assert api.get(f"/api/v1/practice-runs/{run_id}", headers=tenant).status_code == 404
    assert api.get(f"/api/v1/practice-runs/{run_id}", headers=bearer(world["tokens"]["ada"])).status_code == 200
    assert world["clients"]["ada"].get(f"/practice/{run_id}").status_code == 200


def test_personal_tokens_of_staff_and_administrators_read_only_their_owners_work(world):
    api, ids, subs = world["api"], world["ids"], world["subs"]
    for viewer in ("ivy", "tess", "admin", "olga"):
        key = bearer(world["tokens"][viewer])
        for sub in subs.values():
            answer = api.get(f"/api/v1/submissions/{sub}", headers=key)
            assert answer.status_code == 404 and answer.get_json()["error"]["code"] == "submission_not_found"
        for path in (f"/api/v1/courses/{ids['a']}/gradebook", f"/api/v1/assignments/{ids['held']}/analytics",
                     f"/api/v1/assignments/{ids['held']}/similarity", f"/api/v1/courses/{ids['a']}"):
            answer = api.get(path, headers=key)
            assert answer.status_code == 403 and answer.get_json()["error"]["code"] == "insufficient_scope", path
        refused = api.post(f"/api/v1/assignments/{ids['held']}/overrides", headers=key,
                           json={"user": "ada@example.org", "score": 6, "reason": "x"})
        assert refused.status_code == 403
    listed = api.get("/api/v1/assignments", headers=bearer(world["tokens"]["ivy"])).get_json()["assignments"]
    assert all(a["attempts_used"] == 0 and a["counted_score"] is None for a in listed)  # Ivy's own standing


def test_an_api_key_reads_only_what_it_made_and_reaches_no_course_of_the_site(world, make_key):
    api, subs, ids = world["api"], world["subs"], world["ids"]
    (_, mine), (_, other) = make_key(), make_key()
    made = api.post("/api/v1/submissions", json={"exercise": "autograd-basics", "user": "ada@example.org",
                                                 "source": GOOD}, headers=mine)
    assert made.status_code == 202
    assert api.get(made.get_json()["url"], headers=mine).status_code == 200
    assert api.get(made.get_json()["url"], headers=other).status_code == 404
    for sub in subs.values():
        assert api.get(f"/api/v1/submissions/{sub}", headers=mine).status_code == 404
    refused = api.post("/api/v1/submissions", json={"assignment": ids["held"], "user": "ada@example.org",
                                                    "source": GOOD}, headers=mine)
    assert refused.status_code == 404 and refused.get_json()["error"]["code"] == "assignment_not_found"
    assert api.get("/api/v1/assignments", headers=mine).get_json()["assignments"] == []
    # The key's "ada@example.org" is a user of its own, not the site's Ada: her work stays hers.
    assert world["clients"]["ada"].get(f"/submissions/{made.get_json()['id']}").status_code == 404


def test_a_demoted_ta_loses_the_courses_work_and_a_removed_student_keeps_it_held(world, database_url):
    subs, ids = world["subs"], world["ids"]
    with db.transaction(database_url) as s:
        courses.set_role(s, ids["a"], world["users"]["tess"], "student")
        s.execute(delete(CourseMember).where(CourseMember.course_id == ids["a"],
                                             CourseMember.user_id == world["users"]["ada"]))
    tess, ada, ivy = world["clients"]["tess"], world["clients"]["ada"], world["clients"]["ivy"]
    for page in SUBMISSION_PAGES:
        assert tess.get(page.format(subs["ada_held"])).status_code == 404
    assert tess.get("/instructor/submissions").status_code in (403, 404)
    assert tess.get(f"/assignments/{ids['held']}/analytics").status_code == 403
    with clock.travel(BEFORE):
        page = ada.get(f"/submissions/{subs['ada_held']}").get_data(as_text=True)
        body = world["api"].get(f"/api/v1/submissions/{subs['ada_held']}",
                                headers=bearer(world["tokens"]["ada"])).get_json()
        assert ada.get(f"/courses/{ids['a']}").status_code == 404
        assert FULL in ivy.get(f"/submissions/{subs['ada_held']}").get_data(as_text=True)  # still A's work
    assert FULL not in page and not any(name in page for name in HIDDEN_EN)
    assert body["score"] is None and body["feedback_held_until"].startswith("2099-01-01")


def test_staff_of_one_lms_course_do_not_read_work_made_through_another(world, database_url):
    with db.transaction(database_url) as s:
        platform = LtiPlatform(issuer="https://lms.example", client_id="c", auth_login_url="https://lms.example/a",
                               auth_token_url="https://lms.example/t", jwks_url="https://lms.example/j")
        s.add(platform)
        s.flush()
        x = Course(platform_id=platform.id, context_id="ctx-x", title="LMS X", code="X1")
        y = Course(platform_id=platform.id, context_id="ctx-y", title="LMS Y", code="Y1")
        s.add_all([x, y])
        s.flush()
        sam = User(external_id=f"lti:{platform.id}|sam", name="Sam", role="student")
        s.add(sam)
        s.flush()
        for course, staff in ((x, "ivy"), (y, "olga")):
            courses.set_role(s, course.id, world["users"][staff], "instructor")
            courses.set_role(s, course.id, sam.id, "student")
            courses.place(s, course.id, "autograd-basics")
        sam_id, x_id, y_id = sam.id, x.id, y.id

    def sent(via_course):  # what Sam submits from the exercise's page, opened by a course's link
        return courses.take(lambda: db.transaction(database_url), who=lambda s: s.get(User, sam_id),
                            target=lambda s: "autograd-basics", source=GOOD, via_course=via_course).id

    through_y = sent(y_id)
    assert world["clients"]["olga"].get(f"/submissions/{through_y}").status_code == 200
    assert world["clients"]["ivy"].get(f"/submissions/{through_y}").status_code == 404
    # Naming a course does not make work that course's: not an LMS course of Sam's platform,
    # or no course at all, and no staff but the administrators see it.
    for named in (world["ids"]["a"], None, 2**31 + 5):
        free = sent(named)
        assert {world["clients"][who].get(f"/submissions/{free}").status_code for who in ("ivy", "olga")} == {404}
    assert sent(x_id) and world["clients"]["ivy"].get(f"/submissions/{sent(x_id)}").status_code == 200


def test_an_lms_courses_members_come_from_no_roster_file_and_no_invitation(world, database_url):
    with db.transaction(database_url) as s:
        platform = LtiPlatform(issuer="https://lms.example", client_id="c", auth_login_url="https://lms.example/a",
                               auth_token_url="https://lms.example/t", jwks_url="https://lms.example/j")
        s.add(platform)
        s.flush()
        lms = Course(platform_id=platform.id, context_id="ctx", title="LMS", code="L1")
        s.add(lms)
        s.flush()
        courses.set_role(s, lms.id, world["users"]["ivy"], "instructor")
        lms_id = lms.id
    ivy, path = world["clients"]["ivy"], f"/courses/{lms_id}"
    page = ivy.get(path).get_data(as_text=True)
    upload = ivy.post(f"{path}/members", content_type="multipart/form-data", data={
        "roster": (io.BytesIO(b"email,name,role\nbob@example.org,Bob,student\ncarl@example.org,C,ta\n"), "r.csv"),
        "csrf_token": csrf_in(page)})
    assert upload.status_code == 422 and "come from the LMS" in upload.get_data(as_text=True)
    invited = ivy.post(f"{path}/invitations", data={"role": "student", "days": "7", "csrf_token": csrf_in(page)})
    assert invited.status_code in (403, 409, 422) and "/join/" not in invited.get_data(as_text=True)
    admin = world["clients"]["admin"]
    by_admin = admin.post(f"{path}/members", data={"roster_text": "email,name,role\nbob@example.org,Bob,student\n",
                                                   "csrf_token": _form_token(admin, path)})
    assert by_admin.status_code == 422
    with db.transaction(database_url) as s:
        members = s.scalar(select(func.count()).select_from(CourseMember).where(CourseMember.course_id == lms_id))
        assert members == 1 and s.scalar(select(func.count()).select_from(Invitation)) == 0


# ------------------------------------------------------------------ what a held student learns

def _held_surfaces(world) -> dict[str, str]:
    """Everything Ada is shown of her held work, as text."""
    ada, api, subs, ids = world["clients"]["ada"], world["api"], world["subs"], world["ids"]
    key = bearer(world["tokens"]["ada"])
    seen = {page: ada.get(page).get_data(as_text=True) for page in (
        f"/submissions/{subs['ada_held']}", f"/submissions/{subs['ada_held']}/status", "/submissions",
        f"/assignments/{ids['held']}", f"/courses/{ids['a']}", "/exercises/autograd-basics", "/courses", "/exercises")}
    seen["api"] = api.get(f"/api/v1/submissions/{subs['ada_held']}", headers=key).get_data(as_text=True)
    seen["api list"] = json.dumps([a for a in api.get("/api/v1/assignments", headers=key).get_json()["assignments"]
                                   if a["id"] == ids["held"]], ensure_ascii=False)
    return seen


def test_held_results_leak_on_no_surface_before_the_due_date(world):
    ada = world["clients"]["ada"]
    with clock.travel(BEFORE):
        english = _held_surfaces(world)
        ada.post("/language", data={"lang": "ko", "next": "/submissions", "csrf_token": _form_token(ada, "/exercises")})
        korean = _held_surfaces(world)
    for surfaces, names in ((english, HIDDEN_EN), (korean, HIDDEN_KO)):
        for where, text in surfaces.items():
            assert FULL not in text, where
            assert not [name for name in names if name in text], where
    status = json.loads(english[f"/submissions/{world['subs']['ada_held']}/status"])
    assert (status["score"], status["max_score"]) == (None, None)
    body = json.loads(english["api"])
    assert (body["score"], body["max_score"], body["counted_score"], body["counted_max_score"]) == (None,) * 4
    report = body["report"]
    assert (report["score"], report["max_score"], report["duration_ms"]) == (None, None, None)
    assert [t["visible"] for t in report["tests"]] == [True]
    assert json.loads(english["api list"])[0]["counted_score"] is None
    with clock.travel(AFTER):  # the needles find what is released
        after = ada.get(f"/submissions/{world['subs']['ada_held']}").get_data(as_text=True)
    assert "6 / 6" in after and HIDDEN_KO[0] in after


def test_an_extension_holds_the_results_until_the_students_own_due_date(world):
    ivy, ids, subs = world["clients"]["ivy"], world["ids"], world["subs"]
    path = f"/assignments/{ids['held']}"
    granted = ivy.post(f"{path}/extensions", data={"student": str(world["users"]["ada"]), "due_at": "2099-01-03T09:00",
                                                  "reason": "ill", "csrf_token": _form_token(ivy, path)})
    assert granted.status_code == 303  # 09:00 in Seoul: 2099-01-03 00:00 UTC
    with clock.travel(DUE + timedelta(days=1)):
        surfaces = _held_surfaces(world)
        bob = world["clients"]["bob"].get(f"/submissions/{subs['bob_held']}").get_data(as_text=True)
    assert "Score: 6 / 6" in bob  # the others' due date has passed
    for where, text in surfaces.items():
        assert FULL not in text and not [n for n in HIDDEN_EN if n in text], where
    assert json.loads(surfaces["api"])["feedback_held_until"].startswith("2099-01-03T00:00")
    with clock.travel(datetime(2099, 1, 3, 0, 1, tzinfo=timezone.utc)):
        assert "Score: 6 / 6" in world["clients"]["ada"].get(f"/submissions/{subs['ada_held']}").get_data(as_text=True)


def test_a_score_set_by_hand_is_held_with_the_rest(world):
    ivy, ids = world["clients"]["ivy"], world["ids"]
    path = f"/assignments/{ids['held']}"
    set_ = ivy.post(f"{path}/overrides", data={"student": str(world["users"]["ada"]), "score": "5.5",
                                              "reason": "partial credit", "csrf_token": _form_token(ivy, path)})
    assert set_.status_code == 303
    with clock.travel(BEFORE):
        surfaces = _held_surfaces(world)
    for where, text in surfaces.items():
        assert "5.5" not in text and "partial credit" not in text, where
    with clock.travel(AFTER):
        assert "5.5 / 6" in world["clients"]["ada"].get(path).get_data(as_text=True)


def test_a_regrade_note_does_not_tell_a_held_student_whether_their_score_changed(world, database_url):
    with db.transaction(database_url) as s:
        regrade = Regrade(assignment_id=world["ids"]["held"], version=1, status="published",
                          decided_at=DUE - timedelta(days=2))
        s.add(regrade)
        s.flush()
        for key, old in (("ada_held", 4.0), ("bob_held", 6.0)):  # Ada's score changed, Bob's did not
            s.add(RegradeGrade(regrade_id=regrade.id, submission_id=world["subs"][key], status="graded", score=6.0,
                               max_score=6.0, old_version=1, old_score=old, old_max_score=6.0))
    path = f"/assignments/{world['ids']['held']}"
    with clock.travel(BEFORE):
        ada = world["clients"]["ada"].get(path).get_data(as_text=True)
        bob = world["clients"]["bob"].get(path).get_data(as_text=True)
    assert "went from" not in ada and "went from" not in bob  # no scores: what the core promises
    assert ("was regraded" in ada) == ("was regraded" in bob)


def test_a_failure_only_a_hidden_test_causes_is_held_with_its_results(world, database_url):
    api, key = world["api"], bearer(world["tokens"]["ada"])
    made = api.post("/api/v1/submissions", json={"assignment": world["ids"]["held"], "source": PROBE}, headers=key)
    assert made.status_code == 202
    probe = made.get_json()["id"]
    assert store(database_url, probe, PROBE)["status"] == "memory_limit"  # only the hidden 7-element test
    with clock.travel(BEFORE):
        page = world["clients"]["ada"].get(f"/submissions/{probe}").get_data(as_text=True)
        probed = api.get(f"/api/v1/submissions/{probe}", headers=key).get_json()
        plain = api.get(f"/api/v1/submissions/{world['subs']['ada_held']}", headers=key).get_json()
    assert probed["feedback_held_until"] and [t["passed"] for t in probed["report"]["tests"]] == [True]
    assert (probed["report"]["status"], probed["report"]["message"]) == \
        (plain["report"]["status"], plain["report"]["message"])
    assert MEMORY not in page


def test_the_free_catalogue_does_not_show_what_a_held_assignment_holds(world, database_url):
    ada = world["clients"]["ada"]
    with clock.travel(BEFORE):
        sent = ada.post("/exercises/autograd-basics/submissions", content_type="multipart/form-data", data={
            "source": GOOD + MARK + "\n", "csrf_token": _form_token(ada, "/exercises/autograd-basics")})
    if sent.status_code != 303:
        return  # refused while the assignment holds: nothing to read
    free = sent.location.rsplit("/", 1)[1]
    store(database_url, free, GOOD)
    with clock.travel(BEFORE):
        page = ada.get(f"/submissions/{free}").get_data(as_text=True)
    assert FULL not in page and not [name for name in HIDDEN_EN if name in page]


# ------------------------------------------------------------------ taking a source

@pytest.fixture
def one_try(world, database_url):
    """An assignment of A with one attempt and a 30-minute cool-down; its id."""
    with db.transaction(database_url) as s:
        assignment = courses.create_assignment(s, s.get(Course, world["ids"]["a"]), exercise="autograd-basics",
                                               due_at=DUE.isoformat(), attempts=1, cooldown_minutes=30)
        return assignment.id


def _stored_for(database_url, assignment_id: int) -> int:
    with db.transaction(database_url) as s:
        return s.scalar(select(func.count()).select_from(Submission).where(Submission.assignment_id == assignment_id)) \
            + s.scalar(select(func.count()).select_from(PracticeRun).where(PracticeRun.assignment_id == assignment_id))


# Sources Python itself will not run, each with the code and line the refusal must name.
REFUSED = {
    "bom in the middle": ("x = 1\n\ufeffy = 2\n", "syntax_error", 2),
    "two boms": ("\ufeff\ufeffx = 1\n", "syntax_error", 1),
    "nul": ("x = 1\n\x00\n", "source_invalid", None),
    "line separator": ("x = 1\u2028y = 2\n", "syntax_error", 1),
    "next line": ("def f():\n    return 1\x85", "syntax_error", 2),
    "tabs after spaces": ("if x:\n        pass\n\tpass\n", "syntax_error", 3),
    "lone cr then tab": ("if x:\r\n\tpass\r        pass\n", "syntax_error", 3),
    "cr cr lf": ("x = 1\r\r\ny = (\r\n", "syntax_error", 3),
    "crs only": ("def f(x):\r    return (\r        x +\r", "syntax_error", 2),
    "form feed in a line": ("x = 1 \x0c+\n", "syntax_error", 1),
    "braces": ("from __future__ import braces\n", "syntax_error", 1),
    "nonlocal at module level": ("nonlocal x\n", "syntax_error", 1),
    "repeated argument": ("def f(a, a):\n    pass\n", "syntax_error", 1),
    "unknown future": ("from __future__ import telepathy\n", "syntax_error", 1),
    "lone surrogate": ("x = '\ud800'\n", "source_not_utf8", None),
}


def test_a_source_python_will_not_run_is_refused_before_anything_is_stored(world, database_url, one_try, redis):
    api, key, ada = world["api"], bearer(world["tokens"]["ada"]), world["clients"]["ada"]
    path, queued = f"/assignments/{one_try}", redis.llen("cpu")  # the world's own submissions
    for name, (source, code, line) in REFUSED.items():
        for practice in (False, True):
            body = {"assignment": one_try, "source": source, **({"practice": True} if practice else {})}
            answer = api.post("/api/v1/submissions", json=body, headers=key)
            error = answer.get_json()["error"]
            assert (answer.status_code, error["code"]) == (422, code), (name, practice, error)
            assert error.get("line") == line, (name, error)
        if "\ud800" not in source:
            form = ada.post(f"{path}/submissions", content_type="multipart/form-data",
                            data={"source": source, "csrf_token": _form_token(ada, path)})
            assert form.status_code == 422, name
            assert code != "syntax_error" or "no attempt was used" in form.get_data(as_text=True), name
            upload = ada.post(f"{path}/submissions", content_type="multipart/form-data", data={
                "file": (io.BytesIO(source.encode("utf-8")), "work.py"), "csrf_token": _form_token(ada, path)})
            assert upload.status_code == 422, name
    assert _stored_for(database_url, one_try) == 0 and redis.llen("cpu") == queued
    taken = api.post("/api/v1/submissions", json={"assignment": one_try, "source": GOOD}, headers=key)
    assert taken.status_code == 202  # the one attempt is whole and no cool-down started


def test_line_ends_and_a_leading_bom_are_stored_as_lf_and_form_feeds_as_sent(world, database_url, one_try):
    source = "\ufeffimport torch\r\r\n\x0cdef grad_2xtx(x):\r    y = 2 * torch.dot(x, x)\r\n    y.backward()\r" \
             "    return x.grad\n"
    made = world["api"].post("/api/v1/submissions", json={"assignment": one_try, "source": source},
                             headers=bearer(world["tokens"]["ada"]))
    assert made.status_code == 202
    with db.transaction(database_url) as s:
        stored = s.get(Submission, made.get_json()["id"]).source
    assert stored == ("import torch\n\n\x0cdef grad_2xtx(x):\n    y = 2 * torch.dot(x, x)\n    y.backward()\n"
                      "    return x.grad\n")
    assert store(database_url, made.get_json()["id"], stored)["score"] == 6.0  # the grader runs it as stored


NESTED = {
    "open parentheses": "(" * 262_000,
    "unary minus": "x = " + "-" * 262_000 + "1",
    "not": "x = " + "not " * 65_000 + "y",
    "lambdas": "x = " + "lambda: " * 32_000 + "1",
    "additions": "x = a" + " + a" * 65_000,
    "attributes": "x = a" + ".b" * 130_000,
    "calls": "x = f" + "()" * 130_000,
    "subscripts": "x = a" + "[0]" * 87_000,
    "powers": "x = 2" + " ** 2" * 52_000,
    "indentation": "".join(" " * i + "if x:\n" for i in range(150)) + " " * 150 + "pass\n",
    "f-strings": "x = " + "f'{" * 200 + "1" + "}'" * 200,
    "digits": "x = " + "9" * 262_000,
}


def test_a_deeply_nested_source_is_refused_at_once(world, database_url, one_try):
    # Every shape against one world (building it is most of the cost): a refusal stores
    # nothing, and the count is checked after each shape, so each is held to the same account.
    for shape, source in NESTED.items():
        started = time.monotonic()
        answer = world["api"].post("/api/v1/submissions", json={"assignment": one_try, "source": source},
                                   headers=bearer(world["tokens"]["ada"]))
        took = time.monotonic() - started
        assert answer.status_code == 422 and answer.get_json()["error"]["code"] == "syntax_error", \
            (shape, answer.get_json())
        assert took < 5, (shape, took)
        assert _stored_for(database_url, one_try) == 0, shape


# Sources the host's parse takes and Python will not compile: each spends the attempt and
# is graded as an exception in every test.
NOT_COMPILED = {
    "return at module level": "return 1\n",
    "break outside a loop": "import torch\nbreak\n",
    "yield at module level": "yield 1\n",
    "await outside async": "import torch\n\ndef grad_2xtx(x):\n    await x\n",
    "starred target alone": "*a = [1]\n",
    "late future import": "import torch\nfrom __future__ import annotations\n",
    "return in a class": "class A:\n    return 1\n",
    "async comprehension": "def grad_2xtx(x):\n    return [i async for i in x]\n",
}


def test_a_source_python_will_not_compile_spends_no_attempt(world, database_url, one_try):
    # One world for every shape, the one attempt still unspent after each (see above).
    for shape, source in NOT_COMPILED.items():
        answer = world["api"].post("/api/v1/submissions", json={"assignment": one_try, "source": source},
                                   headers=bearer(world["tokens"]["ada"]))
        assert answer.status_code == 422 and answer.get_json()["error"]["code"] == "syntax_error", \
            (shape, answer.get_json())
        assert _stored_for(database_url, one_try) == 0, shape


COOKIES = {
    "unknown encoding": "# -*- coding: no-such-codec -*-\nimport torch\n",
    "ascii with non-ascii": "# coding: ascii\nimport torch  # é\n",
    "utf-16": "# vim: set fileencoding=utf-16 :\nimport torch\n",
}


def test_a_coding_declaration_python_refuses_is_refused(world, database_url, one_try):
    for shape, source in COOKIES.items():  # one world for every shape (see above)
        answer = world["api"].post("/api/v1/submissions", json={"assignment": one_try, "source": source},
                                   headers=bearer(world["tokens"]["ada"]))
        assert answer.status_code == 422, (shape, answer.get_json())
        assert _stored_for(database_url, one_try) == 0, shape


# Shown (and compared for similarity, and checked for blocked functions) as a function that
# returns zeros; Python decodes the file as UTF-7 and runs the comment's hidden lines.
HIDDEN_IN_A_COMMENT = """# coding: utf-7
import torch


def grad_2xtx(x):  # +AAo-    y = 2 * torch.dot(x, x)+AAo-    y.backward()+AAo-    return x.grad
    return torch.zeros_like(x)
"""


def test_the_code_graded_is_the_code_shown(world, database_url):
    made = world["api"].post("/api/v1/submissions", json={"exercise": "autograd-basics",
                                                          "source": HIDDEN_IN_A_COMMENT},
                             headers=bearer(world["tokens"]["carl"]))
    if made.status_code == 422:
        return  # refused: nothing runs but what is shown
    assert made.status_code == 202
    with db.transaction(database_url) as s:
        stored = s.get(Submission, made.get_json()["id"]).source
    assert store(database_url, made.get_json()["id"], stored)["score"] == 0.0  # what returning zeros earns
