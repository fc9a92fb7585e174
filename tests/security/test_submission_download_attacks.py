"""Who may take a class's work home: an assignment's submissions as a zip, and one
student's submissions listed, are the course's staff's alone (and the API key that runs
the course). A student of the course, staff of another course, a stranger's account, another
tenant's key, a key without grades:read and anyone's personal token are refused, and
what refuses them names no student."""

from __future__ import annotations

from grader import db
from grader.accounts import keys
from tests.test_submission_downloads import desk, signed_in  # noqa: F401  (desk is a fixture)

STUDENTS = ("ada@uni.edu", "bo@uni.edu", "kim@uni.edu", "Lovelace", "김민지")


def names_nobody(answer, but: tuple[str, ...] = ()) -> bool:
    """Whether the answer is no zip and names no student (``but``: the viewer's own name,
    which the page's header shows them)."""
    text = answer.get_data(as_text=True)
    return not any(student in text for student in STUDENTS if student not in but) and not answer.data.startswith(b"PK")


def test_a_student_of_the_course_takes_neither_the_zip_nor_a_classmates_list(app, desk):
    ada = signed_in(app, "ada@uni.edu")
    ids, assignment = desk["users"], desk["assignment"]
    for path in (f"/assignments/{assignment}/submissions.zip", f"/assignments/{assignment}/students/{ids['bo']}",
                 f"/assignments/{assignment}/students/{ids['ada']}"):
        answer = ada.get(path)
        assert answer.status_code == 403 and names_nobody(answer, but=("ada@uni.edu", "Lovelace")), path


def test_staff_of_another_course_and_strangers_find_nothing(app, desk, database_url):
    ids, assignment = desk["users"], desk["assignment"]
    with db.transaction(database_url) as s:
        from grader.accounts import users

        users.create_user(s, email="eve@uni.edu", password="correct horse", name="Eve")
    for email in ("tom@uni.edu", "otto@uni.edu", "eve@uni.edu"):  # CV200's TA and instructor; in no course
        client = signed_in(app, email)
        for path in (f"/assignments/{assignment}/submissions.zip", f"/assignments/{assignment}/students/{ids['ada']}"):
            answer = client.get(path)
            assert answer.status_code == 404 and names_nobody(answer), (email, path)
    anonymous = app.test_client().get(f"/assignments/{assignment}/submissions.zip")
    assert anonymous.status_code == 302 and "/login" in anonymous.headers["Location"]


def test_the_staffs_own_list_holds_only_members_of_the_course(app, desk):
    """The student page of someone outside the course (Tom, CV200's TA) is not found, even
    for DL101's instructor."""
    prof = signed_in(app, "prof@uni.edu")
    assert prof.get(f"/assignments/{desk['assignment']}/students/{desk['users']['tom']}").status_code == 404
    assert prof.get(f"/assignments/{desk['assignment']}/students/{2**40}").status_code == 404


def test_another_tenants_key_a_key_without_grades_read_and_personal_tokens_are_refused(app, desk, database_url):
    with db.transaction(database_url) as s:
        other = keys.create(s, ["grades:read", "courses:read"], name="another school")[1]
        narrow = keys.create(s, ["courses:read", "submissions:read"], name="lms")[1]
        prof_id = desk["users"]["prof"]
        personal = keys.create(s, keys.PERSONAL_SCOPES, name="laptop", user_id=prof_id)[1]
    client, path = app.test_client(), f"/api/v1/assignments/{desk['assignment']}/submissions.zip"
    for secret, status, code in ((other, 404, "assignment_not_found"), (narrow, 403, "insufficient_scope"),
                                 (personal, 403, "insufficient_scope")):
        answer = client.get(path, headers={"Authorization": f"Bearer {secret}"})
        assert answer.status_code == status and answer.get_json()["error"]["code"] == code, secret
        assert names_nobody(answer)
    assert client.get(path).status_code == 401
    assert client.get(path, headers={"Authorization": f"Bearer {desk['key']}"}).data.startswith(b"PK")
