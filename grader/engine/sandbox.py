"""The trusted side of the student sandbox: calls across its wall.

One :class:`Sandbox` owns one warm process (``inside/warm.py``) inside bubblewrap
(``bwrap.py``): no network, a read-only system, a private /tmp, a clean environment,
an unprivileged uid. It serves one submission at a time; every call runs in a fresh
child of the warm process.
"""

from __future__ import annotations

import logging
import signal
import sys
import time
from dataclasses import dataclass

from grader.engine import cgroup, uids
from grader.engine.bwrap import STUDENT
from grader.inside import wire
from grader.protocol import CallOutcome
from grader.engine.warm_process import SandboxUnavailable, WarmProcess  # noqa: F401

log = logging.getLogger(__name__)

# What the sandbox's processes may hold together between calls (the warm process with
# torch, the children forked ahead); a call may add its own limit to what is held then.
IDLE_MEMORY_BYTES = 3 << 30
# A CUDA call's first use of the GPU maps the CUDA libraries (gigabytes of page cache,
# charged to the sandbox that touches them first) and the driver's host-side buffers:
# allowed on top of the call's own limit, and bounded like it.
CUDA_HOST_BYTES = 4 << 30


class NotIsolated(wire.WireError):
    """The call child failed before its walls stood, so before any student code ran:
    the sandbox's failure (retried), never the student's. What it printed is ours."""

    def __init__(self, reply: dict, raw: bytes):
        kept = reply.get("output_len", 0)
        said = bytes(raw[:kept if isinstance(kept, int) and kept > 0 else 0]).decode("utf-8", "replace")
        lines = said.strip().splitlines()
        why = lines[-1][:300] if lines else "the call could not be isolated: " + str(
            reply.get("error") or reply.get("status"))[:300]
        log.error("%s", why)
        super().__init__(why)


@dataclass(frozen=True)
class Limits:
    timeout: float = 5.0             # wall seconds per call (CPU seconds are capped alike)
    memory_bytes: int = 1 << 30      # address space a call may add
    file_bytes: int = 16 << 20       # largest file a call may write
    output_bytes: int = 64 << 10     # printed output kept per call (the rest is counted)
    result_bytes: int = 64 << 20     # largest returned value, encoded
    processes: int = 32
    tmp_bytes: int = 64 << 20        # the call's private /tmp (memory, beside memory_bytes)

    def to_wire(self) -> dict:
        return dict(self.__dict__)


class Sandbox(WarmProcess):
    room = STUDENT
    idle_memory_bytes = IDLE_MEMORY_BYTES
    _resetting = False  # a reset was sent; its word is read before the next request's

    @property
    def uid(self) -> int:
        return uids.claim(self.config.sandbox_uid)

    # ------------------------------------------------------------ requests

    def _request(self, header: dict, *parts, timeout: float, max_blob: int = 0) -> tuple[dict, bytes]:
        self._settle()
        try:
            deadline = time.monotonic() + timeout
            self.send(header, *parts, deadline=deadline)
            reply, raw = self.receive(deadline=deadline, max_blob=max_blob)
        except (OSError, wire.WireError) as exc:
            self.failed(exc)
            raise
        if header.get("op") == "call" and reply.get("isolated") is not True:
            raise NotIsolated(reply, raw)
        return reply, raw

    def reset(self) -> None:
        """Between submissions: end anything the last one left running. Sent, not waited
        for: the warm process sweeps while the worker writes its report, and reads no
        later request before that is done; the next request waits for its word first."""
        if self.alive and not self._resetting:  # (still resetting: nothing ran since)
            try:
                self.send({"op": "reset"}, b"", deadline=time.monotonic() + 30)
                self._resetting = True
            except (OSError, wire.WireError) as exc:
                self.failed(exc)

    def _settle(self) -> None:
        """Started, and the last reset's word read (which sets the idle memory bound: so
        before a call sets its own)."""
        self.start()
        try:
            self._reset_done()
        except (OSError, wire.WireError) as exc:
            self.failed(exc)  # the last submission's end went wrong: a fresh one for this request
            self.start()

    def _reset_done(self) -> None:
        if not self._resetting:
            return
        self._resetting = False
        reply, _ = self.receive(deadline=time.monotonic() + 30)
        if reply.get("ok") is not True:
            raise wire.WireError(f"the reset failed: {str(reply.get('error'))[:200]}")
        if self.cgroup is not None:
            self.cgroup.set_memory_max(IDLE_MEMORY_BYTES)

    def close(self) -> None:
        self._resetting = False  # a new warm process owes no word
        super().close()

    def call(self, files: dict[str, str], function: str, args: list, kwargs: dict, *,
             module: str = "submission", limits: Limits = Limits(), device: str = "cpu",
             block: tuple[str, ...] = (), tensors: bool = True) -> CallOutcome:
        """One call of ``function``, within what the sandbox's cgroup lets it add.

        ``tensors=False``: the tensors that come back are ``wire.Values`` (checked bytes, to
        relay), and nothing here loads torch (``args`` then hold no torch.Tensor either)."""
        self._settle()
        try:
            ooms = self._bound_memory(limits)
        except OSError as exc:
            return CallOutcome("sandbox", detail=f"the sandbox's cgroup failed ({exc})")
        out = self._call(files, function, args, kwargs, module=module, limits=limits, device=device,
                         block=block, tensors=tensors)
        return self._blame(out, ooms, limits)

    def _call(self, files: dict[str, str], function: str, args: list, kwargs: dict, *,
              module: str, limits: Limits, device: str, block: tuple[str, ...], tensors: bool) -> CallOutcome:
        try:
            # TensorState from an earlier call becomes a tensor again (a fresh leaf of its values).
            sent = {"args": wire.to_sandbox(list(args)), "kwargs": wire.to_sandbox(dict(kwargs))}
            tree, blob = wire.encode_parts(sent, states=True)
            # The child's request travels inside ours: the warm process passes it on unread.
            # Its tensors are views of the frame they came in, written from there.
            request = wire.frame_parts({"files": files, "module": module, "function": function,
                                        "args": tree["dict"][0][1], "kwargs": tree["dict"][1][1],
                                        "limits": limits.to_wire(), "device": device, "block": list(block)},
                                       *blob)
            reply, raw = self._request({"op": "call", "limits": limits.to_wire()}, *request,
                                       timeout=limits.timeout + 20,
                                       max_blob=limits.result_bytes + limits.output_bytes + (1 << 20))
        except SandboxUnavailable:
            raise
        except (OSError, wire.WireError) as exc:
            return CallOutcome("sandbox", detail=f"the sandbox failed during the call ({exc})")
        out = _outcome(reply, raw, limits, tensors)
        if out.kind == "ok" and not _same_arguments(out, args, kwargs):
            # Only a reply written past the sandbox's encoder can differ: tests index into these.
            out.kind, out.value = "malformed", None
            out.detail = "your code sent back something that is not a result (not the arguments it was given)"
        return out

    def _bound_memory(self, limits: Limits) -> tuple[int, int]:
        """Let the call add its memory (and its /tmp) to what the sandbox holds now, no
        more, whichever way it allocates. Returns the memory counters' mark before the call."""
        if self.cgroup is None:
            return 0, 0
        allowance = limits.memory_bytes + limits.tmp_bytes + (CUDA_HOST_BYTES if self.cuda else 0)
        self.cgroup.set_memory_max(self.cgroup.memory_usage() + allowance)
        return self.cgroup.memory_mark()

    def _blame(self, out: CallOutcome, ooms: tuple[int, int], limits: Limits) -> CallOutcome:
        """A process killed by the kernel for memory: the sandbox's own limit is the
        student's; the host running out is the grader's (retried, never a score)."""
        if self.cgroup is None or out.kind not in ("crash", "sandbox", "exit", "timeout"):
            return out
        killed = self.cgroup.killed_for_memory(ooms)
        if killed == "limit":
            out.kind = "memory"
            out.detail = f"memory limit exceeded ({limits.memory_bytes >> 20} MiB per call)"
        elif killed == "host":
            out.kind = "sandbox"
            out.detail = "the grading machine ran out of memory during the call"
        return out


def _outcome(reply: dict, raw: bytes, limits: Limits, tensors: bool = True) -> CallOutcome:
    status = reply.get("status") if isinstance(reply.get("status"), dict) else {}
    kept = reply.get("output_len", 0)
    kept = min(kept, len(raw), limits.output_bytes) if isinstance(kept, int) and kept > 0 else 0
    output, raw = raw[:kept], memoryview(raw)[kept:]  # a view: the result is not copied
    out = CallOutcome("ok", output=output.decode("utf-8", "replace"),
                      output_bytes=int(reply.get("output_bytes", 0) or 0),
                      wall_ms=float(reply.get("wall_ms", 0) or 0))
    if reply.get("result_too_large"):
        out.kind = "too_large"
        out.detail = f"your function returned more than {limits.result_bytes >> 20} MiB of data"
        return out
    if status.get("timeout"):
        out.kind = "timeout"
        out.detail = f"time limit exceeded ({tenths(limits.timeout)} s per call)"
        return out
    if len(raw):
        try:
            header, blob = wire.unpack(raw, max_header=4 << 20, max_blob=limits.result_bytes)
            if header.get("ok") is True:
                result = wire.decode(header.get("result"), blob, tensors=tensors)
                if not (isinstance(result, dict) and {"value", "args", "kwargs"} <= set(result)):
                    raise wire.WireError("malformed result")
                out.value, out.args, out.kwargs = result["value"], result["args"], result["kwargs"]
                if not isinstance(out.args, list) or not isinstance(out.kwargs, dict):
                    raise wire.WireError("malformed result")
                return out
            error = header.get("error")
            if not isinstance(error, dict):
                raise wire.WireError("malformed error")
            out.error = _student_exception(error)
            kind = error.get("kind")
            out.kind = kind if kind in ("memory", "unencodable") else "exception"
            if out.kind == "memory":
                out.detail = f"memory limit exceeded ({limits.memory_bytes >> 20} MiB per call)"
            elif out.kind == "unencodable":
                out.detail = out.error.message
            return out
        except Exception as exc:  # noqa: BLE001 - whatever fails to decode is the student's doing
            out.kind = "malformed"
            reason = exc if isinstance(exc, wire.WireError) else type(exc).__name__
            out.detail = f"your code sent back something that is not a result ({reason})"
            return out
    sig, code = status.get("signal"), status.get("exit")
    if sig in (signal.SIGKILL, signal.SIGXCPU) and status.get("cpu_ms", 0) >= limits.timeout * 1000:
        out.kind, out.detail = "timeout", f"CPU time limit exceeded ({tenths(limits.timeout)} s per call)"
    elif sig is not None:
        try:
            name = signal.Signals(sig).name
        except (ValueError, TypeError):
            name = str(sig)
        out.kind, out.detail = "crash", f"the process running your code was killed by {name}"
    elif code is not None:
        out.kind = "exit"
        out.detail = f"your code ended the process (exit status {code}) instead of returning"
    else:
        why = reply.get("error") if isinstance(reply.get("error"), str) else "no status"
        out.kind, out.detail = "sandbox", f"the sandbox lost track of the call ({why[:200]})"
    return out


def _same_arguments(out: CallOutcome, args: list, kwargs: dict) -> bool:
    """The arguments came back as they were sent: as many, the same keys, tensors as tensors."""
    torch = sys.modules.get("torch")  # none of the arguments is a torch.Tensor where it is not loaded

    def tensor(v):
        return isinstance(v, wire.TensorState) or (torch is not None and isinstance(v, torch.Tensor))

    return (len(out.args) == len(args) and set(out.kwargs) == set(kwargs)
            and all(isinstance(b, wire.TensorState) for a, b in zip(args, out.args) if tensor(a))
            and all(isinstance(out.kwargs[k], wire.TensorState) for k, a in kwargs.items() if tensor(a)))


def _student_exception(error: dict) -> wire.StudentException:
    frames = []
    for item in error.get("traceback", [])[:20]:
        if isinstance(item, list) and len(item) == 3:
            line, func, text = item
            frames.append((int(line) if isinstance(line, int) else 0, str(func)[:100], str(text)[:300]))
    return wire.StudentException(type=str(error.get("type", "Exception"))[:100],
                                 message=str(error.get("message", ""))[:2000], traceback=frames)


def tenths(seconds: float) -> str:
    """A time for a message, to a tenth of a second at most: a call's limit may be what is
    left of the submission's, and finer digits would time the calls before it (the hidden
    tests' among them) more finely than reports round durations."""
    return f"{round(seconds, 1):g}"
