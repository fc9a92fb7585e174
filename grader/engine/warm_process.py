"""The trusted side's handle on one warm process: started under bubblewrap in a cgroup
of its own, spoken to in frames over two pipes, ended with everything it started.

Both rooms use it: :class:`grader.engine.sandbox.Sandbox` (the student's code) and
:class:`grader.engine.exercise_sandbox.ExerciseSandbox` (the exercise's hidden tests).
If the warm process dies or stops answering, what was in flight fails and the next
request starts a new one.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from grader.engine import cgroup, uids
from grader.engine.bwrap import Room, bwrap_command
from grader.inside import wire
from grader.settings import Settings, settings as load_settings

log = logging.getLogger(__name__)


class SandboxUnavailable(RuntimeError):
    """The sandbox cannot be made here; the message says how to fix that."""


def start_together(*processes: WarmProcess) -> None:
    """Start those of ``processes`` that are not running, side by side: each imports torch
    for a second or more, so one after the other the first grade waited for both."""
    launched, failure = [], None
    for process in processes:
        try:
            if process._launch():
                launched.append(process)
        except SandboxUnavailable as exc:
            failure = exc
            break
    for process in launched:  # each one launched is awaited, even after a failure: none is left half-started
        try:
            process._await_ready()
        except SandboxUnavailable as exc:
            failure = failure or exc
    if failure is not None:
        raise failure


class WarmProcess:
    room: Room
    idle_memory_bytes: int  # what its processes may hold together between requests

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

    @property
    def uid(self) -> int:
        """The warm process's uid; its children run as uid + 1."""
        raise NotImplementedError

    # ------------------------------------------------------------ lifecycle

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> None:
        start_together(self)

    def _launch(self) -> bool:
        """Start the process unless it runs; True when it did (it then says ready, see
        ``_await_ready``)."""
        if self.alive:
            return False
        if self._proc is not None or self.cgroup is not None:
            self.close()  # the last one died on its own: end what is left of it first
        if self.unsafe:
            cmd = self.room.unsandboxed_command(sys.executable)
            self._scratch = tempfile.mkdtemp(prefix=f"grader-unsafe-{self.room.name}-")
            cwd = self._scratch
            env = {"PATH": "/usr/bin:/bin", "HOME": cwd, "TMPDIR": cwd, "GRADER_SCRATCH": cwd,
                   "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1", "GRADER_ALLOW_ROOT": "1"}
        else:
            if shutil.which("bwrap") is None:
                raise SandboxUnavailable(
                    "bubblewrap is not installed, so submissions cannot be sandboxed. "
                    "Install it (Debian/Ubuntu: `sudo apt-get install bubblewrap`), or, on a "
                    "development machine only, set GRADER_UNSAFE_NO_SANDBOX=1.")
            try:
                uid = self.uid
            except uids.NoFreeUids as exc:
                raise SandboxUnavailable(str(exc)) from None
            cmd = bwrap_command(cuda=self.cuda, uid=uid, tmp_bytes=self.config.sandbox_tmp_mb << 20,
                                room=self.room)
            env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
            cwd = "/"
            try:
                self.cgroup = cgroup.SandboxCgroup.create(self.config.sandbox_cgroup,
                                                          cpu_weight=self.config.sandbox_cpu_weight)
                self.cgroup.set_memory_max(self.idle_memory_bytes)
            except cgroup.CgroupUnavailable as exc:
                self.cgroup = None
                raise SandboxUnavailable(str(exc)) from None
        self._stderr = tempfile.TemporaryFile()
        # bwrap joins the sandbox's cgroup before it runs: nothing of it is ever outside.
        try:
            self._proc = _spawn(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=self._stderr, env=env, cwd=cwd, close_fds=True,
                                          preexec_fn=_die_with_parent if self.unsafe else self.cgroup.join)
        except (OSError, subprocess.SubprocessError) as exc:
            self.close()
            raise SandboxUnavailable(f"the sandbox could not be started in its cgroup ({exc}). " + cgroup.FIX) from None
        self.starts += 1
        os.set_blocking(self._proc.stdin.fileno(), False)  # so that every send can have a deadline
        wire.widen(self._proc.stdin.fileno(), self._proc.stdout.fileno())
        return True

    def _await_ready(self) -> None:
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
            raise SandboxUnavailable("the sandbox would run untrusted code as root; refusing")
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

    # ------------------------------------------------------------ frames

    def send(self, header: dict, *parts, deadline: float) -> None:
        """One frame to the warm process, its blob ``parts`` unjoined; a warm process that
        stops reading is a FrameTimeout at ``deadline``, never a worker blocked for good."""
        assert self._proc is not None
        wire.write_frame(self._proc.stdin.fileno(), header, *parts, deadline=deadline)

    def receive(self, *, deadline: float, max_header: int = 4 << 20, max_blob: int = 0) -> tuple[dict, bytearray]:
        assert self._proc is not None
        return wire.read_frame(self._proc.stdout.fileno(), max_header=max_header, max_blob=max_blob,
                               deadline=deadline)

    def memory_mark(self) -> tuple[int, int]:
        """The sandbox's counters of memory kills now, to tell later whether one happened
        since ((0, 0) where it has no cgroup)."""
        return self.cgroup.memory_mark() if self.cgroup is not None else (0, 0)

    def failed(self, exc: Exception) -> None:
        """The warm process broke the protocol or died: end it; the next request starts anew."""
        time.sleep(0.05)  # let a dying warm process finish its last words
        log.warning("%s sandbox failed (%s); its last output: %s", self.room.name, exc, self._stderr_text()[-2000:])
        self.close()


_keeper: tuple[int, ThreadPoolExecutor] | None = None
_keeper_lock = threading.Lock()


def _spawn(*args, **kwargs) -> subprocess.Popen:
    """``subprocess.Popen`` from a thread that lasts as long as the process. bubblewrap's
    --die-with-parent is the kernel's parent-death signal, which follows the *thread* that
    forked it: a sandbox started from a thread that then ends (a worker's start-ahead
    thread) was killed at once, and the next grade paid for its start again."""
    if threading.current_thread() is threading.main_thread():
        return subprocess.Popen(*args, **kwargs)
    global _keeper
    with _keeper_lock:
        if _keeper is None or _keeper[0] != os.getpid():  # a forked child has none of its parent's threads
            _keeper = (os.getpid(), ThreadPoolExecutor(1, thread_name_prefix="grader-sandbox-starts"))
        starts = _keeper[1]
    return starts.submit(subprocess.Popen, *args, **kwargs).result()


def _die_with_parent() -> None:
    # bwrap's --die-with-parent, for the unsandboxed development mode.
    import ctypes
    ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
