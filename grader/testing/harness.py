"""Runs an exercise's hidden pytest suite, inside the exercise sandbox.

The verdict of each test is what pytest's own hooks report here; nothing the
student sandbox prints is parsed. Student code is reached only through the channel,
which the ``student`` fixture of ``grader.testing`` wraps.
"""

from __future__ import annotations

import contextlib
import os
import traceback
from pathlib import Path
from typing import Callable

import pytest
from _pytest import config as pytest_config

from grader.protocol.report import TestResult, coarse_ms
from grader.testing import api
from grader.testing.api import misread
from grader.testing.feedback import Text, revealed
from grader.protocol import SuiteRun

# Plugins a hidden suite never needs; each costs time on every grade.
_UNUSED_PLUGINS = ("terminal", "cacheprovider", "doctest", "junitxml", "pastebin", "stepwise",
                   "legacypath", "warnings", "unraisableexception", "threadexception", "logging",
                   "faulthandler", "debugging", "setuponly", "setupplan")


class _Collector:
    """A pytest plugin object: hands out the channel, records verdicts, reports progress."""

    def __init__(self, channel, on_progress: Callable[[int, int], None] | None, visible_only: bool = False,
                 bundle: Path | None = None, start: Callable[[], bool] | None = None):
        self.channel = channel
        self.bundle = bundle  # the exercise's folder: its files' errors may be the student's (misread)
        self.on_progress = on_progress
        self.visible_only = visible_only
        self.start = start
        self.total = 0
        self.phases: dict[str, dict] = {}
        self.items: dict[str, pytest.Item] = {}
        self.run = SuiteRun()

    @pytest.fixture
    def _grader_channel(self):
        return self.channel

    def pytest_configure(self, config):
        # What a failure says is read from its exception, never from pytest's report of it:
        # the native style spares formatting a long one (which parses every file it names).
        config.option.tbstyle = "native"

    @pytest.hookimpl(trylast=True)  # after any other selection
    def pytest_collection_modifyitems(self, config, items):
        self.items = {item.nodeid: item for item in items}

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtestloop(self, session):
        # The tests are collected: only now does the grade itself have to be here.
        if self.start is not None:
            self.visible_only = self.start()
        if self.visible_only:  # a practice run: the tests whose full message the student sees anyway
            hidden = [item for item in session.items if item.get_closest_marker("visible") is None]
            session.items[:] = [item for item in session.items if item.get_closest_marker("visible") is not None]
            session.config.hook.pytest_deselected(items=hidden)
        self.total = len(session.items)
        # From here on pytest's report of a failure is read by no one (a test's verdict is
        # read from its exception): its one line, not a traceback formatted with the source
        # of each frame, which cost a failing test 2-3 ms. A collection error keeps its own.
        session.config.option.tbstyle = "value"
        if self.on_progress:
            self.on_progress(0, self.total)
        return (yield)

    def pytest_collectreport(self, report):
        if report.failed:
            self.run.error = f"the exercise's tests could not be collected: {report.longreprtext[-2000:]}"

    def pytest_runtest_setup(self, item):
        self.channel.visible = item.get_closest_marker("visible") is not None

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = yield
        self.phases.setdefault(item.nodeid, {})[call.when] = (report, call.excinfo)
        return report

    def pytest_runtest_logfinish(self, nodeid, location):
        item = self.items.get(nodeid)
        if item is None:
            return
        self.run.results.append(self._result(item, self.phases.get(nodeid, {})))
        if self.on_progress:
            self.on_progress(len(self.run.results), self.total)

    def _result(self, item: pytest.Item, phases: dict) -> TestResult:
        marker = item.get_closest_marker("points")
        max_points = float(marker.args[0]) if marker and marker.args else 1.0
        visible = item.get_closest_marker("visible") is not None
        passed = bool(phases) and all(rep.passed for rep, _ in phases.values())
        doc = (getattr(item, "function", None).__doc__ or "").strip() if hasattr(item, "function") else ""
        result = TestResult(
            id=item.nodeid, name=doc.splitlines()[0] if doc else item.name, visible=visible,
            passed=passed, points=max_points if passed else 0.0, max_points=max_points,
            duration_ms=coarse_ms(sum(rep.duration for rep, _ in phases.values())))
        for line in doc.splitlines()[1:]:
            # A docstring line "ko: ..." names the test in Korean.
            lang, sep, name = line.strip().partition(":")
            if sep and lang in ("ko",) and name.strip():
                result.i18n.setdefault(lang, {})["name"] = name.strip()
        if passed:
            return result
        excinfo = next((exc for rep, exc in phases.values() if rep.failed and exc is not None), None)
        exc = excinfo.value if excinfo is not None else None
        if self.bundle is not None:
            exc = misread(exc, self.bundle) or exc  # a wrong kind of value returned, read by the test
        message, hint, exercise_bug = revealed(exc, visible)
        marker = item.get_closest_marker("hint")
        hint = hint or (Text.of(marker.kwargs.get("en"), marker.kwargs.get("ko")) if marker else None)
        if exercise_bug:
            name = type(exc).__name__
            self.run.test_errors.append(f"{item.nodeid}: {name}")
            if len(self.run.logs) < 20:
                text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
                self.run.logs.append(f"test {item.nodeid} raised {name}:\n{text[-4000:]}")
        for field, text in (("message", message), ("hint", hint)):
            if text is not None:
                setattr(result, field, text.en)
                for lang, words in text.translations().items():
                    result.i18n.setdefault(lang, {})[field] = words
        return result


def prepare(root: Path, cwd: str):
    """pytest's configuration of a suite that will run in ``root``/tests from ``cwd``, made
    before the suite is there: its plugin manager with pytest's own plugins imported and
    registered, and their options declared (what ``pytest.main`` makes first, about 15 ms
    of each grade's CPU: bench/suite_stages.py). Nothing of the suite is read or run. A
    warm process makes it once, and each grade's child, a copy, uses its own copy once
    (``run_suite(..., prepared=...)``): pytest's own parse of the arguments, the suite's
    conftest files and every hook run there, as in a fresh ``pytest.main``."""
    with contextlib.chdir(cwd):  # pytest's invocation folder, as the run's own would be
        return pytest_config.get_config(_arguments(root), None)


def run_suite(root: Path, channel, on_progress=None, visible_only: bool = False,
              start: Callable[[], bool] | None = None, prepared=None) -> SuiteRun:
    """Run the suite in ``root``/tests (a bundle's folder) against ``channel``; with
    ``visible_only``, its visible tests alone (an exercise may have none).

    ``start``, where given, is called once the tests are collected, before the first one
    runs: it waits for the grade (readying ``channel``) and says whether ``visible_only``.
    So a suite is configured and collected before its submission exists.

    ``prepared``: what :func:`prepare` made for ``root``, used once, in place of the
    configuration ``pytest.main`` would make afresh."""
    collector = _Collector(channel, on_progress, visible_only, bundle=root, start=start)
    # The plugin as a module, not "-p grader.testing.api": a name makes pytest read every
    # installed distribution's entry points first, an eighth of a grade's own time.
    made = pytest_config.get_config
    if prepared is not None:
        pytest_config.get_config = lambda args, plugins: prepared
    try:
        code = pytest.main(_arguments(root), plugins=[collector, api])
    finally:
        pytest_config.get_config = made
    if collector.visible_only and not collector.run.results and collector.run.error is None \
            and code in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        return collector.run  # no visible test: nothing ran, and nothing went wrong
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED) and collector.run.error is None:
        collector.run.error = f"pytest stopped with exit code {int(code)}"
    if not collector.run.results and collector.run.error is None:
        collector.run.error = "the exercise has no tests"
    return collector.run


def _arguments(root: Path) -> list[str]:
    tests_dir = root / "tests"
    args = [str(tests_dir), "-s", "--assert=plain", "-c", os.devnull,
            "--rootdir", str(root), "--confcutdir", str(tests_dir),
            "--import-mode=importlib", "--disable-plugin-autoload",
            "-o", "python_files=test_*.py", "-o", "xfail_strict=false"]
    for plugin in _UNUSED_PLUGINS:
        args += ["-p", f"no:{plugin}"]
    return args
