"""The trusted side of the sandbox: starting bubblewrap, and calls across the wall.

One :class:`Sandbox` owns one warm process (``inside/warm.py``) inside bubblewrap:
no network, a read-only system, a private /tmp, a clean environment, an
unprivileged uid. It serves one submission at a time. If the warm process dies
or stops answering, the call in flight fails and the next call starts a new one.
"""

from __future__ import annotations

import glob
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader.engine import cgroup
from grader.engine.inside import wire
from grader.settings import Settings, settings as load_settings

log = logging.getLogger(__name__)

# The one folder of ours the sandbox sees, as its top-level package ``inside``.
INSIDE_PACKAGE = Path(__file__).resolve().parent / "inside"
MASK = Path(__file__).resolve().parent / "masked"
SANDBOX_CODE = "/opt/grader"
SANDBOX_VENV = "/opt/venv"
# What the sandbox's processes may hold together between calls (the warm process with
# torch, the children forked ahead); a call may add its own limit to what is held then.
IDLE_MEMORY_BYTES = 3 << 30
# A CUDA call's first use of the GPU maps the CUDA libraries (gigabytes of page cache,
# charged to the sandbox that touches them first) and the driver's host-side buffers:
# allowed on top of the call's own limit, and bounded like it.
CUDA_HOST_BYTES = 4 << 30


def _boot(code_parent: str) -> str:
    return f"import sys; sys.path.insert(0, {code_parent!r}); from inside.warm import main; main()"


class SandboxUnavailable(RuntimeError):
    """The sandbox cannot be made here; the message says how to fix that."""


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


@dataclass
class CallOutcome:
    """What one call into the sandbox came to.

    kind is "ok", "exception", "timeout", "memory", "exit", "crash",
    "too_large", "unencodable", "malformed" (the reply failed to decode: the
    student's doing, as only their code can write it) or "sandbox" (the sandbox
    itself failed).
    """

    kind: str
    value: Any = None
    args: list = field(default_factory=list)
    kwargs: dict = field(default_factory=dict)
    error: wire.StudentException | None = None
    detail: str = ""
    output: str = ""
    output_bytes: int = 0
    wall_ms: float = 0.0


def sandbox_python() -> str:
    """The path of this process's Python as the sandbox sees it."""
    if sys.prefix == sys.base_prefix:
        return sys.executable
    return os.path.join(SANDBOX_VENV, os.path.relpath(sys.executable, sys.prefix))


def bwrap_command(*, cuda: bool, uid: int, tmp_bytes: int = 512 << 20,
                  argv: list[str] | None = None, extra: list[str] = ()) -> list[str]:
    """The bubblewrap command line for one warm process.

    As root, bubblewrap runs privileged with three capabilities, which the warm process
    uses to mount a /tmp of ``tmp_bytes`` and to drop to the uids ``uid`` (itself) and
    ``uid + 1`` (the calls) before it reads any request; it keeps none of them.
    ``argv`` replaces the warm process's arguments to Python (the benchmark's baseline
    runs pytest instead), ``extra`` adds bubblewrap options.
    """
    cmd = ["bwrap", "--die-with-parent", "--new-session", "--as-pid-1",
           "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
           "--hostname", "sandbox"]
    if os.geteuid() == 0:
        # Privileged bwrap without a user namespace, so that the warm process can
        # drop to a real unprivileged uid (RLIMIT_NPROC then holds) and nothing
        # owned by root outside looks like ours inside.
        cmd += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SYS_ADMIN"]
    else:
        cmd += ["--unshare-user", "--uid", "65534", "--gid", "65534"]
    for top in ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        path = f"/{top}"
        if os.path.islink(path):
            cmd += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            cmd += ["--ro-bind", path, path]
    for path in ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime"):
        cmd += ["--ro-bind-try", path, path]
    base = os.path.realpath(sys.base_prefix)
    if not base.startswith("/usr/"):
        cmd += ["--ro-bind", base, base]  # where the virtual environment says its Python is
    if sys.prefix != sys.base_prefix:
        # At a fixed place: the checkout may be anywhere, /tmp included, which the
        # sandbox replaces with its own.
        cmd += ["--ro-bind", os.path.realpath(sys.prefix), SANDBOX_VENV]
    cmd += ["--ro-bind", str(INSIDE_PACKAGE), f"{SANDBOX_CODE}/inside"]
    for path in installed_copies():
        cmd += ["--ro-bind", str(MASK), path]  # `pip install .` put the grader where the sandbox sees it
    cmd = _with_open_parents(cmd)
    cmd += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--tmpfs", "/tmp",
            "--chdir", "/tmp", "--clearenv"]
    env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8", "PYTHONUNBUFFERED": "1",
           "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "GRADER_IN_SANDBOX": "1", "GRADER_SANDBOX_UID": str(uid), "GRADER_TMP_BYTES": str(tmp_bytes)}
    if cuda:
        for node in sorted(glob.glob("/dev/nvidia*")):
            cmd += ["--dev-bind", node, node]
        cmd += ["--ro-bind", "/sys", "/sys"]
        for path in ("/etc/nvidia",):  # /usr/local/{cuda,nvidia} come with /usr (binding a
            cmd += ["--ro-bind-try", path, path]  # symlink there onto itself fails)
        if os.environ.get("LD_LIBRARY_PATH"):
            env["LD_LIBRARY_PATH"] = os.environ["LD_LIBRARY_PATH"]
    for key, value in env.items():
        cmd += ["--setenv", key, value]
    argv = argv if argv is not None else ["-I", "-B", "-c", _boot(SANDBOX_CODE)]
    return cmd + list(extra) + ["--", sandbox_python(), *argv]


def installed_copies(locations: list[str] | None = None) -> list[str]:
    """Where the sandbox would see the ``grader`` package: a non-editable install puts it
    into the virtual environment or /usr/local, both mounted. Over each goes ``masked/``,
    whose ``__init__`` refuses the import, so that only ``inside/`` is importable there."""
    if locations is None:
        import importlib.util

        spec = importlib.util.find_spec("grader")
        locations = list(spec.submodule_search_locations or []) if spec else []
    venv, base = os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix)
    hidden = []
    for location in locations:
        real = os.path.realpath(location)
        if sys.prefix != sys.base_prefix and _under(real, venv):
            hidden.append(os.path.join(SANDBOX_VENV, os.path.relpath(real, venv)))
        elif _under(real, base) or any(_under(real, f"/{top}") for top in ("usr", "lib", "lib64")):
            hidden.append(real)
    return hidden


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _with_open_parents(cmd: list[str]) -> list[str]:
    """bwrap makes missing parents of a mount point 0700; the sandbox user must pass them."""
    targets = [cmd[i + 2] for i, arg in enumerate(cmd)
               if arg in ("--ro-bind", "--ro-bind-try", "--symlink", "--dev-bind")]
    parents = sorted({str(p) for t in targets for p in Path(t).parents if str(p) != "/"},
                     key=lambda p: p.count("/"))
    opened = []
    for parent in parents:
        opened += ["--perms", "0755", "--dir", parent]
    split = cmd.index("--hostname") + 2
    return cmd[:split] + opened + cmd[split:]


def unsandboxed_command(python: str) -> list[str]:
    return [python, "-I", "-B", "-c", _boot(str(INSIDE_PACKAGE.parent))]


class Sandbox:
    def __init__(self, *, cuda: bool = False, config: Settings | None = None):
        self.cuda = cuda
        self.config = config or load_settings()
        self.unsafe = self.config.sandbox == "none"
        self._proc: subprocess.Popen | None = None
        self._stderr = None
        self._scratch: str | None = None
        self.cgroup: cgroup.SandboxCgroup | None = None
        self.info: dict = {}
        self.starts = 0
        self.lock = threading.Lock()

    # ------------------------------------------------------------ lifecycle

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> None:
        if self.alive:
            return
        if self._proc is not None or self.cgroup is not None:
            self.close()  # the last one died on its own: end what is left of it first
        python = sys.executable
        if self.unsafe:
            cmd = unsandboxed_command(python)
            self._scratch = tempfile.mkdtemp(prefix="grader-unsafe-")
            cwd = self._scratch
            env = {"PATH": "/usr/bin:/bin", "HOME": cwd, "TMPDIR": cwd, "GRADER_SCRATCH": cwd,
                   "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1", "GRADER_ALLOW_ROOT": "1"}
        else:
            if shutil.which("bwrap") is None:
                raise SandboxUnavailable(
                    "bubblewrap is not installed, so submissions cannot be sandboxed. "
                    "Install it (Debian/Ubuntu: `sudo apt-get install bubblewrap`), or, on a "
                    "development machine only, set GRADER_UNSAFE_NO_SANDBOX=1.")
            cmd = bwrap_command(cuda=self.cuda, uid=self.config.sandbox_uid,
                                tmp_bytes=self.config.sandbox_tmp_mb << 20)
            env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
            cwd = "/"
            try:
                self.cgroup = cgroup.SandboxCgroup.create(self.config.sandbox_cgroup)
                self.cgroup.set_memory_max(IDLE_MEMORY_BYTES)
            except cgroup.CgroupUnavailable as exc:
                self.cgroup = None
                raise SandboxUnavailable(str(exc)) from None
        self._stderr = tempfile.TemporaryFile()
        # bwrap joins the sandbox's cgroup before it runs: nothing of it is ever outside.
        try:
            self._proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=self._stderr, env=env, cwd=cwd, close_fds=True,
                                          preexec_fn=_die_with_parent if self.unsafe else self.cgroup.join)
        except (OSError, subprocess.SubprocessError) as exc:
            self.close()
            raise SandboxUnavailable(f"the sandbox could not be started in its cgroup ({exc}). " + cgroup.FIX) from None
        self.starts += 1
        try:
            ready, _ = wire.read_frame(self._proc.stdout.fileno(), max_header=1 << 16, max_blob=0,
                                       deadline=time.monotonic() + 120)
        except wire.WireError:
            detail = self._stderr_text()
            self.close()
            raise SandboxUnavailable(
                "bubblewrap could not start the sandbox: " + (detail or "no error output") +
                ". If it reports a permission problem with namespaces, enable unprivileged user "
                "namespaces (`sysctl -w kernel.unprivileged_userns_clone=1`; on Ubuntu 24.04 and "
                "later also `sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`), or run the "
                "worker as root, which bubblewrap then uses to drop to an unprivileged uid.") from None
        if not ready.get("ready"):
            self.close()
            raise SandboxUnavailable("the sandbox did not report ready")
        if not self.unsafe and ready.get("uid") == 0:
            self.close()
            raise SandboxUnavailable("the sandbox would run submissions as root; refusing")
        self.info = ready

    def close(self) -> None:
        proc, self._proc = self._proc, None
        group, self.cgroup = self.cgroup, None
        if group is not None:
            group.kill()  # the sandbox's PID 1 and all below it, not only bwrap
        if proc is not None:
            try:
                proc.kill()
            except ProcessLookupError:
                pass
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                log.error("bubblewrap (pid %d) did not end within 10 s of SIGKILL", proc.pid)
            for stream in (proc.stdin, proc.stdout):
                stream.close()
        if group is not None:
            group.remove()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None

    def _stderr_text(self) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0)
        return self._stderr.read(4000).decode("utf-8", "replace").strip()

    # ------------------------------------------------------------ requests

    def _request(self, header: dict, blob: bytes = b"", *, timeout: float,
                 max_blob: int = 0) -> tuple[dict, bytes]:
        self.start()
        assert self._proc is not None
        try:
            self._proc.stdin.write(wire.pack(header, blob))
            self._proc.stdin.flush()
            reply, raw = wire.read_frame(self._proc.stdout.fileno(), max_header=4 << 20,
                                         max_blob=max_blob, deadline=time.monotonic() + timeout)
        except (OSError, wire.WireError) as exc:
            time.sleep(0.05)  # let a dying warm process finish its last words
            log.warning("sandbox failed (%s); its last output: %s", exc, self._stderr_text()[-2000:])
            self.close()
            raise
        if header.get("op") == "call" and reply.get("isolated") is not True:
            raise NotIsolated(reply, raw)
        return reply, raw

    def reset(self) -> None:
        """Between submissions: end anything the last one left running."""
        if self.alive:
            try:
                self._request({"op": "reset"}, timeout=30)
                if self.cgroup is not None:
                    self.cgroup.set_memory_max(IDLE_MEMORY_BYTES)
            except (OSError, wire.WireError):
                pass

    def call(self, files: dict[str, str], function: str, args: list, kwargs: dict, *,
             module: str = "submission", limits: Limits = Limits(), device: str = "cpu",
             block: tuple[str, ...] = ()) -> CallOutcome:
        """One call of ``function``, within what the sandbox's cgroup lets it add."""
        self.start()
        try:
            ooms = self._bound_memory(limits)
        except OSError as exc:
            return CallOutcome("sandbox", detail=f"the sandbox's cgroup failed ({exc})")
        out = self._call(files, function, args, kwargs, module=module, limits=limits, device=device,
                         block=block)
        return self._blame(out, ooms, limits)

    def _call(self, files: dict[str, str], function: str, args: list, kwargs: dict, *,
              module: str, limits: Limits, device: str, block: tuple[str, ...]) -> CallOutcome:
        try:
            # TensorState from an earlier call becomes a tensor again.
            sent = {"args": wire.to_sandbox(list(args)), "kwargs": wire.to_sandbox(dict(kwargs))}
            tree, blob = wire.encode(sent)
            # The child's request travels inside ours: the warm process passes it on unread.
            request = wire.pack({"files": files, "module": module, "function": function,
                                 "args": tree["dict"][0][1], "kwargs": tree["dict"][1][1],
                                 "limits": limits.to_wire(), "device": device, "block": list(block)}, blob)
            reply, raw = self._request({"op": "call", "limits": limits.to_wire()}, request,
                                       timeout=limits.timeout + 20,
                                       max_blob=limits.result_bytes + limits.output_bytes + (1 << 20))
        except SandboxUnavailable:
            raise
        except (OSError, wire.WireError) as exc:
            return CallOutcome("sandbox", detail=f"the sandbox failed during the call ({exc})")
        out = _outcome(reply, raw, limits)
        if out.kind == "ok" and not _same_arguments(out, args, kwargs):
            # Only a reply written past the sandbox's encoder can differ: tests index into these.
            out.kind, out.value = "malformed", None
            out.detail = "your code sent back something that is not a result (not the arguments it was given)"
        return out

    def _bound_memory(self, limits: Limits) -> tuple[int, int]:
        """Let the call add its memory (and its /tmp) to what the sandbox holds now, no
        more, whichever way it allocates. Returns the OOM-kill counts before the call."""
        if self.cgroup is None:
            return 0, 0
        allowance = limits.memory_bytes + limits.tmp_bytes + (CUDA_HOST_BYTES if self.cuda else 0)
        self.cgroup.set_memory_max(self.cgroup.memory_usage() + allowance)
        return self.cgroup.oom_kills(), cgroup.host_oom_kills()

    def _blame(self, out: CallOutcome, ooms: tuple[int, int], limits: Limits) -> CallOutcome:
        """A process killed by the kernel for memory: the sandbox's own limit is the
        student's; the host running out is the grader's (retried, never a score)."""
        if self.cgroup is None or out.kind not in ("crash", "sandbox", "exit", "timeout"):
            return out
        if self.cgroup.oom_kills() > ooms[0]:
            out.kind = "memory"
            out.detail = f"memory limit exceeded ({limits.memory_bytes >> 20} MiB per call)"
        elif out.kind == "crash" and cgroup.host_oom_kills() > ooms[1]:
            out.kind = "sandbox"
            out.detail = "the grading machine ran out of memory during the call"
        return out


def _die_with_parent() -> None:
    # bwrap's --die-with-parent, for the unsandboxed development mode.
    import ctypes
    ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG


def _outcome(reply: dict, raw: bytes, limits: Limits) -> CallOutcome:
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
        out.detail = f"time limit exceeded ({limits.timeout:g} s per call)"
        return out
    if len(raw):
        try:
            header, blob = wire.unpack(raw, max_header=4 << 20, max_blob=limits.result_bytes)
            if header.get("ok") is True:
                result = wire.decode(header.get("result"), blob)
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
        out.kind, out.detail = "timeout", f"CPU time limit exceeded ({limits.timeout:g} s per call)"
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
    import torch  # loaded already, by wire

    def tensor(v):
        return isinstance(v, (wire.TensorState, torch.Tensor))

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
