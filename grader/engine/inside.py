"""The warm process that lives inside the sandbox.

It imports torch once, then serves requests from the trusted side over two
pipes. Every call forks a *middle* process which enters a fresh user, PID and
mount namespace and forks the *inner* process (PID 1 of that namespace) that
imports the submission and runs one function. When the inner process ends,
the kernel kills everything it left behind (background processes, fork bombs)
with it, and it cannot see or signal the warm process. Nothing here initialises
CUDA: an inner process does, after the fork.

Only this module and ``wire`` are imported inside the sandbox.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import selectors
import shutil
import signal
import sys
import time
import traceback

# Inside bubblewrap this is the sandbox's private tmpfs. Unsandboxed (development
# mode) it is a fresh directory of its own: never the host's /tmp, which we empty.
SCRATCH = os.environ.get("GRADER_SCRATCH", "/tmp")
WORK = os.path.join(SCRATCH, "work")
SUBMISSION_FILE = os.path.join(WORK, "submission.py")

_CLONE_NEWNS = 0x00020000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWPID = 0x20000000
_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4

_libc = ctypes.CDLL(None, use_errno=True)


def main() -> None:
    if SCRATCH == "/tmp" and os.environ.get("GRADER_IN_SANDBOX") != "1":
        raise SystemExit("outside the sandbox GRADER_SCRATCH must name a private directory")
    import faulthandler
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # stack dump on demand, to stderr
    requests, replies = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)  # nothing stray may reach the reply channel
    _become_sandbox_user()
    _libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)  # children cannot read our memory or /proc entries

    import torch  # noqa: F401  (the point of being warm)
    from grader.engine import wire
    _warm_up()

    wire.write_frame(replies, {"ready": True, "torch": torch.__version__, "pid": os.getpid(),
                               "uid": os.getuid(), "nested": _nested_namespaces_work()})
    files: dict[str, str] = {}
    while True:
        try:
            header, blob = wire.read_frame(requests)
        except wire.Closed:
            return
        op = header.get("op")
        if op == "load":
            files = {name: text for name, text in header.get("files", {}).items()
                     if isinstance(name, str) and "/" not in name and isinstance(text, str)}
            wire.write_frame(replies, {"ok": True})
        elif op == "call":
            try:
                reply, raw = _call(header, blob, files)
            except Exception as exc:  # noqa: BLE001 - stay up; the trusted side reports it
                reply, raw = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:2000]}, b""
            wire.write_frame(replies, reply, raw)
        elif op == "reset":
            files = {}
            _clean_tmp()
            wire.write_frame(replies, {"ok": True})
        elif op == "exit":
            return
        else:
            wire.write_frame(replies, {"ok": False, "error": f"unknown op {op!r}"})


def _become_sandbox_user() -> None:
    uid = int(os.environ.pop("GRADER_SANDBOX_UID", "0") or 0)
    if os.getuid() == 0 and uid:
        # Started by root: drop to an unprivileged uid outside any user namespace,
        # so RLIMIT_NPROC applies and root-owned files stay unreadable.
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    if os.getuid() == 0 and os.environ.get("GRADER_ALLOW_ROOT") != "1":
        raise SystemExit("refusing to run submissions as root")


def _warm_up() -> None:
    import torch
    import torch.nn.functional  # noqa: F401
    import torch.optim  # noqa: F401
    import torch.autograd.functional  # noqa: F401
    x = torch.ones(3, requires_grad=True)
    (2 * x @ x).backward()


def _nested_namespaces_work() -> bool:
    pid = os.fork()
    if pid == 0:
        os._exit(0 if _libc.unshare(_CLONE_NEWUSER | _CLONE_NEWPID | _CLONE_NEWNS) == 0 else 1)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def _clean_tmp() -> None:
    for name in os.listdir(SCRATCH):
        path = os.path.join(SCRATCH, name)
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)
        except OSError:
            pass


def _prepare_workdir(files: dict[str, str]) -> None:
    # A fresh copy per call: an earlier call may have rewritten these files.
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    for name, text in files.items():
        with open(os.path.join(WORK, name), "w", encoding="utf-8") as fh:
            fh.write(text)


def _call(request: dict, blob: bytes, files: dict[str, str]) -> tuple[dict, bytes]:
    limits = request.get("limits", {})
    timeout = float(limits.get("timeout", 5))
    max_result = int(limits.get("result_bytes", 64 << 20))
    max_output = int(limits.get("output_bytes", 64 << 10))
    _prepare_workdir(files)

    res_r, res_w = os.pipe()
    out_r, out_w = os.pipe()
    st_r, st_w = os.pipe()
    started = time.monotonic()
    middle = os.fork()
    if middle == 0:
        try:
            os.close(res_r)
            os.close(out_r)
            os.close(st_r)
            _middle(request, blob, res_w, out_w, st_w, timeout)
        finally:
            os._exit(70)
    for fd in (res_w, out_w, st_w):
        os.close(fd)

    result, output, too_large, output_total = _drain(res_r, out_r, max_result, max_output,
                                                     deadline=started + timeout + 10)
    with os.fdopen(st_r, "rb") as fh:
        status_raw = fh.read(4096)
    try:
        os.kill(middle, signal.SIGKILL)
    except ProcessLookupError:
        pass
    os.waitpid(middle, 0)
    _kill_leftovers()
    try:
        status = json.loads(status_raw) if status_raw else {"lost": True}
    except ValueError:
        status = {"lost": True}
    reply = {
        "ok": True,
        "status": status,
        "wall_ms": round((time.monotonic() - started) * 1000, 2),
        "output": output.decode("utf-8", "replace"),
        "output_bytes": output_total,
        "result_too_large": too_large,
    }
    return reply, result


def _drain(res_r: int, out_r: int, max_result: int, max_output: int, deadline: float):
    sel = selectors.DefaultSelector()
    sel.register(res_r, selectors.EVENT_READ)
    sel.register(out_r, selectors.EVENT_READ)
    result, output = bytearray(), bytearray()
    too_large, output_total = False, 0
    while sel.get_map():
        left = deadline - time.monotonic()
        if left <= 0:
            break
        for key, _ in sel.select(left):
            chunk = os.read(key.fd, 1 << 16)
            if not chunk:
                sel.unregister(key.fd)
                os.close(key.fd)
                continue
            if key.fd == res_r:
                result += chunk
                if len(result) > max_result:
                    too_large = True
                    result.clear()
                    sel.unregister(res_r)
                    os.close(res_r)  # the writer gets EPIPE and dies
            else:
                output_total += len(chunk)
                if len(output) < max_output:
                    output += chunk[: max_output - len(output)]
    for key in list(sel.get_map().values()):
        os.close(key.fd)
    return bytes(result), bytes(output), too_large, output_total


def _kill_leftovers() -> None:
    # Without nested namespaces a call could leave processes behind in ours;
    # signalling -1 reaches every process we may signal except ourselves and PID 1.
    # Only inside our own PID namespace: unsandboxed, -1 would be the whole host.
    if os.environ.get("GRADER_IN_SANDBOX") != "1":
        return
    try:
        os.kill(-1, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _middle(request, blob, res_w, out_w, st_w, timeout) -> None:
    nested = _libc.unshare(_CLONE_NEWUSER | _CLONE_NEWPID | _CLONE_NEWNS) == 0
    inner = os.fork()
    if inner == 0:
        try:
            os.close(st_w)
            _inner(request, blob, res_w, out_w, nested)
        finally:
            os._exit(71)
    os.close(res_w)
    os.close(out_w)
    started = time.monotonic()
    status = {"timeout": False, "exit": None, "signal": None}
    pidfd = os.pidfd_open(inner)
    sel = selectors.DefaultSelector()
    sel.register(pidfd, selectors.EVENT_READ)
    if not sel.select(timeout):
        status["timeout"] = True
        os.kill(inner, signal.SIGKILL)
    _, code = os.waitpid(inner, 0)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    if os.WIFSIGNALED(code):
        status["signal"] = os.WTERMSIG(code)
    else:
        status["exit"] = os.WEXITSTATUS(code)
    status["wall_ms"] = round((time.monotonic() - started) * 1000, 2)
    status["cpu_ms"] = round((usage.ru_utime + usage.ru_stime) * 1000, 2)
    status["max_rss_kb"] = usage.ru_maxrss
    status["nested"] = nested
    os.write(st_w, json.dumps(status).encode())
    os._exit(0)


def _drop_capabilities() -> None:
    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]

    header, data = Header(0x20080522, 0), (Data * 2)()
    if _libc.capset(ctypes.byref(header), data) != 0:
        os._exit(72)


def _vm_size() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _set_limits(limits: dict, device: str) -> None:
    cpu = int(float(limits.get("timeout", 5))) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    fsize = int(limits.get("file_bytes", 16 << 20))
    resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
    nproc = int(limits.get("processes", 32))
    resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
    if device != "cuda":
        # CUDA reserves vast virtual ranges, so address-space limits only suit the CPU.
        memory = int(limits.get("memory_bytes", 1 << 30))
        vm = _vm_size() + memory
        resource.setrlimit(resource.RLIMIT_AS, (vm, vm))


def _inner(request, blob, res_w, out_w, nested) -> None:
    from grader.engine import wire

    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if nested:
        _drop_capabilities()
    os.dup2(out_w, 1)
    os.dup2(out_w, 2)
    os.closerange(3, res_w)
    os.closerange(res_w + 1, 65536)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an oversized write fails instead of killing
    device = request.get("device", "cpu")
    _set_limits(request.get("limits", {}), device)
    os.chdir(WORK)
    sys.path.insert(0, WORK)

    try:
        frame = _invoke(request, blob, device, wire)
    except BaseException as exc:  # noqa: BLE001 - everything the student raises is feedback
        frame = wire.pack({"ok": False, "error": _describe(exc)})
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:  # noqa: BLE001
        pass
    view = memoryview(frame)
    while view:
        view = view[os.write(res_w, view):]
    os._exit(0)


def _invoke(request, blob, device, wire) -> bytes:
    import importlib
    import torch

    for path in request.get("block", []):
        _block(path)
    args = wire.to_sandbox(wire.decode(request.get("args", {"list": []}), blob))
    kwargs = wire.to_sandbox(wire.decode(request.get("kwargs", {"dict": []}), blob))
    if device == "cuda":
        args, kwargs = _to_device(args, torch), _to_device(kwargs, torch)
    module = importlib.import_module(request.get("module", "submission"))
    func = getattr(module, request["function"], None)
    if func is None:
        raise AttributeError(f"your submission defines no function named {request['function']!r}")
    value = func(*args, **kwargs)
    try:
        tree, data = wire.encode({"value": value, "args": args, "kwargs": kwargs})
    except wire.WireError as exc:
        return wire.pack({"ok": False, "error": {"kind": "unencodable", "type": "ValueError",
                                                 "message": str(exc), "traceback": []}})
    return wire.pack({"ok": True, "result": tree}, data)


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


def _block(path: str) -> None:
    """Make torch.x.y unavailable to the submission (an exercise that asks for it by hand)."""
    import importlib
    import types

    message = f"{path} is not available in this exercise: compute it yourself with autograd"

    def refuse(*_args, **_kwargs):
        raise RuntimeError(message)

    module_name, _, attr = path.rpartition(".")
    try:
        target = importlib.import_module(path)
    except ImportError:
        target = None
    if isinstance(target, types.ModuleType):
        class Blocked(types.ModuleType):
            def __getattr__(self, name):
                raise RuntimeError(message)
        sys.modules[path] = Blocked(path)
        parent = importlib.import_module(module_name)
        setattr(parent, attr, sys.modules[path])
    else:
        setattr(importlib.import_module(module_name), attr, refuse)


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
