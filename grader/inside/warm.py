"""The warm process that lives inside the sandbox.

It imports torch once, then serves requests from the trusted side over two
pipes. Every call forks a fresh child that imports the submission, runs one
function and is never reused. The warm process is PID 1 of the sandbox's PID
namespace (``bwrap --as-pid-1``): the kernel drops every signal its children
send it, and after each call it kills every other process in the namespace,
so nothing a submission starts (background processes, fork bombs) outlives
its call. Each call's code runs in a PID namespace of its own, nested in the
sandbox's, so that no call learns from PIDs what another did. Nothing here
initialises CUDA: a child does, after the fork.

Only this module, ``walls``, ``wire``, ``seccomp``, ``blocking``, ``witness``, ``first_use``,
``huge_pages``, ``pauses`` and ``precopy`` are imported inside the sandbox.
"""

from __future__ import annotations

import collections
import gc
import os
import selectors
import shutil
import signal
import sys
import time
import traceback

from . import first_use, huge_pages, pauses, walls
from .walls import IN_SANDBOX, SCRATCH

WORK = os.path.join(SCRATCH, "work")
SUBMISSION_FILE = os.path.join(WORK, "submission.py")
# The call child's first byte on the result pipe, written once its walls stand and
# before any student code runs: without it, whatever happened is the sandbox's failure.
ISOLATED = b"I"


def main() -> None:
    if SCRATCH == "/tmp" and not IN_SANDBOX:
        raise SystemExit("outside the sandbox GRADER_SCRATCH must name a private directory")
    global _LIFELINE
    requests, replies = os.dup(0), os.dup(1)
    _LIFELINE = requests
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)  # nothing stray may reach the reply channel
    # As PID 1, a signal from inside the namespace arrives only if we handle it: handle none.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    walls.become_sandbox_user(calls_mount_proc=True)

    # No collection while torch loads: its import makes hundreds of thousands of objects
    # and none is garbage; the cycle collector walking them again and again cost a tenth
    # of the warm process's start (bench/sandbox_start.py).
    gc.disable()
    import torch  # noqa: F401  (the point of being warm)
    from . import blocking, seccomp, wire, witness  # noqa: F401  (here, not compiled afresh in every child)
    seccomp.prepare()  # once, here, for every child
    witness.install()  # every backward() records how it began (before the warm-up runs one)
    _warm_up()
    # Everything imported so far stays as it is: a collection in a child then does not
    # walk (and so copy, page by page) the whole inherited heap.
    gc.collect()
    gc.freeze()
    gc.enable()  # every child inherits it: a submission's own garbage is collected as usual

    wire.write_frame(replies, {"ready": True, "torch": torch.__version__, "pid": os.getpid(),
                               "uid": os.getuid()})
    # What passes through here (hidden inputs, results, printed output) is held only in
    # bytearrays that are wiped after use: freed memory keeps its bytes, and every
    # child forked later would inherit them. Submissions travel inside each call's
    # request, so nothing of one submission stays here for the next to find.
    grading = False  # between a submission's first call and the reset after its last
    while True:
        if walls.dying:
            walls.forget_reaped()
        if huge_pages.due() and not grading and _pauses.quiet(requests):
            huge_pages.fold_next()  # between submissions, a piece at a time
            continue
        if len(_spares) < _spares_wanted() and not grading and _pauses.quiet(requests):
            # Between submissions only, and never while a request waits: a fork costs
            # 5-15 ms, which within a submission would delay its next call.
            _spares.append(_Child(ahead=True, rehearse=_pauses.idle()))
            continue
        if walls.dying and _pauses.quiet(requests, 0.002):
            continue  # idle, with killed processes still to reap: reap as they die
        # A request that waits already came while we forked or folded, some time after we
        # last found none; one we wait for comes when it is read.
        waited = walls.readable(requests)
        try:
            header, blob = wire.read_frame_into(requests)
        except wire.Closed:
            return
        op = header.get("op")
        if op == "call":
            if not grading:
                _calls.append(0)  # a submission's first call
                _pauses.began(waited)
            grading = True
            _calls[-1] += 1
            child, parts = None, []
            try:
                reply, parts, child = _call(header, blob)
            except Exception as exc:  # noqa: BLE001 - stay up; the trusted side reports it
                reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:2000]}
            wire.write_frame(replies, reply, *parts)
            wire.wipe(blob, *parts)
            _end_call(child)  # after replying: the cleanup overlaps the trusted side's work
        elif op == "reset":
            grading = False
            _reset()
            wire.write_frame(replies, {"ok": True})
            _pauses.ended()
        elif op == "exit":
            return
        else:
            wire.write_frame(replies, {"ok": False, "error": f"unknown op {op!r}"})


# The request pipe. The trusted side writes nothing while a call runs, so if it becomes
# readable then, the trusted side is gone: we end, and as PID 1 we take the whole
# sandbox with us. (A parent-death signal cannot do this: bubblewrap, our parent, keeps
# no capability, so the kernel does not let its death signal cross our uid change.)
_LIFELINE = -1


def _write_files(files: dict) -> None:
    os.makedirs(WORK)
    for name, text in files.items():
        if isinstance(name, str) and name.endswith(".py") and "/" not in name and isinstance(text, str):
            with open(os.path.join(WORK, name), "w", encoding="utf-8") as fh:
                fh.write(text)


def _warm_up() -> None:
    first_use.pay()


def _reset() -> None:
    """Between submissions: no process of the last one survives. The spares waiting behind
    their walls serve the next: they were forked before the last submission's calls and
    hold nothing of them, none of those calls could name them (each call's processes are in
    a PID namespace of their own), and each is checked runnable, with our scheduling, when
    taken. Unsandboxed, where no namespace keeps the calls from them, they are forked again
    after the sweep. (The last submission's files lived in its calls' private /tmp;
    unsandboxed, in our scratch folder, emptied here.)"""
    while _spares and not IN_SANDBOX:
        _discard(_spares.pop())
    _end_call(None)
    if not IN_SANDBOX:
        for name in os.listdir(SCRATCH):
            shutil.rmtree(os.path.join(SCRATCH, name), ignore_errors=True)


class _Child:
    """A forked child waiting for the one call it will serve."""

    def __init__(self, ahead: bool = False, rehearse: bool = False) -> None:
        self.ahead = ahead  # forked ahead, while idle, rather than for the call at hand
        req_r, self.req_w = os.pipe()
        self.res_r, res_w = os.pipe()
        self.out_r, out_w = os.pipe()
        from . import wire
        wire.widen(self.req_w, self.res_r)  # a call's tensors, both ways
        parent = os.getpid()
        # Born the first of a PID namespace of its own (walls.fork_own_pids says why).
        self.pid = huge_pages.fork(walls.fork_own_pids)
        if self.pid == 0:
            try:
                # It waits behind the walls that need nothing of the call (the calls' uid
                # for good, namespaces of its own). No call's process can name it to touch
                # its nice value, scheduling policy, CPU affinity or limits: each call's
                # processes are in a PID namespace of their own.
                for fd in (self.req_w, self.res_r, self.out_r):
                    os.close(fd)
                _inner(req_r, res_w, out_w, parent, rehearse=rehearse)
            except BaseException as exc:  # noqa: BLE001 - our bug, not the student's: say so
                os.write(2, f"sandbox: internal error: {type(exc).__name__}: {exc}\n".encode())
            finally:
                os._exit(71)
        for fd in (req_r, res_w, out_w):
            os.close(fd)

    def discard(self) -> None:
        for fd in (self.req_w, self.res_r, self.out_r):
            try:
                os.close(fd)
            except OSError:
                pass


# Forking a process with torch loaded costs 5-15 ms, so children are forked ahead,
# while the warm process is idle. Each child still serves one call only.
SPARES = 6
_spares: list[_Child] = []
# As many spares as a submission makes calls, so that none forks on its path: the most the
# last few submissions made (a class mostly submits one exercise at a time; one that
# fails early makes fewer), within bounds (each spare is two processes of the sandbox's).
_calls: collections.deque[int] = collections.deque(maxlen=4)
MIN_SPARES, MAX_SPARES = 4, 16


def _spares_wanted() -> int:
    return min(MAX_SPARES, max(MIN_SPARES, *_calls)) if _calls else SPARES


# A spare's rehearsal (first_use.rehearse) costs it ~3 ms of CPU more than its call would
# spend paying those first touches itself, and saves the call about as much time: spares
# rehearse only where the worker pauses between submissions (``pauses``; two grades in
# flight on two cores: 12-13 grades/s rehearsing, 13-14.7 not: bench/engine_latency.py).
_pauses = pauses.Pauses()


def _take_child() -> _Child:
    ours = walls.scheduling(0)
    while _spares:
        child = _spares.pop(0)
        if walls.alive(child.pid) and walls.runnable(child.pid) and walls.scheduling(child.pid) == ours:
            return child
        # Dead, stopped, or its nice value, policy or CPUs changed: never hand it a call.
        _discard(child)
    return _Child()


def _discard(child: _Child) -> None:
    with walls.as_child_user():  # its uid once its walls went up (its PID 1 dies with it)
        try:
            os.kill(child.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    walls.dying.add(child.pid)
    child.discard()


def _call(header: dict, request: bytearray) -> tuple[dict, list, int | None]:
    """Hand ``request`` (the child's own frame, opaque here) to a fresh child and collect
    what it prints and returns. Returns the reply, its blob parts (output, then the
    result frame) and the child's pid if it is still to be cleaned up."""
    limits = header.get("limits", {})
    timeout = float(limits.get("timeout", 5))
    max_result = int(limits.get("result_bytes", 64 << 20))
    max_output = int(limits.get("output_bytes", 64 << 10))

    child = _take_child()
    reply, parts, pid = _run(child, request, timeout, max_result, max_output)
    if not reply["isolated"] and child.ahead and reply["status"]["signal"] == signal.SIGKILL:
        # A child forked ahead died before its call came (the cgroup's OOM killer chose
        # it, say): one forked now serves the call.
        reply, parts, pid = _run(_Child(), request, timeout, max_result, max_output)
    return reply, parts, pid


def _run(child: "_Child", request: bytearray, timeout: float, max_result: int,
         max_output: int) -> tuple[dict, list, int | None]:
    from . import wire

    started = time.monotonic()
    pidfd = os.pidfd_open(child.pid)
    # Never blocking: a child that does not read (stopped, say) meets the call's deadline.
    os.set_blocking(child.req_w, False)
    try:
        wire.write_all(child.req_w, request, deadline=started + timeout)
    except (BrokenPipeError, wire.FrameTimeout):
        pass  # it died already, or did not read in time; how is told below
    os.close(child.req_w)
    drained = _drain(child.res_r, child.out_r, pidfd, max_result, max_output, deadline=started + timeout)
    status = {"timeout": drained["timeout"], "exit": None, "signal": None}
    pid: int | None = child.pid
    if drained["timeout"] or drained["too_large"] or not drained["result_bytes"]:
        # No usable result: how the child ended is the feedback. Wait (within the
        # time limit) for it to finish on its own, then end everything.
        if not status["timeout"] and not walls.readable(pidfd, started + timeout - time.monotonic()):
            status["timeout"] = True
        with walls.as_child_user():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        ended = _wait_for(pid, pidfd)  # the sweep after the reply ends what it left
        if ended is None:
            walls.dying.add(pid)  # it could not be collected in time: "no status" says so
        else:
            code, usage = ended
            if os.WIFSIGNALED(code):
                status["signal"] = os.WTERMSIG(code)
            else:
                status["exit"] = os.WEXITSTATUS(code)
            status["cpu_ms"] = round((usage.ru_utime + usage.ru_stime) * 1000, 2)
        pid = None
    os.close(pidfd)
    output = drained["output"]
    reply = {
        "ok": True,
        "status": status,
        "wall_ms": round((time.monotonic() - started) * 1000, 2),
        "output_len": len(output),
        "output_bytes": drained["output_total"],
        "result_too_large": drained["too_large"],
        "isolated": drained["isolated"],
    }
    return reply, [output, *drained["result"]], pid


def _wait_for(pid: int, pidfd: int, seconds: float = 5.0):
    """Collect a killed child, within a deadline. A process that traces it (were that
    possible) would hold it back from us: after a moment, end every other process of
    the sandbox, which releases it."""
    started = time.monotonic()
    swept = False
    while True:
        done, code, usage = os.wait4(pid, os.WNOHANG)
        if done:
            return code, usage
        waited = time.monotonic() - started
        if waited > seconds:
            return None
        if waited > 0.2 and not swept and IN_SANDBOX:
            _sweep()
            swept = True
        if _LIFELINE >= 0 and walls.readable(_LIFELINE):
            os._exit(0)  # the trusted side is gone (see _LIFELINE)
        walls.readable(pidfd, 0.02)


_CHUNK = 1 << 16


def _drain(res_r: int, out_r: int, pidfd: int, max_result: int, max_output: int, deadline: float) -> dict:
    """Read the child's result and output until both end, the child exits, or time runs out.

    Everything lands in place in bytearrays (the result in 64 KiB chunks), to be wiped."""
    sel = selectors.DefaultSelector()
    sel.register(res_r, selectors.EVENT_READ)
    sel.register(out_r, selectors.EVENT_READ)
    sel.register(pidfd, selectors.EVENT_READ)
    if _LIFELINE >= 0:
        sel.register(_LIFELINE, selectors.EVENT_READ)
    chunks: list[bytearray] = []
    output, scratch = bytearray(max_output), bytearray(_CHUNK)
    state = {"too_large": False, "output_total": 0, "timeout": False, "result_bytes": 0, "isolated": False}
    kept = 0
    exited = False

    def close(fd: int) -> None:
        sel.unregister(fd)
        os.close(fd)

    def read(fd: int) -> bool:
        nonlocal kept
        if fd == res_r:
            if not chunks or state["result_bytes"] == len(chunks) * _CHUNK:
                chunks.append(bytearray(_CHUNK))
            used = state["result_bytes"] - (len(chunks) - 1) * _CHUNK
            n = os.readv(fd, [memoryview(chunks[-1])[used:]])
            if n and not state["result_bytes"]:
                state["isolated"] = chunks[0][0] == ISOLATED[0]
            state["result_bytes"] += n
            if n and state["result_bytes"] > max_result:
                state["too_large"] = True
                close(res_r)  # the writer gets EPIPE and dies
                return False
        else:
            room = memoryview(output)[kept:] if kept < max_output else memoryview(scratch)
            n = os.readv(fd, [room])
            state["output_total"] += n
            if kept < max_output:
                kept += n
        if not n:
            close(fd)
        return bool(n)

    while True:
        pipes = [fd for fd in (res_r, out_r) if fd in sel.get_map()]
        if not pipes:
            break
        if exited:
            # The child is gone; whatever holds the pipes now is a leftover. Take what is there.
            for fd in pipes:
                while fd in sel.get_map() and walls.readable(fd) and read(fd):
                    pass
            break
        left = deadline - time.monotonic()
        if left <= 0:
            state["timeout"] = True
            break
        for key, _ in sel.select(left):
            if key.fd == _LIFELINE:
                os._exit(0)
            if key.fd == pidfd:
                exited = True
                sel.unregister(pidfd)
            elif key.fd in sel.get_map():
                read(key.fd)
    for fd in (res_r, out_r):
        if fd in sel.get_map():
            close(fd)
    sel.close()
    if _LIFELINE >= 0 and walls.readable(_LIFELINE):
        os._exit(0)
    from . import wire
    wire.wipe(scratch)
    if state["too_large"]:
        wire.wipe(*chunks)
        chunks, state["result_bytes"] = [], 0
    elif chunks:
        last = state["result_bytes"] - (len(chunks) - 1) * _CHUNK
        chunks[-1] = memoryview(chunks[-1])[:last]  # a view: the chunk itself is wiped later
    if chunks and state["isolated"]:
        chunks[0] = memoryview(chunks[0])[1:]  # the mark is ours, not part of the result
        state["result_bytes"] -= 1
    state["result"] = chunks
    state["output"] = memoryview(output)[:kept]
    return state


def _end_call(pid: int | None) -> None:
    """After a call: make sure nothing but us and the spare children is left running."""
    if IN_SANDBOX:
        _sweep()
    elif pid is not None:
        try:
            os.killpg(pid, signal.SIGKILL)  # unsandboxed: the child's own session
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass


def _sweep() -> None:
    """Kill every process of the sandbox but us and the spare children (each the first of
    its own PID namespace, which holds nothing else yet)."""
    walls.sweep({child.pid for child in _spares})


def _set_limits(limits: dict, device: str) -> None:
    memory = int(limits.get("memory_bytes", 1 << 30))
    walls.set_limits(cpu_seconds=float(limits.get("timeout", 5)), file_bytes=int(limits.get("file_bytes", 16 << 20)),
                     processes=int(limits.get("processes", 32)),
                     # CUDA reserves vast virtual ranges, so address-space limits only suit the CPU.
                     address_space=walls.vm_size() + memory if device != "cuda" else None)


def _inner(req_r: int, res_w: int, out_w: int, parent: int, *, rehearse: bool = False) -> None:
    from . import seccomp, wire

    # A session of its own (and so an autogroup: renicing it slows only this call;
    # unsandboxed, the session is also what gets killed afterwards), and a fresh
    # session keyring.
    walls.own_session()
    os.dup2(out_w, 1)
    os.dup2(out_w, 2)
    walls.close_all_but(req_r, res_w)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an oversized write fails instead of killing
    # The walls that need nothing of the call go up while it is not yet here (a spare waits
    # behind them). This process is PID 1 of the call's own PID namespace: nothing that runs
    # another call can name it, every call's processes are in a PID namespace of their own.
    walls.enter_ahead(parent=parent, own_pids=True)
    if rehearse:  # a spare, forked ahead: the call's first-touch costs, paid while it waits
        first_use.rehearse()
    try:
        request, blob = wire.read_frame(req_r)
    except wire.WireError:
        os._exit(73)
    os.close(req_r)
    files = request.get("files")
    limits = request.get("limits", {})
    walls.enter_rest(tmp_bytes=int(limits.get("tmp_bytes", 64 << 20)), folder=WORK,
                     populate=lambda: _write_files(files if isinstance(files, dict) else {}))
    device = request.get("device", "cpu")
    _set_limits(limits, device)
    os.chdir(WORK)
    sys.path.insert(0, WORK)
    try:
        seccomp.install()
    except OSError as exc:
        os.write(2, f"sandbox: could not isolate the call (system-call filter: {exc})\n".encode())
        os._exit(walls.NOT_ISOLATED)
    # The walls stand; from here on, what happens is the submission's doing.
    if os.write(res_w, ISOLATED) != 1:
        os._exit(76)

    try:
        frame = _invoke(request, blob, device, wire)
    except BaseException as exc:  # noqa: BLE001 - everything the student raises is feedback
        frame = wire.frame_parts({"ok": False, "error": _describe(exc)})
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:  # noqa: BLE001
        pass
    # Output first, then the result: the warm process answers as soon as both
    # pipes close, without waiting for this process's teardown.
    os.close(1)
    os.close(2)
    wire.write_all(res_w, *frame)
    os.close(res_w)
    os._exit(0)


def _invoke(request, blob, device, wire) -> list:
    """The call's result frame, as parts: its tensors' own memory, never joined."""
    import importlib
    import torch

    from . import blocking, witness
    blocking.block(request.get("block", []))
    args = wire.to_sandbox(wire.decode(request.get("args", {"list": []}), blob))
    kwargs = wire.to_sandbox(wire.decode(request.get("kwargs", {"dict": []}), blob))
    if device == "cuda":
        args, kwargs = _to_device(args, torch), _to_device(kwargs, torch)
    # Before the submission is imported: what it does at import cannot reach the hooks.
    witness.watch([args, kwargs])
    module = importlib.import_module(request.get("module", "submission"))
    func = getattr(module, request["function"], None)
    if func is None:
        raise AttributeError(f"your submission defines no function named {request['function']!r}")
    value = func(*args, **kwargs)
    try:
        tree, data = wire.encode_parts({"value": value, "args": args, "kwargs": kwargs},
                                       grad_origin=witness.origin, grad_passes=witness.passes)
    except wire.WireError as exc:
        return wire.frame_parts({"ok": False, "error": {"kind": "unencodable", "type": "ValueError",
                                                        "message": str(exc), "traceback": []}})
    return wire.frame_parts({"ok": True, "result": tree}, *data)


def _to_device(value, torch):
    if isinstance(value, torch.Tensor):
        moved = value.detach().to("cuda")
        return moved.requires_grad_(value.requires_grad)
    if isinstance(value, list):
        return [_to_device(v, torch) for v in value]
    if isinstance(value, tuple):
        return tuple(_to_device(v, torch) for v in value)
    if isinstance(value, dict):
        return {k: _to_device(v, torch) for k, v in value.items()}
    return value


def _describe(exc: BaseException) -> dict:
    frames = [(f.lineno or 0, f.name, (f.line or "").strip())
              for f in traceback.extract_tb(exc.__traceback__)
              if f.filename == SUBMISSION_FILE]
    kind = "exception"
    text = _safe_str(exc)
    if isinstance(exc, MemoryError) or "can't allocate memory" in text or "out of memory" in text:
        kind = "memory"
    return {"kind": kind, "type": type(exc).__name__[:100], "message": text[:2000],
            "traceback": frames[-20:]}


def _safe_str(exc: BaseException) -> str:
    try:
        return str(exc)
    except BaseException:  # noqa: BLE001 - a hostile __str__
        return "<unprintable exception>"
