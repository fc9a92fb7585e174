"""The notebook client (client/ in this repository) against the running service: installed
from the wheel the service serves into a virtual environment of its own (so nothing of the
project can leak into it), given a student's personal token, grading through a real worker."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from grader.web import client
from tests.live import serve, shared_worker, stop
from tests.test_notebooks import MISTYPED, SOLUTION
from tests.test_practice import WRONG
from tests.test_tokens import new_token
from tests.test_web import ada, site  # noqa: F401  (fixtures)

ROOT = Path(__file__).resolve().parent.parent

on_sqlite = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # the API's own tests run both


@pytest.fixture
def service(site, database_url, redis, tmp_path, monkeypatch):
    """The site over HTTP and a worker grading its queue."""
    monkeypatch.setenv("GRADER_DATABASE_URL", database_url)
    worker = shared_worker(tmp_path)
    with serve(site) as url:
        yield url
    stop(worker)


@pytest.fixture
def installed(service, tmp_path) -> Path:
    """A fresh virtual environment with the client installed from the service's own wheel."""
    venv = tmp_path / "venv"
    # Without a pip of its own (bootstrapping one took 4 s of CPU): ours installs into it.
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    wheel = f"{service}/client/{client.wheel()[0]}"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-index",
                    "--disable-pip-version-check", wheel], check=True)
    return python


def run_client(python: Path, service: str, key: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {"PATH": os.environ["PATH"], "GRADER_URL": service, "GRADER_TOKEN": key, "HOME": str(cwd)}
    return subprocess.run([str(python), "-m", "grader_client", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


@on_sqlite
def test_a_student_checks_and_submits_a_notebook_from_the_client(service, installed, ada, tmp_path):
    key = new_token(ada)
    (tmp_path / "work.ipynb").write_text(json.dumps(SOLUTION))  # magics, shell commands, a skipped cell
    checked = run_client(installed, service, key, "check", "autograd-basics", "work.ipynb", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "Visible tests: 2 / 2 · a practice run" in checked.stdout and "1 of 1 tests passed" in checked.stdout
    submitted = run_client(installed, service, key, "submit", "autograd-basics", "work.ipynb", cwd=tmp_path)
    assert submitted.returncode == 0, submitted.stdout + submitted.stderr
    assert "Score: 6 / 6" in submitted.stdout
    # It counted: the student's own page shows it.
    assert "6 / 6" in ada.get("/submissions").get_data(as_text=True)


@on_sqlite
def test_a_wrong_answer_prints_failures_first_with_the_hint_and_exits_non_zero(service, installed, ada,
                                                                              tmp_path):
    key = new_token(ada)
    (tmp_path / "wrong.py").write_text(WRONG)
    result = run_client(installed, service, key, "submit", "autograd-basics", "wrong.py", cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[1].startswith("Score: 0 / 6") and "failures first" in lines[2]
    assert lines[3].startswith("✗") and "Hint:" in result.stdout


@on_sqlite
def test_a_refusal_says_why_in_words(service, installed, ada, tmp_path):
    key = new_token(ada)
    (tmp_path / "empty.py").write_text("   \n")
    result = run_client(installed, service, key, "submit", "autograd-basics", "empty.py", cwd=tmp_path)
    assert result.returncode == 1 and result.stderr.startswith("grader: ") and "empty" in result.stderr
    (tmp_path / "mistyped.ipynb").write_text(json.dumps(MISTYPED))  # the API's words, as they are
    mistyped = run_client(installed, service, key, "submit", "autograd-basics", "mistyped.ipynb", cwd=tmp_path)
    assert (mistyped.returncode, mistyped.stderr) == (1, "grader: syntax error in cell 3, line 2, column 15: "
                                                         "invalid syntax\n")
    revoked = run_client(installed, service, "gk_000000000000_" + "0" * 43, "check", "autograd-basics",
                         "empty.py", cwd=tmp_path)
    assert revoked.returncode == 1 and "Tokens page" in revoked.stderr


def test_the_client_needs_nothing_but_the_standard_library():
    """-S: no site-packages at all, so an import of anything else would fail here."""
    probe = subprocess.run([sys.executable, "-S", "-c", "import sys; sys.path.insert(0, 'client'); "
                            "import grader_client; print(grader_client.__version__)"],
                           cwd=ROOT, capture_output=True, text=True)
    assert probe.returncode == 0, probe.stderr
    assert 'dependencies = []' in (ROOT / "client" / "pyproject.toml").read_text()


def test_the_client_sends_its_token_to_the_grader_it_connected_to_only():
    sys.path.insert(0, str(ROOT / "client"))
    try:
        import grader_client
    finally:
        sys.path.remove(str(ROOT / "client"))
    grader_client.connect("https://grader.example.edu", token="gk_000000000000_" + "0" * 43)
    with pytest.raises(grader_client.GraderError, match="not followed"):
        grader_client._request("GET", "https://elsewhere.example.org/api/v1/submissions/x")
    with pytest.raises(grader_client.GraderError, match="not followed"):
        grader_client._request("GET", "http://grader.example.edu/api/v1/submissions/x")  # not even downgraded


def _client_module():
    sys.path.insert(0, str(ROOT / "client"))
    try:
        import grader_client
    finally:
        sys.path.remove(str(ROOT / "client"))
    return grader_client


@on_sqlite
def test_the_client_names_an_assignment_by_course_code_and_title_and_no_attempt_left_is_final(
        site, ada, database_url):
    from grader import courses, db
    from grader.accounts.models import User
    from grader.submissions.models import Submission
    from sqlalchemy import select
    with db.transaction(database_url) as s:
        student = s.scalar(select(User).where(User.email == "ada@example.org"))
        course = courses.create_course(s, title="Deep learning", code="DL101")
        courses.set_role(s, course.id, student.id, "student")
        assignment = courses.create_assignment(s, course, exercise="autograd-basics", title="Your first gradient",
                                               due_at="2099-01-01T00:00+00:00", attempts=1, cooldown_minutes=5)
        assignment_id = assignment.id
    key = new_token(ada)
    grader = _client_module()
    with serve(site) as url:
        grader.connect(url, token=key)
        [listed] = grader.assignments(show=False)
        assert (listed["course"]["code"], listed["title"], listed["attempts_left"]) == ("DL101", "Your first gradient", 1)
        accepted = grader.submit("dl101/your first gradient", source=SOLUTION_SOURCE, wait=False)
        with pytest.raises(grader.GraderError) as unknown:
            grader.submit("DL101/Nothing of that name", source=SOLUTION_SOURCE, wait=False)
        with pytest.raises(grader.GraderError) as spent:
            grader.submit(assignment_id, source=SOLUTION_SOURCE, wait=False)
    with db.transaction(database_url) as s:
        assert s.get(Submission, accepted["id"]).assignment_id == assignment_id
    assert "DL101/Your first gradient" in str(unknown.value) and unknown.value.code == "assignment_not_found"
    assert spent.value.code == "no_attempts_left" and "try again" not in str(spent.value)


SOLUTION_SOURCE = "def grad_2xtx(x):\n    return 4 * x\n"


def test_the_clients_report_says_late_with_the_penalty_and_the_score_that_counts():
    grader = _client_module()
    text = grader.report_text({"status": "graded", "exercise": "autograd-basics", "exercise_version": 1,
                               "score": 6.0, "max_score": 6.0, "late": True, "late_penalty_percent": 20.0,
                               "counted_score": 4.8, "counted_max_score": 6.0, "report": {"tests": []}})
    assert "Score: 6 / 6" in text and "LATE: this submission loses 20% of its score (4.8 / 6 after the penalty)" in text
    assert "Score that counts now on the assignment: 4.8 / 6" in text
