"""The warm process of the exercise sandbox, and the child that runs one suite.

It imports torch, pytest and ``grader.testing`` once, then serves the worker's requests.
Each grade has a fresh child, forked while the sandbox is idle: given its exercise
(``prepare``, before any grade is there), it stands up its own walls (the children's
uid, a private /tmp holding the bundle's tests read-only, the system-call filter) and
collects the hidden suite; given the grade, it runs the suite under pytest and talks to
the worker in frames (``protocol``). A spare prepared for another exercise is ended
unused. The warm process carries those frames both ways whole and unread (it
never parses them, and wipes each once passed on), so the child never holds the worker's
pipes and nothing of a grade stays in the memory every later child inherits: the next
grade may be another course's exercise. When the child ends (or is ended), the warm
process says ``ended`` and kills every other process of the sandbox before it reads
the next request.
"""

from __future__ import annotations

import gc
import os
import select
import shutil
import signal
import sys
import time
from dataclasses import asdict
from pathlib import Path

from grader import protocol
from grader.inside import first_use, huge_pages, seccomp, walls, wire
from grader.inside.walls import IN_SANDBOX, SCRATCH

BUNDLE = os.path.join(SCRATCH, "bundle")
MAX_FILES = 2000
CHILD_READS_WITHIN = 10.0  # seconds a child may leave a frame for it unread


def main() -> None:
    if SCRATCH == "/tmp" and not IN_SANDBOX:
        raise SystemExit("outside the sandbox GRADER_SCRATCH must name a private directory")
    requests, replies = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)  # nothing stray may reach the reply channel
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    walls.become_sandbox_user()

    # After the uid drop, like everything the sandbox runs: the point of being warm. No
    # collection while torch and pytest load and warm up (grader/inside/warm.py says why).
    gc.disable()
    import torch

    seccomp.prepare()
    _warm_up()
    global _prepared
    from grader.testing import harness
    _prepared = harness.prepare(Path(BUNDLE), SCRATCH)
    gc.collect()
    gc.freeze()
    gc.enable()  # every child inherits it: a submission's own garbage is collected as usual

    wire.write_frame(replies, {"ready": True, "torch": torch.__version__, "pid": os.getpid(),
                               "uid": os.getuid()})
    spare: _Child | None = None
    while True:
        if walls.dying:
            walls.forget_reaped()
        if huge_pages.due() and not select.select([requests], [], [], 0)[0]:
            huge_pages.fold_next()  # between grades, a piece at a time
            continue
        if spare is None and not select.select([requests], [], [], 0)[0]:
            # While idle, and only after the last grade was swept: nothing untrusted runs
            # while it waits (it keeps our uid until it reads its exercise).
            spare = _Child()
            continue
        try:
            header, blob = wire.read_frame_into(requests, max_header=protocol.ENVELOPE_HEADER,
                                                max_blob=protocol.ENVELOPE_BLOB)
        except wire.Closed:
            return
        op = header.get("op")
        if op == "prepare":
            # The next grade's exercise: a spare of its own collects its tests now.
            if spare is not None and spare.bundle is not None:
                _discard(spare)
                spare = None
            spare = spare or _Child()
            spare.bundle = header.get("bundle")
            if not _to_child(spare, blob):
                _discard(spare)  # its grade is then answered as unprepared
                spare = None
        elif op == "grade":
            child, spare = spare, None
            if child is None or child.bundle is None or child.bundle != header.get("bundle"):
                # The worker prepares every grade's exercise first: its own bug, said plainly.
                if child is not None:
                    _discard(child)
                wire.write_frame(replies, {"event": "ended", "exit": None, "signal": None, "unprepared": True})
            else:
                _grade(child, blob, requests, replies)
        elif op == "exit":
            return
        # Anything else ("reply": the answer to a call of a grade that has ended) is dropped.
        wire.wipe(blob)
        del header, blob


def _warm_up() -> None:
    """Run a small suite once, here, so that each grade's child does not pay pytest's and
    the protocol's first-use costs (lazy imports, compiled patterns) afresh."""
    import torch

    from grader.testing import harness

    first_use.pay()  # hidden tests train models too (a reference run beside the student's)
    folder = Path(SCRATCH) / "warm-up"
    (folder / "tests").mkdir(parents=True, exist_ok=True)
    (folder / "tests" / "test_warm_up.py").write_text(WARM_UP_SUITE)

    class Channel:
        files, device, visible = {"submission.py": ""}, "cpu", False

        def call(self, module, function, args, kwargs):
            x = torch.ones(2, requires_grad=True)
            header, blob = protocol.call_frame(module, function, self.visible, args, kwargs)
            protocol.read_call(header, blob)
            header, blob = protocol.outcome_frame(protocol.CallOutcome("ok", value=2 * x.detach(), args=[x]))
            return protocol.read_outcome(header, blob)

    before = set(sys.modules)
    try:
        harness.run_suite(folder, Channel())
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        for name in set(sys.modules) - before:
            if name.split(".")[0] in ("tests", "test_warm_up"):
                sys.modules.pop(name, None)


# pytest's configuration of the suite to come, made once here (harness.prepare): each
# grade's child uses its own copy of it, once.
_prepared = None


WARM_UP_SUITE = """
import torch
from grader.testing import expect_close, points, visible

@visible
@points(1)
def test_warm_up(student):
    call = student.call("f", torch.ones(2, requires_grad=True))
    expect_close(call.value, 2 * torch.ones(2), what="f(x)")
"""


# ---------------------------------------------------------------- the warm side of a grade

class _Child:
    """A forked child waiting for the one grade it will run."""

    def __init__(self) -> None:
        req_r, self.req_w = os.pipe()
        self.res_r, res_w = os.pipe()
        parent = os.getpid()
        self.pid = huge_pages.fork()
        if self.pid == 0:
            try:
                os.close(self.req_w)
                os.close(self.res_r)
                _child(req_r, res_w, parent)
            except BaseException as exc:  # noqa: BLE001 - our bug, not the exercise's: say so
                os.write(2, f"sandbox: internal error: {type(exc).__name__}: {exc}\n".encode())
            finally:
                os._exit(71)
        os.close(req_r)
        os.close(res_w)
        os.set_blocking(self.req_w, False)  # every frame to it has a deadline (_to_child)
        # Room for a whole grade frame (the largest submission, 256 KiB) while the child is
        # still collecting its tests and reads nothing: the grade waits in the pipe, not here.
        # (Where the kernel refuses, a grade waits for its child to read it.) And the calls'
        # tensors cross in fewer handoffs, both ways.
        wire.widen(self.req_w, self.res_r)
        self.pidfd = os.pidfd_open(self.pid)
        self.reaped = False
        self.bundle = None  # what the worker named the exercise it prepares, once it does


def _discard(child: _Child) -> None:
    """A spare no grade will use (another exercise's, or one that would not read its
    exercise): ended, with all it started, as a grade's child is."""
    _kill(child)
    _reap(child)


def _grade(child: _Child, request: bytearray, requests: int, replies: int) -> None:
    """Carry the child's frames until it is done or gone; say ``ended``; then end
    everything it left, before the next request is read."""
    try:
        status = _relay(request, requests, replies, child)
    finally:
        _kill(child)  # done, or it broke the protocol
    # As soon as its frames are through: its teardown and the sweep overlap the worker's work.
    wire.write_frame(replies, {"event": "ended", **status})
    _reap(child)


def _kill(child: _Child) -> None:
    for fd in (child.req_w, child.res_r):
        try:
            os.close(fd)
        except OSError:
            pass
    with walls.as_child_user():
        try:
            os.kill(child.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _reap(child: _Child) -> None:
    if not child.reaped:
        _wait(child.pid, child.pidfd)
    os.close(child.pidfd)
    _end_grade(child.pid)


def _relay(request: bytearray, requests: int, replies: int, child: _Child) -> dict:
    """Pass frames both ways until the child says it is done, closes its side or dies;
    returns how it ended, where that is known by then."""
    if not _to_child(child, request):
        # It ended (or stopped reading) while its exercise was collected: what it said
        # before that, whole frames only, still reaches the worker.
        while True:
            carried = _from_child(child, replies, time.monotonic() + 0.5)
            if carried is _DONE:
                return {"exit": None, "signal": None}
            if not carried:
                break
    else:
        while True:
            ready = select.select([child.res_r, requests, child.pidfd], [], [])[0]
            if requests in ready:
                try:
                    header, blob = wire.read_frame_into(requests, max_header=protocol.ENVELOPE_HEADER,
                                                        max_blob=protocol.ENVELOPE_BLOB)
                except wire.Closed:
                    os._exit(0)  # the worker is gone: as PID 1 we take the sandbox with us
                carried = header.get("op") != "reply" or _to_child(child, blob)
                wire.wipe(blob)
                if not carried:
                    break
                continue
            if child.res_r in ready or child.pidfd in ready:
                # What it wrote before it went, whole frames only; then it is done.
                deadline = None if child.pidfd not in ready else time.monotonic() + 0.5
                carried = _from_child(child, replies, deadline)
                if carried is _DONE:
                    # Its frames are through and it is exiting: neither its teardown nor its
                    # status is waited for (the status would only explain an end without verdicts).
                    return {"exit": None, "signal": None}
                if not carried:
                    break
    # A child whose pipe closed without its word died: its status, a moment after, says how.
    select.select([child.pidfd], [], [], 0.005)
    try:
        done, code = os.waitpid(child.pid, os.WNOHANG)
    except ChildProcessError:  # a sweep's reaping took it first (a spare that died collecting)
        child.reaped = True
        return {"exit": None, "signal": None}
    if not done:
        return {"exit": None, "signal": None}
    child.reaped = True
    if os.WIFSIGNALED(code):
        return {"exit": None, "signal": os.WTERMSIG(code)}
    return {"exit": os.WEXITSTATUS(code), "signal": None}


def _to_child(child: _Child, frame: bytearray) -> bool:
    """One frame to the child; False when it is gone or does not read it in time (a
    child that asks nothing and reads nothing has broken the protocol)."""
    try:
        wire.write_all(child.req_w, frame, deadline=time.monotonic() + CHILD_READS_WITHIN)
        return True
    except (BrokenPipeError, wire.FrameTimeout):
        return False


_DONE = "done"


def _from_child(child: _Child, replies: int, deadline: float | None) -> bool | str:
    """One whole frame of the child's to the worker, inside ours, unread; False when there
    is none (its pipe closed, or what came is not a frame within bounds), _DONE when the
    child says it has sent its last (an empty frame, carried to no one)."""
    try:
        frame = wire.read_raw_frame(child.res_r, max_header=protocol.EVENT_HEADER,
                                    max_blob=protocol.EVENT_BLOB, deadline=deadline)
    except wire.WireError:
        return False
    if frame == wire.END:
        return _DONE
    try:
        wire.write_frame(replies, {"event": "child"}, frame)
    finally:
        wire.wipe(frame)
    return True


def _wait(pid: int, pidfd: int, seconds: float = 5.0) -> None:
    started = time.monotonic()
    while True:
        try:
            if os.waitpid(pid, os.WNOHANG)[0]:
                return
        except ChildProcessError:
            return  # the sweep below reaps whatever has died, this child included
        if time.monotonic() - started > seconds:
            walls.dying.add(pid)
            return
        if IN_SANDBOX and time.monotonic() - started > 0.2:
            walls.sweep(set())  # whatever holds it back (nothing should) goes
        select.select([pidfd], [], [], 0.02)


def _gone(seconds: float = 2.0) -> None:
    """Until every process the sweep killed is reaped: a dead one's /proc entry (the name
    it gave itself, its state) would still be read by the next child, which collects its
    tests as soon as it is forked and shares the sandbox's PIDs."""
    deadline = time.monotonic() + seconds
    while walls.dying and time.monotonic() < deadline:
        walls.forget_reaped()
        if walls.dying:
            time.sleep(0.002)


def _end_grade(pid: int) -> None:
    """Nothing of the grade survives it: every other process of the sandbox ends (its
    files lived in the child's private /tmp); unsandboxed, its session and its folder."""
    if IN_SANDBOX:
        walls.sweep(set())
        _gone()
        return
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    shutil.rmtree(BUNDLE, ignore_errors=True)


# ---------------------------------------------------------------- the child

def _child(req_r: int, res_w: int, parent: int) -> None:
    walls.own_session()
    walls.close_all_but(req_r, res_w)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    # First its exercise (the bundle's tests, no grade's data): the walls go up and the tests
    # are collected while no grade waits; then the grade itself (the submission).
    try:
        prepare, blob = wire.read_frame(req_r, max_header=protocol.WORKER_HEADER, max_blob=protocol.ENVELOPE_BLOB)
    except wire.WireError:
        os._exit(73)
    files = _files(prepare.get("files"), blob)
    del blob
    limits = prepare.get("limits") if isinstance(prepare.get("limits"), dict) else {}
    walls.enter(tmp_bytes=int(limits.get("tmp_bytes", 256 << 20)), parent=parent, folder=BUNDLE,
                populate=lambda: _write(files))
    del files
    walls.set_limits(cpu_seconds=float(limits.get("cpu_seconds", 120)),
                     file_bytes=int(limits.get("file_bytes", 64 << 20)),
                     processes=int(limits.get("processes", 64)))
    os.chdir(SCRATCH)
    try:
        seccomp.install()
    except OSError as exc:
        os.write(2, f"sandbox: could not isolate the call (system-call filter: {exc})\n".encode())
        os._exit(walls.NOT_ISOLATED)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 1)
    os.dup2(null, 2)  # what the tests print goes nowhere: the worker's files are not theirs to fill
    sys.dont_write_bytecode = True
    send = _Sender(res_w)
    send({"event": "isolated"})  # waits in the pipe until the grade's frames are carried

    from grader.testing import harness  # imported by the warm process already

    channel = RemoteChannel(req_r, send, probes=prepare.get("probes") is True)

    def start() -> bool:
        try:
            grade, blob = wire.read_frame(req_r, max_header=protocol.WORKER_HEADER, max_blob=protocol.ENVELOPE_BLOB)
        except wire.WireError:
            os._exit(73)
        channel.files = {"submission.py": _extent(grade.get("source"), blob).decode("utf-8", "replace")}
        channel.device = str(grade.get("device", "cpu"))
        return grade.get("visible_only") is True

    run = harness.run_suite(Path(BUNDLE), channel, start=start, prepared=_prepared,
                            on_progress=lambda done, total: send({"event": "progress", "done": done, "total": total}))
    send({"event": "finished", "results": [asdict(r) for r in run.results], "error": run.error,
          "test_errors": run.test_errors, "logs": run.logs})
    # The warm process takes this as the end, and waits for neither our status nor our teardown.
    wire.write_all(res_w, wire.END)
    os._exit(0)


def _files(listing, blob: bytearray) -> dict[str, bytes]:
    """The bundle's files from the request: relative paths inside the bundle, and
    extents of the blob (the worker's own listing; checked all the same)."""
    files = {}
    for item in (listing if isinstance(listing, list) else [])[:MAX_FILES]:
        if not (isinstance(item, list) and len(item) == 3):
            continue
        name, offset, size = item
        parts = name.split("/") if isinstance(name, str) else []
        if parts and not any(p in ("", ".", "..") for p in parts):
            files[name] = _extent([offset, size], blob)
    return files


def _extent(extent, blob: bytearray) -> bytes:
    """The bytes of ``blob`` that ``[offset, size]`` names, or none where it names none."""
    if not (isinstance(extent, list) and len(extent) == 2 and all(type(n) is int and n >= 0 for n in extent)):
        return b""
    offset, size = extent
    return bytes(blob[offset:offset + size]) if offset + size <= len(blob) else b""


def _write(files: dict[str, bytes]) -> None:
    root = Path(BUNDLE)
    root.mkdir()
    for name, data in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


class _Sender:
    def __init__(self, fd: int):
        self.fd = fd

    def __call__(self, header: dict, blob: bytes = b"") -> None:
        wire.write_frame(self.fd, header, blob)


class RemoteChannel:
    """The ``student`` fixture's way to the submission: each call goes to the worker,
    which runs it in the student sandbox and sends back what it came to."""

    def __init__(self, requests: int, send: _Sender, *, probes: bool, source: str = "", device: str = "cpu"):
        self.requests, self.send = requests, send
        self.files = {"submission.py": source}  # the grade's, once it arrives
        self.device = device
        self.probes = probes
        self.visible = False  # set by the harness as each test starts

    def call(self, module: str, function: str, args: list, kwargs: dict) -> protocol.CallOutcome:
        if module == "probes" and not self.probes:
            raise RuntimeError("this exercise has no probes.py")
        header, blob = protocol.call_frame(module, function, self.visible, args, kwargs)
        self.send(header, blob)
        reply, data = wire.read_frame(self.requests, max_header=protocol.WORKER_HEADER,
                                      max_blob=protocol.ENVELOPE_BLOB)
        return protocol.read_outcome(reply, data)
