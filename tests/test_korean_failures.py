"""A grade that is not simply graded reads in Korean too: its status, its message, its
warnings, and what its tests' messages quote of a refusal or of what stopped a call.

Each outcome is produced for real where a grade costs little: against a copy of
autograd-basics with short limits (a time or memory limit then costs a second or two) and,
for a blocked API, against jacobian. What would need a broken sandbox or grader is built
from the engine's own words (grader.engine.words), as grading.py and the exercise sandbox
use them. The report is rendered as the grader's command and the submissions zip show it
(grader.report_text), and once as the submission page shows it.

English stays where it is the student's or Python's: their code, their exception's message,
the frames of its traceback, the parser's reason for a syntax error. The English message
itself stays as it was: API clients and logs read it.
"""

from __future__ import annotations

import ast
import html
import re
import shutil
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import pytest

from grader import catalog, db
from grader.catalog import CatalogError
from grader.courses.visibility import Seen, held_report
from grader.engine import grading, words
from grader.protocol import CallOutcome
from grader.protocol import report as report_format
from grader.protocol.report import Report
from grader.settings import MAX_SOURCE_BYTES, settings
from grader.source import SourceError
from grader.submissions import notebooks
from grader.submissions.models import Submission
from grader.testing.feedback import StudentError, _catalogue
from tests.forms import token
from tests.korean_words import code_names, english_words
from tests.test_notebooks import MALFORMED, upload
from tests.test_web import ada, site, submit  # noqa: F401 - the page's fixtures

ROOT = Path(__file__).resolve().parent.parent
EXERCISES = Path(settings().exercises_dir)
ATTACKS = Path(__file__).resolve().parent / "attacks"
BASICS_NAMES = code_names(EXERCISES / "autograd-basics")
FORMATS = {"JSON", "Jupyter", "nbformat"}  # the names of formats and of a product, said as they are
# Python's own lines in a traceback: `File "submission.py", line 3, in grad_2xtx`.
_FRAME = re.compile(r'File "submission\.py", line \d+(?: \([^)]*\))?, in \S+')


def _basics(folder, call_seconds: int, submission_seconds: int) -> catalog.Bundle:
    shutil.copytree(EXERCISES / "autograd-basics", folder)
    toml = folder / "exercise.toml"
    toml.write_text(toml.read_text().replace("call_seconds = 5", f"call_seconds = {call_seconds}")
                    .replace("submission_seconds = 30", f"submission_seconds = {submission_seconds}\nmemory_mb = 256"))
    return catalog.load(folder)


@pytest.fixture(scope="module")
def basics(tmp_path_factory) -> catalog.Bundle:
    """autograd-basics (its tests have Korean names) with limits a second or two long: an
    endless loop reaches both time limits soon."""
    return _basics(tmp_path_factory.mktemp("short") / "autograd-basics", 1, 2)


@pytest.fixture(scope="module")
def roomy(tmp_path_factory) -> catalog.Bundle:
    """The same with its own time limits and a small memory limit: every other outcome is
    reached however loaded the machine is, never a time limit first."""
    return _basics(tmp_path_factory.mktemp("roomy") / "autograd-basics", 5, 30)


def english_left(text: str, source: str | bytes = "", quoted: tuple[str, ...] = (), names=BASICS_NAMES) -> list:
    """The English words of a Korean text, less what is the student's or Python's: the
    frames of a traceback, the lines of the student's code, and ``quoted`` (their
    exception's message, the parser's reason)."""
    source = source.decode("utf-8", "replace") if isinstance(source, bytes) else source
    for words_of_theirs in sorted(quoted, key=len, reverse=True):
        text = text.replace(words_of_theirs, " ")
    lines = {line.strip() for line in source.splitlines() if line.strip()}
    kept = [line for line in (_FRAME.sub(" ", raw) for raw in text.splitlines()) if line.strip() not in lines]
    return [(line, found) for line in kept for found in [english_words(line, names)] if found]


def korean_report(report: Report, slug: str) -> str:
    return report.render("ko").replace(slug, "")


EXITS = "import os\n\ndef grad_2xtx(x):\n    os._exit(3)\n"
SEGFAULT = "import ctypes\n\ndef grad_2xtx(x):\n    return ctypes.string_at(0)\n"

# name: (source, the report's status, its English message or None, what of it is the student's or Python's)
OUTCOMES = {
    "syntax_error": ("def grad_2xtx(x)\n    return 4 * x\n", "syntax_error",
                     "syntax error in submission.py, line 1, column 17: expected ':'", ("expected ':'",)),
    "nested_too_deeply": ("x = " + "-" * 100000 + "1\n", "syntax_error", None, ()),
    "empty": ("  \n", "submission_error", "the source is empty", ()),
    "nul": ("x = '\x00'\n", "submission_error", "the source contains a NUL character", ()),
    "not_utf8": (b"x = '\xff'\n", "submission_error", "the source is not UTF-8 text (byte 5)", ()),
    "too_large": ("x = 1\n" + "#" * MAX_SOURCE_BYTES + "\n", "submission_error", None, ()),
    "encoding": ("# coding: latin-1\ndef grad_2xtx(x):\n    return 4 * x\n", "submission_error",
                 "line 1 declares the encoding 'latin-1'; the source is read as UTF-8 only", ()),
    "missing_function": ("def gradient(x):\n    return 4 * x\n", "graded", None, ()),
    "exception": ("def grad_2xtx(x):\n    raise ValueError('shapes do not match for this input')\n", "graded", None,
                  ("shapes do not match for this input",)),
    "exception_at_import": ("raise RuntimeError('cannot start without its data file')\n", "graded", None,
                            ("cannot start without its data file",)),
    "exit": (EXITS, "graded", None, ()),
    "crash": (SEGFAULT, "graded", None, ()),
    "unencodable": ("def grad_2xtx(x):\n    return object()\n", "graded", None, ()),
    "result_too_large": ((ATTACKS / "flood_result_pipe.py").read_text(), "graded", None, ()),
    "malformed": ((ATTACKS / "result_without_arguments.py").read_text(), "graded", None, ()),
    "time_limit": ((ATTACKS / "endless_loop.py").read_text(), "time_limit", "a call ran out of time", ()),
    "memory_limit": ((ATTACKS / "memory_bomb.py").read_text(), "memory_limit", "a call ran out of memory", ()),
}


@pytest.fixture(scope="module")
def graded(basics, roomy):
    """The report of each of OUTCOMES, graded once."""
    reports: dict[str, Report] = {}

    def graded(name: str) -> Report:
        if name not in reports:
            reports[name] = grading.grade(basics if name == "time_limit" else roomy, OUTCOMES[name][0])
        return reports[name]

    return graded


@pytest.mark.parametrize("name", OUTCOMES)
def test_each_way_a_grade_ends_reads_in_korean(basics, graded, name):
    source, status, english, quoted = OUTCOMES[name]
    report = graded(name)
    assert report.status == status, report.render()
    if english is not None:
        assert report.message == english  # the English as it always was
    text = korean_report(report, basics.slug)
    assert not english_left(text, source, quoted), text
    shown = [t.i18n.get("ko", {}).get("message") for t in report.tests if not t.passed]
    assert shown and all(shown), text  # every failed test's message has its Korean


def test_the_whole_submissions_time_limit_and_each_calls_are_said_in_korean(graded):
    report = graded("time_limit")
    said = "\n".join(t.i18n["ko"]["message"] for t in report.tests)
    assert "호출당 1초" in said and "제출물 전체에 주어진 2초" in said, said
    english = "\n".join(t.message for t in report.tests if t.visible)
    assert "time limit exceeded (1 s per call)" in english


@pytest.mark.parametrize("line", [
    "from torch.func import jacrev",
    "from torch._functorch.eager_transforms import jacrev",  # the same function under another name
])
def test_a_blocked_api_is_refused_in_korean_with_the_line_that_uses_it(line):
    exercise = catalog.load(EXERCISES / "jacobian")
    source = f"import torch\n{line}\n" + exercise.read("solution.py")
    report = grading.grade(exercise, source)
    assert report.status == "submission_error"
    assert report.message.startswith("torch.func is not available in this exercise: line 2 of submission.py uses")
    korean = report.i18n["ko"]["message"]
    assert korean.startswith("이 문제에서는 torch.func을(를) 쓸 수 없습니다. submission.py 2행에서") and line in korean
    text = korean_report(report, exercise.slug)
    assert not english_left(text, source, names=code_names(exercise.path)), text


def test_the_graders_own_failures_read_in_korean(basics, monkeypatch):
    """No GPU where the exercise needs one, an exercise that cannot be read, the unsafe
    development mode: each through grade() itself, none running any code."""
    monkeypatch.setattr(grading, "device_for", lambda exercise: "missing")
    monkeypatch.setattr(grading, "load_settings", lambda: replace(settings(), sandbox="none"))
    report = grading.grade(basics, "def grad_2xtx(x):\n    return 4 * x\n")
    assert report.status == "sandbox_error" and report.message == words.NO_GPU.en
    assert report.warnings[0].startswith("UNSAFE development mode")
    assert not english_left(korean_report(report, basics.slug)), korean_report(report, basics.slug)

    def unreadable(self):
        raise CatalogError("probes.py cannot be read")

    monkeypatch.setattr(grading, "device_for", lambda exercise: "cpu")
    monkeypatch.setattr(type(basics), "probes", property(unreadable))
    report = grading.grade(basics, "def grad_2xtx(x):\n    return 4 * x\n")
    assert (report.status, report.message) == ("internal_error", "probes.py cannot be read")
    assert not english_left(korean_report(report, basics.slug)), korean_report(report, basics.slug)


def test_what_no_cheap_grade_produces_reads_in_korean_as_the_engine_writes_it():
    """A sandbox or the exercise's suite failing, a suite that errored, and the details of
    calls stopped in ways only a broken sandbox or a CPU-bound child reach."""
    report = Report("autograd-basics", 1, "graded", 0, 2, 0)
    report.warn(words.tests_errored(["tests/test_basics.py::test_twice: KeyError"]))
    failures = [("exercise", "the exercise's tests did not finish within 60 s"),
                ("sandbox", "the exercise sandbox failed (pipe closed)")]
    tests = []
    for n, (kind, detail) in enumerate([("timeout", "CPU time limit exceeded (0.7 s per call)"),
                                        ("sandbox", "the sandbox failed during the call (broken pipe)"),
                                        ("malformed", "your code sent back something that is not a result (bad tag)"),
                                        ("memory", "memory limit exceeded (1024 MiB per call)")]):
        said = words.call_detail(CallOutcome(kind, detail=detail)).said()
        assert said.en == detail  # the English the outcome always had
        error = StudentError(kind, "grad_2xtx", said)
        for visible, text in ((True, error.shown(True)), (False, error.shown(False))):
            tests.append(report_format.TestResult(f"t::test_{n}_{visible}", f"test {n}", visible, False, 0, 1,
                                                  message=text.en,
                                                  i18n={"ko": {"name": f"테스트 {n}", "message": text.ko}}))
    report.tests = tests
    for kind, message in failures:
        status = "sandbox_error" if kind == "sandbox" else "internal_error"
        report.explain(status, words.failed(status, message))
        assert report.message == message
        text = korean_report(report.escaped(), "autograd-basics")
        assert not english_left(text), text


def test_the_engines_and_the_notebooks_own_words_are_korean_in_the_catalogue():
    """Every text grader.engine and grader.submissions.notebooks mark with _() has its
    Korean, with the English's placeholders, and no English word left in (grader.testing's:
    tests/test_korean_reports.py)."""
    korean, found = _catalogue("ko"), []
    for path in sorted((ROOT / "grader" / "engine").glob("*.py")) + [ROOT / "grader" / "submissions" / "notebooks.py"]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "_" \
                    and node.args and isinstance(node.args[0], ast.Constant):
                found.append((f"{path.name}:{node.lineno}", node.args[0].value))
    assert len(found) > 40
    placeholder = re.compile(r"\{\w+\}|%\(\w+\)[sd]")
    missing = [(where, msgid) for where, msgid in found if korean.gettext(msgid) == msgid]
    placeholders = [(where, msgid) for where, msgid in found
                    if sorted(placeholder.findall(msgid)) != sorted(placeholder.findall(korean.gettext(msgid)))]
    # A placeholder stands for a value: `{mib}MiB` reads `256MiB`.
    english = [(where, words_left) for where, msgid in found
               for words_left in [english_words(placeholder.sub("0", korean.gettext(msgid)), FORMATS)] if words_left]
    assert not missing and not placeholders and not english, (missing, placeholders, english)


def test_a_held_report_keeps_only_the_korean_message_it_may_show():
    held = Seen(held_until=datetime(2030, 1, 1, tzinfo=timezone.utc), score=None, max_score=None, tests=[],
                hidden_held=1, visible_points=(0, 0), assignment=None, course=None, late=None)
    i18n = {"ko": {"message": "제출한 코드가 비어 있습니다", "warnings": ["경고"]}}
    refused = {"status": "submission_error", "message": "the source is empty", "warnings": ["w"], "i18n": i18n,
               "tests": []}
    assert held_report(refused, held)["i18n"] == {"ko": {"message": "제출한 코드가 비어 있습니다"}}
    limit = {**refused, "status": "time_limit", "message": "a call ran out of time"}
    assert held_report(limit, held)["i18n"] == {}  # a limit may have been a hidden test's


def test_the_submission_page_shows_a_limit_reached_in_korean(ada, database_url, graded):  # noqa: F811
    source = OUTCOMES["memory_limit"][0]
    location = submit(ada, source).location
    report = graded("memory_limit")
    with db.transaction(database_url) as session:
        row = session.get(Submission, location.rsplit("/", 1)[1])
        row.status, row.finished_at = "graded", db.now()
        row.score, row.max_score, row.report = report.score, report.max_score, report.to_dict()
    ada.post("/language", data={"lang": "ko", "next": location, "csrf_token": token(ada, "/exercises")})
    page = ada.get(location).get_data(as_text=True)
    said = [html.unescape(re.sub(r"<[^>]+>", "", block))
            for block in re.findall(r'<pre class="(?:output|message)"[^>]*>(.*?)</pre>', page, re.S)]
    assert said[0] == report.i18n["ko"]["message"] == "함수 호출 하나가 메모리 제한을 넘었습니다"
    assert len(said) == 1 + len(report.tests)
    assert not english_left("\n".join(said), source), said


def test_a_notebook_that_cannot_be_read_is_refused_in_korean(ada):  # noqa: F811
    """A notebook is refused before any grade, as the page says; why, it says in Korean."""
    unreadable = [name for name, (_raw, code, _says) in MALFORMED.items() if code == "notebook_invalid"]
    ada.post("/language", data={"lang": "ko", "next": "/exercises", "csrf_token": token(ada, "/exercises")})
    for name in unreadable:
        raw = MALFORMED[name][0]
        with pytest.raises(SourceError) as refused:
            notebooks.convert(raw)
        # What Python's JSON reader and nbformat's validator say stays theirs, quoted.
        theirs = tuple(str(v) for k, v in refused.value.why_values.items() if k in ("error", "where", "problem"))
        response = upload(ada, raw)
        assert response.status_code == 422, name
        [said] = re.findall(r'<p class="error" role="alert" id="submit-error">(.*?)</p>',
                            response.get_data(as_text=True), re.S)
        said = html.unescape(said)
        assert said.startswith("노트북을 채점할 수 없습니다: "), said
        assert not english_left(said, quoted=theirs, names=FORMATS), (name, said)
