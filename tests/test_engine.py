"""grade(exercise, source) on the autograd-basics exercise, end to end through the sandbox."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from grader import catalog
from grader.cli import main
from grader.engine import SandboxUnavailable, grade, grading
from grader.engine.sandbox import Sandbox

ROOT = Path(__file__).resolve().parent.parent
BASICS = ROOT / "exercises" / "autograd-basics"
SOLUTION = (BASICS / "solution.py").read_text()


def exercise_folder(tmp_path: Path, slug: str, tests: str) -> str:
    """An exercise of one function ``f``, its hidden suite ``tests`` (tests/test_<slug>.py)."""
    bundle = tmp_path / slug
    (bundle / "tests").mkdir(parents=True)
    (bundle / "exercise.toml").write_text(f'slug = "{slug}"\nversion = 1\ntitle = {{en = "t"}}\nfunctions = ["f"]\n')
    for name in ("README.md", "starter.py", "solution.py"):
        (bundle / name).write_text("")
    (bundle / "tests" / f"test_{slug}.py").write_text(tests)
    return str(bundle)


def test_reference_solution_scores_full_marks_with_every_report_field():
    report = grade("autograd-basics", SOLUTION)
    assert report.status == "graded" and report.sandbox == "bubblewrap"
    assert report.score == report.max_score == 6
    data = json.loads(report.to_json())
    assert {"exercise", "version", "status", "score", "max_score", "duration_ms", "tests", "output"} <= set(data)
    assert {"id", "name", "visible", "passed", "points", "max_points", "message", "hint",
            "duration_ms"} <= set(data["tests"][0])
    assert any(t["visible"] for t in data["tests"]) and any(not t["visible"] for t in data["tests"])


def test_grading_loads_no_torch_in_the_worker():
    """The worker checks and relays the tensors of every call as their bytes: a cold
    `grader grade` leaves torch's import (seconds of CPU) to the two sandboxes alone."""
    code = ("import sys\nfrom grader.engine import grade\n"
            "report = grade('autograd-basics', open(sys.argv[1]).read())\n"
            "print(report.score, report.max_score, 'torch' in sys.modules)")
    solution = catalog.find("autograd-basics").file("solution.py")
    run = subprocess.run([sys.executable, "-c", code, str(solution)], capture_output=True, text=True, check=True)
    assert run.stdout.split() == ["6.0", "6.0", "False"]


def test_the_same_submission_always_gets_the_same_report():
    mutant = (BASICS / "mutants" / "backward_twice.py").read_text()
    assert grade("autograd-basics", mutant).without_timings() == grade("autograd-basics", mutant).without_timings()


def test_a_known_wrong_gradient_gets_the_hint_that_names_the_misconception():
    report = grade("autograd-basics", (BASICS / "mutants" / "backward_twice.py").read_text())
    visible = next(t for t in report.tests if t.visible)
    assert not visible.passed
    assert "accumulate" in visible.hint
    assert "expected shape (3,)" in visible.message and "got" in visible.message
    assert "누적" in visible.i18n["ko"]["hint"]


def test_student_exceptions_show_the_students_traceback_only_in_visible_tests():
    source = "def grad_2xtx(x):\n    raise ValueError('secret ' + repr(x.tolist()))\n"
    report = grade("autograd-basics", source)
    visible = next(t for t in report.tests if t.visible)
    hidden = [t for t in report.tests if not t.visible]
    assert 'File "submission.py", line 2, in grad_2xtx' in visible.message
    assert "ValueError: secret" in visible.message
    assert "grader" not in visible.message and "site-packages" not in visible.message
    for test in hidden:
        # The message and the line could carry hidden inputs, so hidden tests show only its type.
        assert "secret" not in test.message and "line" not in test.message
        assert test.message.endswith("grad_2xtx(): ValueError")


def test_printed_output_is_reported_only_from_visible_tests():
    source = SOLUTION.replace("    y.backward()", "    print('input', x.tolist())\n    y.backward()")
    report = grade("autograd-basics", source)
    assert report.score == report.max_score
    assert report.output == "input [1.0, 2.0, 3.0]\n"


@pytest.mark.parametrize("source, status, words", [
    ("def grad_2xtx(x:\n    pass\n", "syntax_error", "line 1"),
    ("   \n", "submission_error", "empty"),
    (b"def f():\n    return '\xff'\n", "submission_error", "UTF-8"),
    ("x = 1\n" * 50_000, "submission_error", "limit"),
])
def test_submissions_that_cannot_run_say_why_and_score_zero(source, status, words):
    report = grade("autograd-basics", source)
    assert report.status == status and words in report.message
    assert report.score == 0 and report.max_score == 6


def test_progress_is_reported_test_by_test():
    seen = []
    grade("autograd-basics", SOLUTION, on_progress=lambda done, total: seen.append((done, total)))
    assert seen == [(0, 4), (1, 4), (2, 4), (3, 4), (4, 4)]


def test_a_practice_run_runs_the_visible_tests_alone_and_counts_only_them():
    seen = []
    report = grade("autograd-basics", SOLUTION, visible_only=True, on_progress=lambda d, t: seen.append((d, t)))
    assert report.status == "graded" and report.tests and all(t.visible for t in report.tests)
    assert report.max_score == sum(t.max_points for t in report.tests) < 6
    assert seen[0] == (0, len(report.tests))  # the total is known from the start, and is theirs


def test_a_practice_run_of_an_exercise_without_visible_tests_runs_nothing(tmp_path):
    bundle = exercise_folder(tmp_path, "quiet", "def test_hidden(student):\n    assert student.call('f') == 1\n")
    report = grade(bundle, "def f():\n    return 1\n", visible_only=True)
    assert (report.status, report.tests, report.max_score) == ("graded", [], 0)
    assert len(grade(bundle, "def f():\n    return 1\n").tests) == 1  # graded in full, it has its test


def test_grading_refuses_without_bubblewrap_and_names_the_fix(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SandboxUnavailable, match="apt-get install bubblewrap"):
        Sandbox().start()


def test_unsafe_development_mode_says_so_in_every_report(monkeypatch):
    monkeypatch.setenv("GRADER_UNSAFE_NO_SANDBOX", "1")
    monkeypatch.setattr("grader.engine.grading._pool", {})
    try:
        report = grade("autograd-basics", SOLUTION)
    finally:
        grading.shutdown()
    assert report.sandbox == "none"
    assert any("UNSAFE" in w for w in report.warnings)
    assert "UNSAFE" in report.render()


def test_an_exercise_folder_path_works_like_its_slug():
    assert grade(str(BASICS), SOLUTION).score == 6
    assert catalog.find(str(BASICS)).slug == "autograd-basics"


def test_command_line_prints_json_and_exits_by_score(tmp_path):
    wrong = tmp_path / "wrong.py"
    wrong.write_text((BASICS / "mutants" / "forgot_factor.py").read_text())
    run = subprocess.run([sys.executable, "-m", "grader.cli", "grade", "autograd-basics", str(wrong), "--json"],
                         capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 1, run.stderr
    data = json.loads(run.stdout)
    assert data["score"] == 0 and data["exercise"] == "autograd-basics"
    # The other exit status through the same command, in this process: a second process
    # would start both sandboxes cold again to show what the one above already shows.
    text = CliRunner().invoke(main, ["grade", "autograd-basics", str(BASICS / "solution.py"), "--lang", "ko"])
    assert text.exit_code == 0 and "6/6점" in text.stdout, text.output  # a Korean report has no English words


def test_a_known_student_error_can_carry_the_hint_that_explains_it(tmp_path):
    bundle = exercise_folder(tmp_path, "twice",
        "import torch\n"
        "from grader.testing import Hint, hints_for_errors, visible\n"
        "@visible\n"
        "def test_backward_twice(student):\n"
        "    with hints_for_errors({'second time': Hint('use retain_graph=True', 'retain_graph=True')}):\n"
        "        student.call('f', torch.ones(2, requires_grad=True))\n")
    source = "def f(x):\n    y = (x * x).sum()\n    y.backward()\n    y.backward()\n"
    test = grade(bundle, source).tests[0]
    assert not test.passed and test.hint == "use retain_graph=True"
    assert "RuntimeError" in test.message and "line 4" in test.message


def test_a_value_of_the_wrong_kind_read_by_a_test_is_the_students_mistake_not_the_exercises(tmp_path):
    # Tests that read what f returned without checking its kind first, as an exercise may.
    bundle = exercise_folder(tmp_path, "reads",
        "import torch\n"
        "from grader.testing import visible\n"
        "@visible\n"
        "def test_unpacks_a_pair(student):\n"
        "    g1, g2 = student.call('f', torch.ones(2, requires_grad=True)).value\n"
        "    assert g1 is not None\n"
        "def test_reads_a_key(student):\n"
        "    assert student.call('f', torch.ones(2, requires_grad=True)).value['loss'] is not None\n"
        "def test_reads_the_gradient(student):\n"
        "    call = student.call('f', torch.ones(2, requires_grad=True))\n"
        "    assert call.args[0].grad.data is not None\n")
    for returns, shown in (("(x, x, x)", "3 values, where 2 are expected"), ("None", "cannot unpack"),
                           ("1.5", "cannot unpack")):
        report = grade(bundle, f"def f(x):\n    return {returns}\n")
        assert report.status == "graded" and report.score == 0, report.render()
        assert not any("exercise's own tests" in w for w in report.warnings), report.render()
        assert not any("not your mistake" in (t.message or "") for t in report.tests), report.render()
        unpacks = next(t for t in report.tests if t.visible)
        assert unpacks.message.startswith("f() returned ") and shown in unpacks.message, unpacks.message
    report = grade(bundle, "def f(x):\n    (2 * x @ x).backward()\n    return {'loss': 1.0}\n")
    assert [t.passed for t in report.tests] == [False, True, True], report.render()  # a dict of 1 key: no pair


def test_the_worker_holds_a_large_argument_once_each_way(tmp_path):
    """A 16 MiB tensor from the exercise's test to the student's function and back: the
    worker reads each frame into one buffer and relays its tensors from there, so what it
    allocates during the grade is the call's frame and the reply's, not copies of them."""
    import tracemalloc
    size = 16 << 20
    bundle = exercise_folder(tmp_path, "large",
        "import torch\n"
        "def test_sums(student):\n"
        f"    x = torch.arange({size // 4}, dtype=torch.float32)\n"
        "    call = student.call('f', x)\n"
        "    assert call.value.data.item() == x[-1].item() and torch.equal(call.args[0].data, x)\n")
    source = "def f(x):\n    return x[-1:].clone()\n"
    assert grade(bundle, source).score == 1  # the sandboxes start, outside the count
    tracemalloc.start()
    try:
        report = grade(bundle, source)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert report.score == 1, report.render()
    assert peak < 2.5 * size, f"{peak / size:.1f} times the argument"
