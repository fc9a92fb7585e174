"""The process walls every sandbox of ours stands on, student's and exercise's alike.

A warm process (PID 1 of its sandbox, started by root through privileged bubblewrap)
calls :func:`become_sandbox_user` once: a size-capped /tmp, then two unprivileged uids
outside any user namespace (it runs as A and keeps B, the uid of the children that run
untrusted code, as its saved uid). Each such child then calls :func:`enter` before it
runs anything untrusted: uid B for good, the parent-death signal, a user, IPC, network and
mount namespace of its own with a private /tmp of bounded size, the folder it works in
read-only, no further user namespaces, no capabilities; in the student's sandbox also a
PID namespace of its own, with its own /proc. :func:`sweep` ends every process of the
sandbox but the ones kept.

Unsandboxed (the development mode) the same calls do what they can: the uid changes and
namespaces are skipped, and the scratch folder is a private directory of its own.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import resource
import select
import shutil
import signal
from typing import Callable

from .seccomp import ARCHES

# Inside bubblewrap this is the sandbox's private tmpfs. Unsandboxed (development
# mode) it is a fresh directory of its own: never the host's /tmp, which we empty.
SCRATCH = os.environ.get("GRADER_SCRATCH", "/tmp")
IN_SANDBOX = os.environ.get("GRADER_IN_SANDBOX") == "1"

# Exit statuses of a child whose walls did not stand: the sandbox's failure, never the
# untrusted code's (which has not run yet).
NOT_ISOLATED = 74
PARENT_GONE = 75

_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
_KEYCTL_JOIN_SESSION_KEYRING = 1
_CLONE_NEWNS = 0x00020000
_CLONE_NEWIPC = 0x08000000
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWPID = 0x20000000
_CLONE_NEWNET = 0x40000000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_REMOUNT, _MS_BIND = 1, 2, 4, 8, 0x20, 0x1000
_MS_REC, _MS_PRIVATE = 0x4000, 0x40000

libc = ctypes.CDLL(None, use_errno=True)

child_uid: int | None = None  # the uid untrusted children run as, when it differs from ours


# The parts of /proc bubblewrap covers read-only. A call's own /proc covers them again.
_PROC_COVERS = ("irq", "bus")
# Counters of the whole machine a call's own /proc would still show: "processes" in stat
# counts every fork since boot, so a call that forks k times tells the next call k (a hidden
# test's input told to a visible one). Each reads as empty in a call.
_PROC_EMPTIED = ("stat", "vmstat", "schedstat", "softirqs", "interrupts")


def become_sandbox_user(*, calls_mount_proc: bool = False) -> None:
    """Started by root (privileged bubblewrap): mount a size-capped /tmp, then drop
    to two unprivileged uids outside any user namespace. We run as A and keep B as
    our saved uid; each child becomes B for good. RLIMIT_NPROC then holds, files
    owned by root stay unreadable, and a child cannot prlimit or ptrace us (uids differ).

    ``calls_mount_proc``: the children mount a /proc of their own PID namespace. The kernel
    lets a user namespace mount a proc only where the proc it already sees is shown whole,
    so bubblewrap's read-only covers of /proc/irq and /proc/bus go here (their files are
    root's to write, and neither uid is root); each child's own /proc covers them again."""
    global child_uid
    uid = int(os.environ.pop("GRADER_SANDBOX_UID", "0") or 0)
    tmp_bytes = int(os.environ.pop("GRADER_TMP_BYTES", "0") or 0)
    if os.getuid() == 0 and uid:
        if tmp_bytes and IN_SANDBOX:
            options = f"size={tmp_bytes},mode=1777".encode()
            if libc.mount(b"tmpfs", b"/tmp", b"tmpfs", _MS_NOSUID | _MS_NODEV, options) != 0:
                raise SystemExit(f"cannot mount /tmp (errno {ctypes.get_errno()})")
        if calls_mount_proc and IN_SANDBOX:
            for name in _PROC_COVERS:
                # (A cover is /proc/<name> bound onto itself: os.path.ismount cannot tell.)
                if libc.umount2(f"/proc/{name}".encode(), 0) != 0 and ctypes.get_errno() not in (
                        errno.EINVAL, errno.ENOENT):
                    raise SystemExit(f"cannot uncover /proc/{name} (errno {ctypes.get_errno()})")
        child = uid + 1
        os.setgroups([])
        os.setresgid(uid, uid, child)
        os.setresuid(uid, uid, child)
        child_uid = child
        # A change of uid clears the parent-death signal bubblewrap set (which then still
        # only arrives where bubblewrap may signal us: a warm process watches its request
        # pipe instead, and ends when the trusted side is gone).
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    join_new_keyring()
    if os.getuid() == 0 and os.environ.get("GRADER_ALLOW_ROOT") != "1":
        raise SystemExit("refusing to run untrusted code as root")
    not_dumpable()  # children cannot read our memory or /proc entries


def not_dumpable() -> None:
    """No process of our uid may read or write our memory, nor our /proc files (they become
    root's); a child forked from now on starts the same."""
    libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)


def dumpable() -> None:
    libc.prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)


class as_child_user:
    """Act as the children's uid for a moment: signals need a matching uid."""

    def __enter__(self):
        if child_uid is not None:
            os.setegid(child_uid)
            os.seteuid(child_uid)

    def __exit__(self, *exc):
        if child_uid is not None:
            os.seteuid(os.getuid())
            os.setegid(os.getgid())
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # each change clears it


def join_new_keyring() -> int:
    """A fresh, empty session keyring: the worker's (systemd, a container runtime) and
    an earlier child's keys are out of reach."""
    numbers = ARCHES.get(platform.machine(), (0, {}, None))[1]
    if "keyctl" not in numbers:
        return -1
    return libc.syscall(numbers["keyctl"], _KEYCTL_JOIN_SESSION_KEYRING, None)


def own_session() -> None:
    """A session of its own (and so an autogroup: renicing it slows only this child;
    unsandboxed, the session is also what gets killed afterwards), and a fresh keyring."""
    os.setsid()
    join_new_keyring()


def enter(*, tmp_bytes: int, parent: int, folder: str, populate: Callable[[], None]) -> None:
    """A child's own walls, before anything untrusted runs: the children's uid, and
    (inside the sandbox) a user, IPC, network and mount namespace of its own with a private /tmp
    of ``tmp_bytes``, in which ``populate()`` writes ``folder``, then made read-only; no
    further user namespaces (through which an unbounded tmpfs could be mounted), and no
    capabilities left. A step that fails ends the child with NOT_ISOLATED.

    The same as :func:`enter_ahead` then :func:`enter_rest`, which a child that waits for
    its work calls apart: the first before the work is known, the second once it is."""
    enter_ahead(parent=parent)
    enter_rest(tmp_bytes=tmp_bytes, folder=folder, populate=populate)


def enter_ahead(*, parent: int, own_pids: bool = False) -> None:
    """The walls that need nothing of the work to come: the children's uid for good, the
    parent-death signal, the namespaces. With ``own_pids`` this process was forked by
    :func:`fork_own_pids` and is PID 1 of a PID namespace of its own, whose /proc it
    mounts here. Nothing of the work is here yet, and until :func:`enter_rest` the
    capabilities within its own user namespace are still held."""
    cloned = own_pids and IN_SANDBOX
    if cloned and os.getpid() != 1:
        os.write(2, b"sandbox: could not isolate the call (not the first of its own PIDs)\n")
        os._exit(NOT_ISOLATED)
    if child_uid is not None and not cloned:
        os.setresgid(child_uid, child_uid, child_uid)
        os.setresuid(child_uid, child_uid, child_uid)
    # The uid change cleared it: if the warm process dies, so does this child (in the
    # sandbox the end of its PID 1 ends it anyway; unsandboxed this is what does).
    check(libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "parent-death signal")
    if not cloned and os.getppid() != parent:
        os._exit(PARENT_GONE)  # the warm process died before the signal was set
    if not IN_SANDBOX:
        return
    uid, gid = _cloned_as if cloned else (os.getuid(), os.getgid())
    dumpable()  # else /proc/self/uid_map is not ours to write
    if not cloned:
        # A network namespace of its own too, its loopback down: no socket a call opens (and
        # no port number, nor TIME_WAIT entry, that would outlive it) is seen by another call.
        check(libc.unshare(_NAMESPACES), "unshare")
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w") as fh:
            fh.write(text)
    if cloned:
        # Forked while the warm process acted as the children's uid: that uid now for good,
        # within the namespace it owns (the warm process's own uid is not even mapped here).
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
    check(libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None), "private mounts")
    # An OOM in the sandbox's cgroup ends this child (and what it started), not the
    # warm process, which the launcher made the last choice.
    with open("/proc/self/oom_score_adj", "w") as fh:
        fh.write("1000")
    if cloned:
        _own_proc()


def enter_rest(*, tmp_bytes: int, folder: str, populate: Callable[[], None]) -> None:
    """The rest, once the work is known: a private /tmp of ``tmp_bytes`` in which
    ``populate()`` writes ``folder``, made read-only; no further user namespaces, and no
    capabilities left."""
    if not IN_SANDBOX:
        shutil.rmtree(folder, ignore_errors=True)
        populate()
        return
    check(libc.mount(b"tmpfs", b"/tmp", b"tmpfs", _MS_NOSUID | _MS_NODEV,
                     f"size={tmp_bytes},mode=1777".encode()), "private /tmp")
    populate()
    path = folder.encode()
    check(libc.mount(path, path, None, _MS_BIND, None), "work")
    check(libc.mount(None, path, None, _MS_BIND | _MS_REMOUNT | _MS_RDONLY | _MS_NOSUID | _MS_NODEV, None),
          "read-only work")
    with open("/proc/sys/user/max_user_namespaces", "w") as fh:
        fh.write("0")
    drop_capabilities()


# ---------------------------------------------------------------- a call's own PIDs
#
# Every PID of the sandbox's own namespace is handed out from one counter, which would
# outlive a call: a call that spawns threads moves it, and a later call (another test's,
# whose inputs differ) reads how far, from /proc/sys/kernel/ns_last_pid or from its own
# PIDs. In a namespace of its own, a call counts from 1 again, and its /proc shows its own
# processes only. Its first process is the namespace's init: when it ends, the kernel ends
# every process still in it.
#
# os.fork() cannot make that first process: a PID namespace takes only the children of the
# process that made it, so a child would have to make it and fork once more, and each call
# would cost two copies of the torch image where one does (each copy milliseconds of CPU to
# make and to tear down: bench/engine_latency.py). clone() makes the namespaces and the child
# in one step, with Python's own before- and after-fork work around it, as os.fork() does it.
# (The first clone, not clone3: with no stack and no thread ids its arguments read the same
# on every architecture, and kernels before 5.3 have it too.)

_CLONE_PARENT = 0x00008000
_NAMESPACES = _CLONE_NEWUSER | _CLONE_NEWIPC | _CLONE_NEWNS | _CLONE_NEWNET
_CLONE_OWN_PIDS = _NAMESPACES | _CLONE_NEWPID | signal.SIGCHLD
# Both hold the GIL across the call, as os.fork() holds it across fork().
_syscall = ctypes.PyDLL(None, use_errno=True).syscall
_syscall.restype = ctypes.c_long
_CLONE = ARCHES.get(platform.machine(), (0, {}, None))[1].get("clone")  # its number here, if known
_python = ctypes.pythonapi
_cloned_as = (0, 0)  # the uid and gid a child of fork_own_pids() maps and becomes


def fork_own_pids() -> int:
    """os.fork(), the child born PID 1 of a PID namespace of its own, in a user, IPC, mount
    and network namespace of its own that the children's uid owns (see :func:`enter_ahead`).
    Only a single-threaded process may call it (as a warm process is): unlike glibc's fork,
    no pthread_atfork handler runs, and a lock another thread held would stay held.
    Unsandboxed, a plain fork."""
    global _cloned_as
    if not IN_SANDBOX:
        return os.fork()
    _cloned_as = (child_uid, child_uid) if child_uid is not None else (os.getuid(), os.getgid())
    # The namespaces' owner is the effective uid at the clone: the children's, for a moment.
    acting = as_child_user()
    acting.__enter__()
    try:
        pid = _clone(_CLONE_OWN_PIDS)
    except BaseException:
        acting.__exit__(None, None, None)
        raise
    if pid:
        acting.__exit__(None, None, None)
    return pid  # the child acts as the children's uid still: enter_ahead() makes it for good


def fork_sibling() -> int:
    """os.fork(), the child born our parent's child rather than ours (CLONE_PARENT): our
    parent waits for it, reaps it and reads how it ended, as it does for its own. A single-
    threaded process only (see :func:`fork_own_pids`); not the first of a PID namespace."""
    return _clone(_CLONE_PARENT | signal.SIGCHLD)


def _clone(flags: int) -> int:
    """clone() with no stack of its own, wrapped in Python's own before- and after-fork work."""
    if threads("self") != 1:
        raise RuntimeError("a fork by clone() needs a process of one thread")
    if _CLONE is None:
        raise OSError(errno.ENOSYS, f"no clone() known on {platform.machine()}")
    _python.PyOS_BeforeFork()
    pid = _syscall(_CLONE, ctypes.c_ulong(flags), None, None, None, None)
    if pid == 0:
        _python.PyOS_AfterFork_Child()
        return 0
    error = ctypes.get_errno()
    _python.PyOS_AfterFork_Parent()
    if pid < 0:
        raise OSError(error, f"clone: {os.strerror(error)}")
    return pid


def _own_proc() -> None:
    """The first of its own PIDs: a session (and process group) of its own, so that
    kill(0, ...) reaches the call's processes only, and a /proc of its PID namespace."""
    if os.getsid(0) != os.getpid():
        own_session()
    check(libc.mount(b"proc", b"/proc", b"proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, None), "own /proc")
    for name in _PROC_COVERS:
        cover = f"/proc/{name}".encode()
        if os.path.isdir(cover):
            check(libc.mount(cover, cover, None, _MS_BIND, None), f"/proc/{name}")
            check(libc.mount(None, cover, None, _MS_BIND | _MS_REMOUNT | _MS_RDONLY | _MS_NOSUID
                             | _MS_NODEV | _MS_NOEXEC, None), f"read-only /proc/{name}")
    for name in _PROC_EMPTIED:
        counters = f"/proc/{name}".encode()
        if os.path.exists(counters):
            check(libc.mount(b"/dev/null", counters, None, _MS_BIND, None), f"/proc/{name}")


def alive(pid: int) -> bool:
    """Our child ``pid`` has not ended (one that has is reaped here)."""
    try:
        return os.waitpid(pid, os.WNOHANG) == (0, 0)
    except ChildProcessError:
        return False


def readable(fd: int, within: float = 0.0) -> bool:
    """Whether ``fd`` has something to read (or has closed), waiting at most ``within`` seconds."""
    return bool(select.select([fd], [], [], max(0.0, within))[0])


def threads(pid: int | str) -> int:
    """How many threads the process has (0: none, it is gone)."""
    try:
        return len(os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return 0


def runnable(pid: int) -> bool:
    """Not stopped or traced: a process waiting for its work sleeps ("S")."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            state = stat.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in (b"T", b"t", b"Z", b"X")


def scheduling(pid: int) -> tuple | None:
    """What a process hands on to every child it forks and another process of its uid could
    change: nice value, policy, priority, CPUs. (0: this process.)"""
    try:
        return (os.getpriority(os.PRIO_PROCESS, pid), os.sched_getscheduler(pid),
                os.sched_getparam(pid).sched_priority, frozenset(os.sched_getaffinity(pid)))
    except OSError:
        return None


def check(result: int, step: str) -> None:
    if result != 0:
        os.write(2, f"sandbox: could not isolate the call ({step}: {os.strerror(ctypes.get_errno())})\n".encode())
        os._exit(NOT_ISOLATED)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


# Made once, here: making ctypes structures in each child took half a millisecond of its call.
_NO_CAPABILITIES = (ctypes.byref(_CapHeader(0x20080522, 0)), (_CapData * 2)())


def drop_capabilities() -> None:
    check(libc.capset(*_NO_CAPABILITIES), "drop capabilities")


def set_limits(*, cpu_seconds: float, file_bytes: int, processes: int, address_space: int | None = None) -> None:
    """The child's own rlimits (the cgroup bounds the sandbox as a whole)."""
    cpu = int(cpu_seconds) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
    resource.setrlimit(resource.RLIMIT_NPROC, (processes, processes))
    if address_space is not None:
        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))


_PAGE = os.sysconf("SC_PAGE_SIZE")


def vm_size() -> int:
    """The address space mapped now (statm's first field, in pages: one short line)."""
    with open("/proc/self/statm", "rb") as fh:
        return int(fh.read().split(maxsplit=1)[0]) * _PAGE


def close_all_but(*keep: int) -> None:
    """Close every descriptor from 3 up but ``keep``."""
    low = 3
    for fd in sorted(keep):
        if fd >= low:
            os.closerange(low, fd)
            low = fd + 1
    os.closerange(low, 65536)


dying: set[int] = set()  # killed, not yet reaped


def sweep(keep: set[int]) -> None:
    """Kill every process of the sandbox but us and ``keep``, however many a fork bomb
    keeps making. As PID 1 of our namespace we see them all in /proc.

    It does not wait for them to die: a process with SIGKILL pending runs no more of its
    code and cannot fork, and its teardown (milliseconds, for a copy of torch) is the
    kernel's. They are reaped on later sweeps."""
    keep = {os.getpid()} | keep
    killed: set[int] = set()
    with as_child_user():  # their uid, so that we may signal them
        for _ in range(10_000):
            reap_dead()
            fresh = {int(p) for p in os.listdir("/proc") if p.isdigit()} - keep - killed
            if not fresh:
                return
            for pid in fresh:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            killed |= fresh
            dying.update(fresh)


def reap_dead() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def forget_reaped() -> None:
    reap_dead()
    dying.intersection_update([p for p in dying if os.path.exists(f"/proc/{p}")])
