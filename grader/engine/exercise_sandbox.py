"""The trusted side of the exercise sandbox: where an exercise's hidden tests run.

The worker holds the database and broker credentials, so it runs no exercise code: the
hidden tests, their helpers and the ``grader.testing`` plugin run in a sandbox of their
own (``grader/testing/warm.py``), with no network, no secrets, no database and a read-only copy
of the bundle's tests that arrives as data. This side sends the grade request, answers
the suite's calls by running them in the student sandbox, and checks everything the
suite sends back as hostile: every verdict, name and message is bounded and typed
before it becomes part of a report.
"""

from __future__ import annotations

import logging
import math
import os
import signal
import stat
import time
from pathlib import Path
from typing import Callable

from grader.bundle import Bundle
from grader.engine import uids, words
from grader.engine.bwrap import EXERCISE
from grader.inside import wire
from grader.protocol.report import LANGUAGES, TestResult, coarse_ms
from grader import protocol
from grader.protocol import CallOutcome, ProtocolError, SuiteRun
from grader.engine.warm_process import WarmProcess

log = logging.getLogger(__name__)

# The sandbox's processes together: the warm process (torch, pytest) and one suite.
EXERCISE_MEMORY_BYTES = 4 << 30
# Beyond the submission's own time: collecting the suite and the tests' own work.
SUITE_GRACE_SECONDS = 30
MAX_TESTS_BYTES = 16 << 20  # a bundle's tests/ folder, all files together
MAX_TEST_FILES = 500
MAX_RESULTS = 2000
MAX_TEXT = 20_000


class SuiteFailure(Exception):
    """The suite did not come to verdicts. ``kind`` is "exercise" (its own code failed:
    the exercise's fault) or "sandbox" (the sandbox failed before the exercise's code
    ran: ours); neither is ever the student's score."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind, self.message = kind, message


class Unprepared(wire.WireError):
    """The warm process had no child prepared for the grade's exercise; it read nothing of the grade."""


OnCall = Callable[[str, str, bool, list, dict], CallOutcome]


class ExerciseSandbox(WarmProcess):
    room = EXERCISE
    idle_memory_bytes = EXERCISE_MEMORY_BYTES
    _prepared: str | None = None  # the exercise the warm process's spare has collected
    _ooms_since_prepared = (0, 0)  # the cgroup's count of memory kills when it was given it

    @property
    def uid(self) -> int:
        # Two uids past the student sandbox's: neither room's processes can signal the other's.
        return uids.claim(self.config.sandbox_uid) + 2

    def run(self, bundle: Bundle, source: str, device: str, on_call: OnCall,
            on_progress: Callable[[int, int], None] | None = None, visible_only: bool = False) -> SuiteRun:
        """Run ``bundle``'s hidden suite against ``source`` (its visible tests alone with
        ``visible_only``); each call of the suite's goes to ``on_call``. Raises SuiteFailure
        when the suite comes to no verdicts."""
        listing, tests = tests_of(bundle)
        seconds = bundle.limits.submission_seconds + SUITE_GRACE_SECONDS
        exercise = {"probes": os.path.lexists(bundle.file("probes.py")),
                    "limits": {"cpu_seconds": seconds, "tmp_bytes": 256 << 20, "file_bytes": 64 << 20,
                               "processes": 64}}
        key = protocol.exercise_key(listing, tests, **exercise)
        self.start()
        deadline = time.monotonic() + seconds
        ooms = self.memory_mark()
        try:
            for again in (False, True):
                if self._prepared != key:
                    self._prepare(key, listing, tests, exercise, deadline)
                # Since its child was given the exercise: a kill while it collected is this grade's too.
                ooms, self._prepared = self._ooms_since_prepared, None  # the spare is this grade's now
                self.send({"op": "grade", "bundle": key},
                          *protocol.grade_parts(source, device=device, visible_only=visible_only), deadline=deadline)
                try:
                    run = self._follow(deadline, on_call, on_progress, ooms)
                    break
                except Unprepared:
                    # It had none for this exercise after all (the process that had collected
                    # its tests was found changed, say): the exercise again, then the grade.
                    if again:
                        raise
        except wire.FrameTimeout:
            self.close()
            raise SuiteFailure("exercise", f"the exercise's tests did not finish within {seconds:g} s") from None
        except ProtocolError as exc:
            self.failed(exc)
            raise SuiteFailure("exercise", f"the exercise's tests broke the grading protocol ({exc})") from None
        except (OSError, wire.WireError) as exc:
            oom = self._out_of_memory(ooms)
            self.failed(exc)
            if oom is not None:
                raise oom from None
            raise SuiteFailure("sandbox", f"the exercise sandbox failed ({exc})") from None
        except BaseException:
            self.close()  # mid-grade: its next frame must never be read as the next grade's
            raise
        # The next grade is most likely of this exercise again: its child collects now. A
        # warm process that cannot take it is ended, and this grade's verdicts stand.
        try:
            self._prepare(key, listing, tests, exercise, time.monotonic() + 10)
        except (OSError, wire.WireError) as exc:
            self.failed(exc)
        except BaseException:
            self.close()
            raise
        return run

    def _prepare(self, key: str, listing: list, tests: bytes, exercise: dict, deadline: float) -> None:
        """A spare child of the warm process takes the exercise's tests and collects them."""
        self._ooms_since_prepared = self.memory_mark()
        self.send({"op": "prepare", "bundle": key}, *protocol.exercise_parts(listing, tests, **exercise),
                  deadline=deadline)
        self._prepared = key

    def close(self) -> None:
        self._prepared = None  # a new warm process has no spare prepared
        super().close()

    def _out_of_memory(self, ooms: tuple[int, int]) -> SuiteFailure | None:
        """Where the kernel killed for memory since ``ooms``: the suite's own limit is the
        exercise's failure; the whole machine running out is the grader's."""
        killed = self.cgroup.killed_for_memory(ooms) if self.cgroup is not None else None
        if killed is None:
            return None
        if killed == "limit":
            return SuiteFailure("exercise", f"the exercise's tests ran out of memory ({EXERCISE_MEMORY_BYTES >> 20} MiB)")
        return SuiteFailure("sandbox", "the grading machine ran out of memory during the exercise's tests")

    def _follow(self, deadline: float, on_call: OnCall, on_progress, ooms: tuple[int, int]) -> SuiteRun:
        isolated, finished = False, None
        while True:
            envelope, frame = self.receive(deadline=deadline, max_header=protocol.ENVELOPE_HEADER,
                                           max_blob=protocol.ENVELOPE_BLOB)
            if envelope.get("event") == "ended":
                if envelope.get("unprepared"):
                    raise Unprepared("the warm process had no child prepared for the exercise")
                break
            if envelope.get("event") != "child":
                raise wire.WireError(f"the warm process said {str(envelope)[:80]}")
            try:
                header, data = wire.unpack(frame, max_header=protocol.EVENT_HEADER, max_blob=protocol.EVENT_BLOB)
            except wire.WireError as exc:
                raise ProtocolError(str(exc)) from None
            event = header.get("event")
            if finished is not None:
                raise ProtocolError("it went on after its verdicts")
            if event == "isolated":
                isolated = True
                continue
            if not isolated:
                raise ProtocolError(f"{str(event)[:40]!r} before the sandbox stood")
            if event == "progress":
                done, total = header.get("done"), header.get("total")
                if data or not (type(done) is int and type(total) is int and 0 <= done <= total <= MAX_RESULTS):
                    raise ProtocolError("a malformed progress report")
                if on_progress:
                    on_progress(done, total)
            elif event == "call":
                out = on_call(*protocol.read_call(header, data, tensors=False))
                reply, parts = _encoded(out)
                self.send({"op": "reply"}, *wire.frame_parts(reply, *parts), deadline=deadline)
            elif event == "finished" and not data:
                finished = checked_run(header)
            else:
                raise ProtocolError(f"an unknown event {str(event)[:40]!r}")
        if finished is not None:
            for text in finished.logs:
                log.error("exercise sandbox: %s", text)
            return finished
        if not isolated:
            why = self._stderr_text().strip().splitlines()
            self.close()
            raise SuiteFailure("sandbox", why[-1][:300] if why else "the exercise sandbox could not isolate the suite")
        oom = self._out_of_memory(ooms)
        if oom is not None:
            raise oom
        raise SuiteFailure("exercise", "the exercise's tests ended their process before their verdicts"
                                       + _how(envelope))


def _encoded(out: CallOutcome) -> tuple[dict, list]:
    """The outcome as a frame for the suite. Whatever the student sandbox returned decoded
    within bounds; what cannot be encoded again is the student's malformed reply, never
    the sandbox's failure. Its detail goes in each language (grader.engine.words)."""
    try:
        return protocol.outcome_frame(words.call_detail(out))
    except wire.WireError as exc:
        return protocol.outcome_frame(words.call_detail(CallOutcome(
            "malformed", detail=f"your code sent back something that is not a result ({exc})")))


def _how(ended: dict) -> str:
    sig, code = ended.get("signal"), ended.get("exit")
    if type(sig) is int:
        try:
            return f" (killed by {signal.Signals(sig).name})"
        except ValueError:
            return f" (killed by signal {sig})"
    return f" (exit status {code})" if type(code) is int else ""


def tests_of(bundle: Bundle) -> tuple[list, bytes]:
    """The bundle's tests/ folder as (listing, blob): each regular file, read without
    following links (a link could name any file of the worker's), within bounds."""
    root = bundle.tests_dir
    if root.is_symlink():
        raise SuiteFailure("exercise", "tests/ is a symbolic link; a bundle's files must be its own")
    listing, parts, total = [], [], 0
    for folder, dirs, names in os.walk(root):
        for name in sorted(dirs):
            if os.path.islink(os.path.join(folder, name)):
                raise SuiteFailure("exercise", f"{_rel(bundle, folder, name)} is a symbolic link; "
                                               "a bundle's files must be its own")
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(names):
            where = _rel(bundle, folder, name)
            try:
                fd = os.open(os.path.join(folder, name), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError as exc:
                raise SuiteFailure("exercise", f"{where} cannot be read: a bundle's files must be its own "
                                               f"regular files ({exc.strerror})") from None
            try:
                info = os.fstat(fd)
                if not stat.S_ISREG(info.st_mode):
                    raise SuiteFailure("exercise", f"{where} is not a regular file")
                total += info.st_size
                if total > MAX_TESTS_BYTES or len(listing) >= MAX_TEST_FILES:
                    raise SuiteFailure("exercise", f"the bundle's tests/ folder holds more than "
                                                   f"{MAX_TESTS_BYTES >> 20} MiB or {MAX_TEST_FILES} files")
                with os.fdopen(fd, "rb", closefd=False) as fh:
                    data = fh.read(info.st_size + 1)[:info.st_size]
            finally:
                os.close(fd)
            listing.append([where, sum(len(p) for p in parts), len(data)])
            parts.append(data)
    return listing, b"".join(parts)


def _rel(bundle: Bundle, folder: str, name: str) -> str:
    return Path(os.path.relpath(os.path.join(folder, name), bundle.path)).as_posix()


# ---------------------------------------------------------------- what the suite says

def checked_run(header: dict) -> SuiteRun:
    """The suite's verdicts, each field typed and bounded, or ProtocolError."""
    results = header.get("results")
    if type(results) is not list or len(results) > MAX_RESULTS:
        raise ProtocolError("its results are not a list of at most %d tests" % MAX_RESULTS)
    error = header.get("error")
    checked = [_result(r) for r in results]
    if len({r.id for r in checked}) != len(checked):
        raise ProtocolError("two results have the same test id")
    return SuiteRun(results=checked,
                    error=_text(error, "error") if error is not None else None,
                    test_errors=_texts(header.get("test_errors"), "test_errors", 100, 1000),
                    logs=_texts(header.get("logs"), "logs", 20, 5000))


def _result(item) -> TestResult:
    if type(item) is not dict:
        raise ProtocolError("a result is not an object")
    max_points, points = _number(item.get("max_points"), "max_points"), _number(item.get("points"), "points")
    if not 0 <= max_points <= 1e6 or not 0 <= points <= max_points:
        raise ProtocolError("a result's points are out of range")
    passed, visible = item.get("passed"), item.get("visible")
    if type(passed) is not bool or type(visible) is not bool:
        raise ProtocolError("a result's passed and visible must be true or false")
    i18n = item.get("i18n") or {}
    if type(i18n) is not dict or not all(
            lang in LANGUAGES[1:] and type(texts) is dict and all(key in ("name", "message", "hint") for key in texts)
            for lang, texts in i18n.items()):
        raise ProtocolError("a result's translations are malformed")
    duration = _number(item.get("duration_ms", 0), "duration_ms")
    if not 0 <= duration <= 86_400_000:
        raise ProtocolError("a result's duration is out of range")
    return TestResult(
        id=_text(item.get("id"), "id", 1000), name=_text(item.get("name"), "name", 1000), visible=visible,
        passed=passed, points=points, max_points=max_points,
        message=_text(item.get("message"), "message", optional=True),
        hint=_text(item.get("hint"), "hint", optional=True),
        duration_ms=coarse_ms(duration / 1000),
        i18n={lang: {key: _text(value, key) for key, value in texts.items()} for lang, texts in i18n.items()})


def _number(value, what: str) -> float:
    if type(value) not in (int, float) or not math.isfinite(value):
        raise ProtocolError(f"a result's {what} is not a number")
    return float(value)


def _text(value, what: str, limit: int = MAX_TEXT, optional: bool = False):
    if value is None and optional:
        return None
    if type(value) is not str or len(value) > limit:
        raise ProtocolError(f"{what} is not a string of at most {limit} characters")
    return value


def _texts(value, what: str, count: int, limit: int) -> list[str]:
    if value is None:
        return []
    if type(value) is not list or len(value) > count:
        raise ProtocolError(f"{what} is not a list of at most {count} strings")
    return [_text(v, what, limit) for v in value]
