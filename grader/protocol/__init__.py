"""The frames between the worker and the exercise sandbox, and what a call came to.

Two layers. The **child** that runs one suite speaks to the worker in frames of its own:
it reads its exercise (the bundle's tests as files, its limits) and collects the tests
before any grade is there, then reads the grade (the submission's text, the device) and
sends events, each answered where it asks::

    isolated                  the child's walls stand; before it, failures are ours
    progress  done, total     a test finished
    call      module, function, visible, args, kwargs    -> answered with an outcome
    finished  results, error, test_errors, logs          the suite's verdicts

The sandbox's **warm process** carries those frames whole and unread, inside frames of its
own, so that nothing of a grade is ever parsed (and left in its memory) there::

    worker -> warm:  {"op": "prepare", bundle} + an exercise frame (a spare child takes it)
                     {"op": "grade", bundle} + a grade frame (to the spare prepared for it)
                     {"op": "reply"} + an outcome frame
    warm -> worker:  {"event": "child"} + an event frame;  {"event": "ended", exit, signal}

The worker prepares the exercise of each grade before it (and, after a grade, the same
exercise again for the next one), so a grade's child has its tests collected before
the submission arrives; ``bundle`` (``exercise_key``) pairs the two.

A reply that arrives after its grade ended is dropped there, never read as the next
grade's. Both sides decode with :mod:`wire` (no pickle; every size bounded), and the
worker checks everything the child sends as hostile: the exercise's code runs there.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from grader.inside import wire
from grader.protocol.report import LANGUAGES
from grader.protocol.text import Text

EVENTS = ("isolated", "progress", "call", "finished")  # what the child may send
MODULES = ("submission", "probes")
# What the worker parses of one event: a header (JSON, which costs many times its size
# in objects) and a blob (a call's tensor arguments).
EVENT_HEADER = 4 << 20
EVENT_BLOB = 128 << 20
# What the warm process carries: its own small headers, and a frame of either side.
ENVELOPE_HEADER = 1 << 16
ENVELOPE_BLOB = 1 << 30
WORKER_HEADER = 64 << 20  # the worker's frames to the child (an outcome's values; the worker is trusted)


@dataclass
class CallOutcome:
    """What one call into the student sandbox came to.

    kind is "ok", "exception", "timeout", "memory", "exit", "crash",
    "too_large", "unencodable", "malformed" (the reply failed to decode: the
    student's doing, as only their code can write it), "refused" (the submission
    was refused before it ran) or "sandbox" (the sandbox itself failed).
    """

    kind: str
    value: Any = None
    args: list = field(default_factory=list)
    kwargs: dict = field(default_factory=dict)
    error: wire.StudentException | None = None
    detail: str = ""
    detail_i18n: dict[str, str] = field(default_factory=dict)  # the detail in other languages: {"ko": ...}
    output: str = ""
    output_bytes: int = 0
    wall_ms: float = 0.0

    def said(self) -> Text:
        """The detail in each language it is written in."""
        return Text(self.detail, **self.detail_i18n)


@dataclass
class SuiteRun:
    """What the hidden suite came to (TestResult dicts on the wire; TestResults once the
    worker has checked them)."""

    results: list = field(default_factory=list)
    error: str | None = None  # the suite itself could not run (collection failed)
    test_errors: list[str] = field(default_factory=list)
    logs: list[str] = field(default_factory=list)  # tracebacks of the tests' own errors, for the worker's log


class ProtocolError(wire.WireError):
    """The other side sent something that is not part of the protocol."""


# ---------------------------------------------------------------- calls (exercise -> worker)

def exercise_parts(files: list, tests: bytes, **settings) -> list:
    """The child's first frame, as parts: the bundle's tests, ``files`` listing each one's
    name and extent of ``tests`` (the blob, which the warm process wipes)."""
    return wire.frame_parts({"files": files, **settings}, tests)


def grade_parts(source: str, **settings) -> list:
    """The child's second frame, as parts: the submission's text, in the blob, never in a header."""
    text = source.encode("utf-8")
    return wire.frame_parts({"source": [0, len(text)], **settings}, text)


def exercise_key(files: list, tests: bytes, **settings) -> str:
    """What names a prepared exercise between the worker and the warm process: a digest of
    all its child is given, so a spare is never used for tests other than its own."""
    digest = hashlib.sha256(json.dumps([files, settings], sort_keys=True).encode())
    digest.update(tests)
    return digest.hexdigest()


def call_frame(module: str, function: str, visible: bool, args: list, kwargs: dict) -> tuple[dict, list]:
    """A call's frame: its header and its blob's parts (the tensors' own memory, unjoined)."""
    tree, parts = wire.encode_parts({"args": list(args), "kwargs": dict(kwargs)}, states=True)
    return {"event": "call", "module": module, "function": function, "visible": visible,
            "values": tree}, parts


def read_call(header: dict, blob: bytes, *, tensors: bool = True) -> tuple[str, str, bool, list, dict]:
    """(module, function, visible, args, kwargs) of a call frame, checked (its tensors'
    values as ``wire.Values`` with ``tensors=False``: the worker relays them)."""
    module, function, visible = header.get("module"), header.get("function"), header.get("visible")
    if module not in MODULES:
        raise ProtocolError(f"a call to an unknown module {str(module)[:40]!r}")
    if type(function) is not str or not function.isidentifier() or len(function) > 100:
        raise ProtocolError("a call without a function name")
    if type(visible) is not bool:
        raise ProtocolError("a call that does not say whether its test is visible")
    values = wire.decode(header.get("values"), blob, tensors=tensors)
    if type(values) is not dict or type(values.get("args")) is not list or type(values.get("kwargs")) is not dict \
            or not all(type(k) is str for k in values["kwargs"]):
        raise ProtocolError("a call's arguments are malformed")
    return module, function, visible, values["args"], values["kwargs"]


# ---------------------------------------------------------------- outcomes (worker -> exercise)

def outcome_frame(out: CallOutcome) -> tuple[dict, list]:
    """An outcome's frame: its header and its blob's parts (views of the frame the student
    sandbox's reply came in, where the worker relays it)."""
    tree, blob = wire.encode_parts({"value": out.value, "args": out.args, "kwargs": out.kwargs}, states=True)
    error = None
    if out.error is not None:
        error = {"type": out.error.type, "message": out.error.message,
                 "traceback": [list(frame) for frame in out.error.traceback]}
    return {"kind": out.kind, "detail": out.detail, "detail_i18n": out.detail_i18n, "output": out.output,
            "output_bytes": out.output_bytes,
            "wall_ms": out.wall_ms, "error": error, "result": tree}, blob


def read_outcome(header: dict, blob: bytes) -> CallOutcome:
    result = wire.decode(header.get("result"), blob)
    error = header.get("error")
    exception = None
    if isinstance(error, dict):
        exception = wire.StudentException(type=str(error.get("type")), message=str(error.get("message")),
                                          traceback=[tuple(f) for f in error.get("traceback", [])])
    local = header.get("detail_i18n") if isinstance(header.get("detail_i18n"), dict) else {}
    return CallOutcome(kind=str(header.get("kind")), value=result["value"], args=result["args"],
                       kwargs=result["kwargs"], error=exception, detail=str(header.get("detail") or ""),
                       detail_i18n={lang: str(words) for lang, words in local.items() if lang in LANGUAGES[1:]},
                       output=str(header.get("output") or ""), output_bytes=int(header.get("output_bytes") or 0),
                       wall_ms=float(header.get("wall_ms") or 0))
