"""Fixtures shared by the project's tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader import catalog
from grader.engine.grading import grade
from grader.engine.report import Report

TESTS = Path(__file__).resolve().parent

# Fixture exercises hold hidden suites (they need the grader's `student` fixture) and
# tests/attacks/ holds hostile submissions: data to grade, never tests to collect here.
collect_ignore = ["fixtures", "attacks"]


@pytest.fixture(scope="session")
def target() -> catalog.Exercise:
    """The attack-target exercise: autograd-basics' contract with short limits."""
    return catalog.load(TESTS / "fixtures" / "exercises" / "attack-target")


@pytest.fixture(scope="session")
def grade_file(target):
    """Grade a submission file (against the attack target unless told otherwise)."""

    def grade_file(path: str | Path, exercise: catalog.Exercise | None = None) -> Report:
        return grade(exercise or target, Path(path).read_text(encoding="utf-8"))

    return grade_file
