"""A report rendered in Korean is Korean throughout: no English word outside code.

Every Korean text a report can carry is checked where it is written: each exercise's test
names, messages and hints (``Hint(en, ko)``, ``(en, ko)`` pairs, ``ko:`` docstring lines),
the grader's own feedback through the message catalogue, and the report's own labels.
tests/test_near_miss_hints.py renders graded reports in Korean as well, value-mismatch
messages included; tests/test_korean_failures.py, the reports of grades that are not simply
graded (refusals, limits, the grader's own failures). What counts as code is
tests/korean_words.py's to say.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from grader.report_text import render
from grader.settings import settings
from grader.testing.feedback import _catalogue
from tests.korean_words import code_names, english_words

ROOT = Path(__file__).resolve().parent.parent
HANGUL = re.compile("[\uac00-\ud7a3]")
EXERCISES = sorted(p for p in Path(settings().exercises_dir).iterdir() if (p / "tests").is_dir())
TEMPLATE = ROOT / "grader" / "authoring" / "template"


def korean_texts(test_file: Path):
    """(line, text) of each string of the file with Korean in it; of a docstring, its ko: line."""
    for node in ast.walk(ast.parse(test_file.read_text())):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and HANGUL.search(node.value):
            text = node.value
            yield node.lineno, text.split("ko:", 1)[1] if "ko:" in text else text


@pytest.mark.parametrize("folder", EXERCISES + [TEMPLATE], ids=lambda p: p.name)
def test_each_exercises_korean_texts_have_no_english_words(folder):
    allowed = code_names(folder)
    found = [(f"{path.name}:{line}", words, text[:80])
             for path in sorted((folder / "tests").glob("*.py"))
             for line, text in korean_texts(path)
             for words in [english_words(text, allowed)] if words]
    assert not found, found


def graders_own_words() -> list[tuple[str, str]]:
    """(where, msgid) of every text the exercise sandbox's code translates with _()."""
    found = []
    for path in sorted((ROOT / "grader" / "testing").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "_" \
                    and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                found.append((f"{path.name}:{node.lineno}", node.args[0].value))
    return found


def test_the_graders_own_feedback_is_korean_in_the_catalogue():
    korean = _catalogue("ko")
    assert len(graders_own_words()) > 30
    untranslated = [(where, msgid) for where, msgid in graders_own_words() if korean.gettext(msgid) == msgid]
    english = [(where, words, korean.gettext(msgid)[:80]) for where, msgid in graders_own_words()
               for words in [english_words(korean.gettext(msgid))] if words]
    assert not untranslated and not english, (untranslated, english)


def test_a_report_rendered_in_korean_has_korean_labels():
    report = {
        "exercise": "autograd-basics", "version": 1, "status": "graded", "score": 1, "max_score": 3,
        "duration_ms": 120, "device": "cpu", "warnings": [], "message": None, "output": "4\n",
        "output_truncated": True,
        "tests": [
            {"name": "returns 4x", "visible": True, "passed": True, "points": 1, "max_points": 1,
             "i18n": {"ko": {"name": "4x를 반환"}}},
            {"name": "x.grad holds 4x", "visible": False, "passed": False, "points": 0, "max_points": 2,
             "message": None, "hint": "Gradients accumulate",
             "i18n": {"ko": {"name": "x.grad에 4x가 들어 있음", "hint": "기울기는 누적됩니다"}}},
        ],
    }
    text = render(report, "ko").replace("autograd-basics", "")
    assert not english_words(text), text
    assert "통과 4x를 반환" in text and "실패 x.grad에 4x가 들어 있음 (숨김)" in text and "힌트: 기울기는" in text
    assert render(report).startswith("autograd-basics v1: 1/3 points  [graded")  # English as before
