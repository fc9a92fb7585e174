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
import socket
import sys
import time
from dataclasses import asdict
from pathlib import Path

from grader import protocol
from grader.inside import first_use, huge_pages, pauses, precopy, seccomp, walls, wire
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
    seccomp.prepare(kind="shared")  # for the children of a collector (_collector)
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
        if huge_pages.due() and _pauses.quiet(requests):
            huge_pages.fold_next()  # between grades, a piece at a time
            continue
        if spare is not None and spare.collecting and walls.readable(spare.ctl):
            spare = _collected(spare)  # its tests collected: the collector of its exercise now
            continue
        if spare is None and _pauses.quiet(requests):
            # While idle, and only after the last grade was swept: nothing untrusted runs
            # while it waits (it keeps our uid until it reads its exercise).
            spare = _next_spare()
            continue
        if _ahead is None and _pauses.seen and spare is not None and not spare.collecting \
                and _pauses.quiet(requests):
            _learn_ahead()  # once, idle after a first grade: a single grade never waits for it
            _send_ahead(spare)
            continue
        if spare is not None and spare.collecting:
            select.select([requests, spare.ctl], [], [])
            if not walls.readable(requests):
                continue
        waited = walls.readable(requests)
        try:
            header, blob = wire.read_frame_into(requests, max_header=protocol.ENVELOPE_HEADER,
                                                max_blob=protocol.ENVELOPE_BLOB)
        except wire.Closed:
            return
        op = header.get("op")
        if op == "prepare":  # sent by the worker as soon as the grade before has ended
            spare = _prepare(spare, header.get("bundle"), blob)
        elif op == "grade":
            _pauses.began(waited)
            child, spare = spare, None
            if child is not None and child.collecting:
                child = _settle(child, requests)
            if child is None or child.bundle is None or child.bundle != header.get("bundle"):
                # The worker prepares every grade's exercise first: its own bug, said plainly.
                if child is not None:
                    _discard(child)
                wire.write_frame(replies, {"event": "ended", "exit": None, "signal": None, "unprepared": True})
            else:
                _grade(child, blob, requests, replies)
            _pauses.ended()
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
            # Both ways as a frame read arrives: into a buffer of its own.
            header, parts = protocol.call_frame(module, function, self.visible, args, kwargs)
            protocol.read_call(header, bytearray(b"".join(parts)))
            header, parts = protocol.outcome_frame(protocol.CallOutcome("ok", value=2 * x.detach(), args=[x]))
            return protocol.read_outcome(header, bytearray(b"".join(parts)))

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
# The pages running a suite writes (precopy.learn), as the frame that tells a spare to copy
# them while it waits (None until learnt; empty where nothing could be), and how long the
# worker pauses between grades, which decides whether a spare is sent it.
_ahead: bytes | None = None
_pauses = pauses.Pauses()


def _learn_ahead() -> None:
    """Learn which pages a suite writes (~50 ms: a rehearsal of our warm-up suite in a child).
    Only once this process has served a grade: `grader grade` grades one file, and never
    pays for it."""
    global _ahead
    runs = precopy.learn(_warm_up)
    shutil.rmtree(Path(SCRATCH) / "warm-up", ignore_errors=True)  # (a rehearsal ended mid-way leaves it)
    _ahead = wire.pack({"ahead": True}, precopy.pack(runs)) if runs else b""


def _send_ahead(child: _Child | None) -> _Child | None:
    """The next grade's child, told to copy ahead where the worker pauses between grades. It
    reads this after its exercise (a child not given one yet is told nothing) and before its
    grade; one gone by then is found gone when its grade is carried."""
    if child is not None and child.bundle is not None and _ahead and _pauses.idle():
        _to_child(child, _ahead)
    return child


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
    """A forked child waiting for the one grade it will run (or, once it has collected its
    exercise's tests, forking the child of each grade of that exercise: ``_collector``)."""

    def __init__(self, adopted: tuple[int, int, int] | None = None) -> None:
        """``adopted``: (pid, request pipe, result pipe) of a child the collector forked."""
        self.ctl = None  # our end of the control socket: a child we forked, in the sandbox
        if adopted is not None:
            self.pid, self.req_w, self.res_r = adopted
        else:
            req_r, self.req_w = os.pipe()
            self.res_r, res_w = os.pipe()
            ctl = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET) if IN_SANDBOX else None
            parent = os.getpid()
            self.pid = huge_pages.fork()
            if self.pid == 0:
                try:
                    os.close(self.req_w)
                    os.close(self.res_r)
                    if ctl is not None:
                        ctl[0].close()
                    _child(req_r, res_w, parent, ctl[1] if ctl is not None else None)
                except BaseException as exc:  # noqa: BLE001 - our bug, not the exercise's: say so
                    os.write(2, f"sandbox: internal error: {type(exc).__name__}: {exc}\n".encode())
                finally:
                    os._exit(71)
            os.close(req_r)
            os.close(res_w)
            if ctl is not None:
                ctl[1].close()
                self.ctl = ctl[0]
        os.set_blocking(self.req_w, False)  # every frame to it has a deadline (_to_child)
        # Room for a whole grade frame (the largest submission, 256 KiB) while the child is
        # still collecting its tests and reads nothing: the grade waits in the pipe, not here.
        # (Where the kernel refuses, a grade waits for its child to read it.) And the calls'
        # tensors cross in fewer handoffs, both ways.
        wire.widen(self.req_w, self.res_r)
        self.pidfd = os.pidfd_open(self.pid)
        self.reaped = False
        self.bundle = None  # what the worker named the exercise it prepares, once it does
        self.collecting = False  # given its exercise, and its word that it collected it not read yet
        self.inherited = None  # a collector's: what each child it forks inherits, as it was


def _discard(child: _Child, keep: _Child | None = None) -> None:
    """A spare no grade will use (another exercise's, or one that would not read its
    exercise): ended, with all it started, as a grade's child is (but ``keep``)."""
    _kill(child)
    _reap(child, keep)


# ---------------------------------------------------------------- the collector
#
# Collecting a suite (pytest's configuration, the conftest files, the test modules imported,
# the items made) cost each grade's child ~21 ms of its ~43 ms of CPU, for the same result
# every time. So the child that collected an exercise's tests stays, as its collector, and
# forks the child of each later grade of that exercise from there, collected already; it
# never receives a grade (the worker's grades reach each grade's child only).
#
# The collector ran the exercise's own code (its conftest and modules, at import) behind the
# same walls as any grade: the children's uid, namespaces of its own, its private /tmp with
# the bundle read-only, no capabilities, the system-call filter. Its children cannot make
# namespaces (the filter denies it), so each shares the collector's, one after the other:
# - a process collects only where its collection left nothing that two children would share
#   rather than copy: no descriptor but ours, no writable shared mapping, no signal handler
#   (which another process's signal would run here), nothing in /tmp but the bundle; else it
#   runs its own grade, as every grade's child did before (_serve_grades);
# - processes: everything but us and the collector is ended after each grade, as before;
# - the collector itself: it is not dumpable (no grade's child may read or write its memory,
#   nor its /proc files), and before it forks each grade's child we check what a process of
#   its uid could have changed in it and its children inherit (alive and not stopped, one
#   thread, scheduling, limits, OOM score); its children may set no priority but their own;
# - each child's descriptors: the two pipes of its grade and a /dev/null of its own, so that
#   no flag or lock set on an open file outlives its grade;
# - its /tmp: its change time, which any entry made or removed and any change of the folder's
#   own mode, times or attributes set, and no process can set back, must be as it was when it
#   had collected; a grade that wrote there leaves the next a fresh collector;
# - System V IPC and POSIX message queues, which outlive their processes: denied to each
#   grade's child (seccomp.SHARED_DENIED);
# - its network namespace has no link up, and what a grade opens there ends with it.
# - counters the namespaces keep, which a grade could move for the next to read: its children
#   may open only local sockets (the network's counters stay still) and no nameless file in
#   /tmp (whose inode numbers would tell how many it made).
# What this does not hold against is an exercise written to defeat it: its code runs in the
# collector's interpreter, and can change the collector's own code there (the checks above
# that it makes of itself among it) or run later through Python's hooks. An exercise's author
# has every student's submission already; a grade's child, which runs a student's data
# through that author's tests, can do none of this. (One channel is older than the collector:
# a grade's child is numbered by the sandbox's PID namespace, after every process the grade
# before it started.)
# A collector found changed is ended, and the next grade's child collects afresh (the worker
# sends the exercise after each grade, and again for a grade that found no child prepared):
# what one grade does to it costs the next its collection, never its verdicts. We keep no
# exercise's files ourselves: every child we fork later, for any course's exercise, would
# hold them.

_collector: _Child | None = None
_legacy: set[str] = set()  # exercises whose collector could not fork: a child per grade


def _prepare(spare: _Child | None, key, frame: bytearray) -> _Child | None:
    """The next grade's exercise: its collector's child, or a spare that collects it now."""
    if spare is not None and spare.bundle == key:
        return spare
    if spare is not None and spare.bundle is not None:
        _discard(spare)
        spare = None
    if _collector is not None and _collector.bundle != key:
        _end_collector(keep=spare)
    if _collector is not None:
        if spare is not None:
            _discard(spare)
        spare = _from_collector()
        if spare is not None:
            return _send_ahead(spare)
    return _send_ahead(_given(spare or _Child(), key, frame))


def _given(spare: _Child, key, frame) -> _Child | None:
    spare.bundle = key
    spare.collecting = spare.ctl is not None
    if not _to_child(spare, frame):
        _discard(spare)  # its grade is then answered as unprepared
        return None
    return spare


def _next_spare() -> _Child:
    """While idle: the child of the next grade, from the collector where there is one."""
    child = _from_collector()
    return _send_ahead(child if child is not None else _Child())


def _settle(spare: _Child, requests: int) -> _Child | None:
    """A grade has come for a spare still collecting its tests: wait for its word (or its
    end), and return the child that runs the grade."""
    while spare is not None and spare.collecting:
        ready = select.select([spare.ctl, spare.pidfd, requests], [], [])[0]
        if spare.ctl in ready:
            spare = _collected(spare)
        elif spare.pidfd in ready:
            spare.collecting = False  # it ended while collecting: what it wrote says how
        elif requests in ready:
            _, blob = _from_worker(requests)
            wire.wipe(blob)  # nothing the worker sends now is for this grade
    return spare


def _collected(spare: _Child) -> _Child | None:
    """The spare says it has collected its exercise's tests: it becomes the collector, and
    its first child the spare (or, where that cannot be, it runs the grade itself)."""
    global _collector
    spare.collecting = False
    try:
        word = spare.ctl.recv(64)
    except OSError:
        word = b""
    if word != b"collected":
        return spare  # it broke off: its grade reads what it wrote
    if spare.bundle not in _legacy and walls.threads(spare.pid) == 1:
        spare.inherited = _inherited(spare.pid)
        if spare.inherited is not None:
            if _collector is not None:
                _end_collector(keep=spare)
            _collector = spare
            child = _from_collector()
            if child is None:  # (it ended it) its grade is answered as unprepared and sent again
                _legacy.add(spare.bundle)
            return child
    try:
        spare.ctl.send(b"alone")  # it runs the grade itself, as any spare does
    except OSError:
        pass
    return spare


def _from_collector() -> _Child | None:
    """A child forked by the collector for the next grade, once the collector is found as it
    was; None (the collector ended) where it is not, or it does not fork one."""
    collector = _collector
    if collector is None:
        return None
    if not (walls.alive(collector.pid) and walls.runnable(collector.pid) and walls.threads(collector.pid) == 1
            and walls.scheduling(collector.pid) == walls.scheduling(0)
            and _inherited(collector.pid) == collector.inherited):
        _end_collector()
        return None
    req_r, req_w = os.pipe()
    res_r, res_w = os.pipe()
    pid = None
    try:
        collector.ctl.settimeout(5.0)
        socket.send_fds(collector.ctl, [b"fork"], [req_r, res_w])
        answer = collector.ctl.recv(32)
        pid = int(answer) if answer.isdigit() else None
    except (OSError, ValueError):
        pid = None
    finally:
        os.close(req_r)
        os.close(res_w)
    if pid is None or pid == collector.pid or not walls.alive(pid):
        for fd in (req_w, res_r):
            os.close(fd)
        _end_collector()  # it forks no child of ours: whatever it made goes with the sweep
        return None
    child = _Child(adopted=(pid, req_w, res_r))
    child.bundle = collector.bundle
    return child


def _end_collector(keep: _Child | None = None) -> None:
    """End the collector, and all else of the sandbox but ``keep``."""
    global _collector
    collector, _collector = _collector, None
    if collector is not None:
        collector.ctl.close()
        _discard(collector, keep)


def _inherited(pid: int) -> tuple | None:
    """What every child of the collector inherits that a process of its uid could change
    since, and we can read: its limits and OOM score. (Its /tmp it checks itself: not being
    dumpable, it is out of our reach too.)"""
    try:
        with open(f"/proc/{pid}/limits") as fh:
            limits = fh.read()
        with open(f"/proc/{pid}/oom_score_adj") as fh:
            oom = fh.read()
    except OSError:
        return None
    return limits, oom


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


def _reap(child: _Child, keep: _Child | None = None) -> None:
    if not child.reaped:
        _wait(child.pid, child.pidfd)
    os.close(child.pidfd)
    _end_grade(child.pid, keep)


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
                header, blob = _from_worker(requests)
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


def _from_worker(requests: int) -> tuple[dict, bytearray]:
    """The worker's next frame, in the middle of a grade."""
    try:
        return wire.read_frame_into(requests, max_header=protocol.ENVELOPE_HEADER, max_blob=protocol.ENVELOPE_BLOB)
    except wire.Closed:
        os._exit(0)  # the worker is gone: as PID 1 we take the sandbox with us


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


def _end_grade(pid: int, keep: _Child | None = None) -> None:
    """Nothing of the grade survives it: every other process of the sandbox ends but the
    collector (its files lived in the child's private /tmp, or in the collector's, which the
    collector's next child finds as it was or never sees); unsandboxed, its session and its
    folder."""
    if IN_SANDBOX:
        walls.sweep({c.pid for c in (_collector, keep) if c is not None})
        _gone()
        return
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    shutil.rmtree(BUNDLE, ignore_errors=True)


# ---------------------------------------------------------------- the child

def _child(req_r: int, res_w: int, parent: int, ctl: socket.socket | None) -> None:
    walls.own_session()
    walls.close_all_but(req_r, res_w, *([ctl.fileno()] if ctl is not None else []))
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
    walls.not_dumpable()  # (a collector's children, of its uid, never read or write its memory)
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
    os.close(null)
    sys.dont_write_bytecode = True
    send = _Sender(res_w)
    ours = (_caught_signals(), {0, 1, 2, req_r, res_w, *([ctl.fileno()] if ctl is not None else [])})
    send({"event": "isolated"})  # waits in the pipe until the grade's frames are carried

    from grader.testing import harness  # imported by the warm process already

    channel = RemoteChannel(req_r, send, probes=prepare.get("probes") is True)

    def start() -> bool:
        if ctl is not None:
            _serve_grades(ctl, req_r, res_w, send, ours)  # returns in a grade's child, or to run the grade here
        try:
            grade, blob = wire.read_frame(req_r, max_header=protocol.WORKER_HEADER, max_blob=protocol.ENVELOPE_BLOB)
            if grade.get("ahead") is True:  # the pages a suite writes, to copy until the grade is here
                precopy.copy(precopy.unpack(blob), arrived=lambda: walls.readable(req_r))
                grade, blob = wire.read_frame(req_r, max_header=protocol.WORKER_HEADER,
                                              max_blob=protocol.ENVELOPE_BLOB)
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


def _serve_grades(ctl: socket.socket, req_r: int, res_w: int, send, ours: tuple) -> None:
    """Collected: say so, and fork each grade's child as the warm process asks (module
    comment at ``_collector``), with the pipes it hands over in place of ours. Returns in each
    such child, or here if this process runs its grade itself: where the warm process says
    so, or where the collection left something every child would share rather than copy (a
    descriptor, a shared mapping, a signal handler that would run its code here at another
    process's signal, a file in /tmp)."""
    collected = _tmp_state()
    if collected is None or _caught_signals() != ours[0] or _shared_memory() or set(_descriptors()) - ours[1]:
        ctl.send(b"alone")
        ctl.close()
        return
    ctl.send(b"collected")
    while True:
        try:
            word, fds, _, _ = socket.recv_fds(ctl, 64, 2)
        except OSError:
            os._exit(0)
        if word == b"alone" and not fds:
            ctl.close()
            return
        if word != b"fork" or len(fds) != 2:
            os._exit(0)  # the warm process is gone
        now = _tmp_state()
        if collected is None or now is None or now != collected:
            os._exit(0)  # a grade wrote here: the next collects afresh
        pid = walls.fork_sibling()  # the warm process's child, as every grade's child is
        if pid == 0:
            ctl.detach()  # (closed below with the rest: the object must not close its number later)
            os.setsid()
            walls.dumpable()  # its memory its own to read again, as any grade's child (not ours)
            os.dup2(fds[0], req_r)
            os.dup2(fds[1], res_w)
            walls.close_all_but(req_r, res_w)  # ours among them: nothing open is shared with us
            null = os.open(os.devnull, os.O_RDWR)  # its own: locks and flags on ours would outlive it
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            os.close(null)
            try:
                seccomp.install(kind="shared")
            except OSError as exc:
                os.write(2, f"sandbox: could not isolate the grade (system-call filter: {exc})\n".encode())
                os._exit(walls.NOT_ISOLATED)
            send({"event": "isolated"})
            return
        for fd in fds:
            os.close(fd)
        ctl.send(str(pid).encode())


def _tmp_state() -> tuple | None:
    """Our /tmp as it is, where it holds the bundle alone (read-only), or None: the folder's
    change time, which any entry made or removed, any change of its mode, times or extended
    attributes sets, and no process can set back."""
    try:
        if os.listdir(SCRATCH) != [os.path.basename(BUNDLE)]:
            return None
        st = os.lstat(SCRATCH)
    except OSError:
        return None
    return st.st_ino, st.st_ctime_ns


def _caught_signals() -> str:
    with open("/proc/self/status") as fh:
        return next(line for line in fh if line.startswith("SigCgt:"))


def _shared_memory() -> bool:
    """Whether a shared mapping is writable here (every child would write the same pages)."""
    with open("/proc/self/maps") as fh:
        return any(line.split()[1][1] == "w" and line.split()[1][3] == "s" for line in fh)


def _descriptors() -> list[int]:
    return [fd for fd in map(int, os.listdir("/proc/self/fd")) if _open(fd)]


def _open(fd: int) -> bool:
    try:
        os.fstat(fd)
        return True
    except OSError:  # (the listing's own)
        return False


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

    def __call__(self, header: dict, *parts) -> None:
        wire.write_frame(self.fd, header, *parts)


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
        header, parts = protocol.call_frame(module, function, self.visible, args, kwargs)
        self.send(header, *parts)
        reply, data = wire.read_frame(self.requests, max_header=protocol.WORKER_HEADER,
                                      max_blob=protocol.ENVELOPE_BLOB)
        return protocol.read_outcome(reply, data)
