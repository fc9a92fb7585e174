"""The call child's system-call filter: what a submission never needs, it cannot ask for.

A small classic-BPF program, loaded with prctl(PR_SET_SECCOMP) in the call child
after its own isolation (which itself needs unshare and mount) and before any
student code. It is inherited by everything the submission starts and cannot be
removed. A denied call fails with EPERM, so the submission sees an ordinary error.

Denied: debugging other processes (ptrace, process_vm_*), the kernel key store,
io_uring (its own way around this filter), bpf, perf_event_open, userfaultfd,
every mount and namespace call (including clone with namespace flags), kernel
modules, kexec, reboot, the clock, swap, quotas and the like, and the calls that read
or reset the host's page cache without timing it. clone3 answers ENOSYS:
its flags sit in memory a filter cannot read, and the C library then falls back
to clone, whose flags it can.
"""

from __future__ import annotations

import ctypes
import errno
import platform
import struct

# The names stay readable; the numbers differ per architecture.
DENIED = (
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
    "keyctl", "add_key", "request_key",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "bpf", "perf_event_open", "userfaultfd", "fanotify_init",
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns",
    "fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr",
    "open_by_handle_at", "name_to_handle_at",
    "kexec_load", "kexec_file_load", "reboot", "init_module", "finit_module", "delete_module",
    "swapon", "swapoff", "acct", "quotactl", "quotactl_fd", "syslog", "vhangup", "lookup_dcookie",
    "settimeofday", "clock_settime", "adjtimex", "clock_adjtime", "sethostname", "setdomainname",
    "iopl", "ioperm", "modify_ldt", "uselib",
    # What the host's page cache holds is shared with every other call on the machine: these
    # ask it without timing (preadv2's RWF_NOWAIT, cachestat) or reset it (fadvise DONTNEED,
    # readahead), which made it a channel from a hidden call's input to a visible call's output.
    "preadv2", "pwritev2", "cachestat", "fadvise64", "readahead",
)

# A grade's child forked from the process that collected its exercise's tests shares that
# process's IPC namespace with the grades before and after it (it cannot make one of its own:
# the namespace calls are denied above). What System V IPC and POSIX message queues keep
# outlives the processes that made it, so a grade there could leave something for the next:
# it is denied them, on top of the filter above (walls.py, grader/testing/warm.py). That
# filter also lets it set only its own nice value, I/O priority and scheduling attributes,
# never those of all its uid's processes (the collector among them) or of another by pid,
# and denies it the sockets and nameless files that move counters the next grade could read.
SHARED_DENIED = (
    "shmget", "shmat", "shmctl", "shmdt", "semget", "semop", "semctl", "semtimedop",
    "msgget", "msgsnd", "msgrcv", "msgctl",
    "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr",
)

# From <asm/unistd_64.h> (x86_64) and <asm-generic/unistd.h> (aarch64).
_X86_64 = dict(
    ptrace=101, process_vm_readv=310, process_vm_writev=311, kcmp=312, pidfd_getfd=438,
    keyctl=250, add_key=248, request_key=249,
    io_uring_setup=425, io_uring_enter=426, io_uring_register=427,
    bpf=321, perf_event_open=298, userfaultfd=323, fanotify_init=300,
    mount=165, umount2=166, pivot_root=155, chroot=161, unshare=272, setns=308,
    fsopen=430, fsconfig=431, fsmount=432, fspick=433, move_mount=429, open_tree=428, mount_setattr=442,
    open_by_handle_at=304, name_to_handle_at=303,
    kexec_load=246, kexec_file_load=320, reboot=169, init_module=175, finit_module=313, delete_module=176,
    swapon=167, swapoff=168, acct=163, quotactl=179, quotactl_fd=443, syslog=103, vhangup=153,
    lookup_dcookie=212, settimeofday=164, clock_settime=227, adjtimex=159, clock_adjtime=305,
    sethostname=170, setdomainname=171, iopl=172, ioperm=173, modify_ldt=154, uselib=134,
    preadv2=327, pwritev2=328, cachestat=451, fadvise64=221, readahead=187,
    clone=56, clone3=435,
    shmget=29, shmat=30, shmctl=31, shmdt=67, semget=64, semop=65, semctl=66, semtimedop=220,
    msgget=68, msgsnd=69, msgrcv=70, msgctl=71,
    mq_open=240, mq_unlink=241, mq_timedsend=242, mq_timedreceive=243, mq_notify=244, mq_getsetattr=245,
    setpriority=141, ioprio_set=251, sched_setattr=314, socket=41, open=2, openat=257, openat2=437,
)
_AARCH64 = dict(
    ptrace=117, process_vm_readv=270, process_vm_writev=271, kcmp=272, pidfd_getfd=438,
    keyctl=219, add_key=217, request_key=218,
    io_uring_setup=425, io_uring_enter=426, io_uring_register=427,
    bpf=280, perf_event_open=241, userfaultfd=282, fanotify_init=262,
    mount=40, umount2=39, pivot_root=41, chroot=51, unshare=97, setns=268,
    fsopen=430, fsconfig=431, fsmount=432, fspick=433, move_mount=429, open_tree=428, mount_setattr=442,
    open_by_handle_at=265, name_to_handle_at=264,
    kexec_load=104, kexec_file_load=294, reboot=142, init_module=105, finit_module=273, delete_module=106,
    swapon=224, swapoff=225, acct=89, quotactl=60, quotactl_fd=443, syslog=116, vhangup=58,
    lookup_dcookie=18, settimeofday=170, clock_settime=112, adjtimex=171, clock_adjtime=266,
    sethostname=161, setdomainname=162,
    preadv2=286, pwritev2=287, cachestat=451, fadvise64=223, readahead=213,
    clone=220, clone3=435,
    mq_open=180, mq_unlink=181, mq_timedsend=182, mq_timedreceive=183, mq_notify=184, mq_getsetattr=185,
    msgget=186, msgctl=187, msgrcv=188, msgsnd=189, semget=190, semctl=191, semtimedop=192, semop=193,
    shmget=194, shmctl=195, shmat=196, shmdt=197,
    setpriority=140, ioprio_set=30, sched_setattr=274, socket=198, openat=56, openat2=437,
)
# machine -> (AUDIT_ARCH_*, numbers, lowest number of a foreign ABI on the same arch)
ARCHES = {
    "x86_64": (0xC000003E, _X86_64, 0x40000000),  # x32 calls carry bit 30: refused
    "aarch64": (0xC00000B7, _AARCH64, None),
}

# clone flags that make a namespace (CLONE_NEWTIME .. CLONE_NEWNET).
CLONE_NAMESPACES = 0x00000080 | 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000

_BPF_LD_W_ABS = 0x20      # BPF_LD | BPF_W | BPF_ABS
_BPF_JEQ_K = 0x15         # BPF_JMP | BPF_JEQ | BPF_K
_BPF_JGE_K = 0x35         # BPF_JMP | BPF_JGE | BPF_K
_BPF_JSET_K = 0x45        # BPF_JMP | BPF_JSET | BPF_K
_BPF_RET_K = 0x06         # BPF_RET | BPF_K
_RET_KILL_PROCESS = 0x80000000
_RET_ERRNO = 0x00050000
_RET_ALLOW = 0x7FFF0000
_OFF_NR, _OFF_ARCH, _OFF_ARG0, _OFF_ARG1, _OFF_ARG2 = 0, 4, 16, 24, 32  # seccomp_data (args' low words: little-endian)
_AF_UNIX = 1
_O_TMPFILE = 0o20000000  # __O_TMPFILE, the bit of its own (O_TMPFILE also carries O_DIRECTORY)

_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2


class SeccompError(OSError):
    pass


def program(machine: str | None = None, kind: str = "walls") -> list[tuple[int, int, int, int]]:
    """The filter for this machine, as (code, jt, jf, k) instructions. ``kind``: "walls" (the
    filter every sandboxed child loads) or "shared" (SHARED_DENIED alone, loaded on top of it)."""
    machine = machine or platform.machine()
    if machine not in ARCHES:
        raise SeccompError(f"no system-call filter for the {machine} architecture")
    audit_arch, numbers, foreign = ARCHES[machine]
    walls = kind == "walls"
    denied = sorted({numbers[name] for name in (DENIED if walls else SHARED_DENIED) if name in numbers})
    # Layout: checks, then the three shared returns: deny (EPERM), no-such-call, allow.
    body: list[list] = []
    body.append([_BPF_LD_W_ABS, 0, 0, _OFF_ARCH])
    body.append([_BPF_JEQ_K, 1, 0, audit_arch])
    body.append([_BPF_RET_K, 0, 0, _RET_KILL_PROCESS])  # a call through another ABI
    body.append([_BPF_LD_W_ABS, 0, 0, _OFF_NR])
    if foreign is not None:
        body.append([_BPF_JGE_K, "deny", 0, foreign])
    for nr in denied:
        body.append([_BPF_JEQ_K, "deny", 0, nr])
    if walls:
        body.append([_BPF_JEQ_K, "nosys", 0, numbers["clone3"]])
        body.append([_BPF_JEQ_K, 0, "allow", numbers["clone"]])
        body.append([_BPF_LD_W_ABS, 0, 0, _OFF_ARG0])
        body.append([_BPF_JSET_K, "deny", "allow", CLONE_NAMESPACES])
    else:
        # Attributes every child of the collector inherits, set for every process of our uid
        # (the collector's too) or for another by its pid: only our own may be set.
        body.append([_BPF_JEQ_K, "own-prio", 0, numbers["setpriority"]])  # (which, who): PRIO_PROCESS, 0
        body.append([_BPF_JEQ_K, "own-ioprio", 0, numbers["ioprio_set"]])  # IOPRIO_WHO_PROCESS, 0
        body.append([_BPF_JEQ_K, "own-pid", 0, numbers["sched_setattr"]])  # (pid, ...): 0
        # Counters the namespaces keep between grades, which a grade could move for the next
        # to read: the network's (only local sockets, which count nothing), and /tmp's inode
        # numbers (a file with no name there changes nothing else of /tmp).
        body.append([_BPF_JEQ_K, "local-socket", 0, numbers["socket"]])  # (domain, ...): AF_UNIX
        body.append([_BPF_JEQ_K, "nosys", 0, numbers["openat2"]])  # its flags sit in memory
        if "open" in numbers:
            body.append([_BPF_JEQ_K, "named-open1", 0, numbers["open"]])  # (path, flags, ...)
        body.append([_BPF_JEQ_K, "named-open2", "allow", numbers["openat"]])  # (dir, path, flags, ...)
        body += [("local-socket",), [_BPF_LD_W_ABS, 0, 0, _OFF_ARG0], [_BPF_JEQ_K, "allow", "deny", _AF_UNIX],
                 ("named-open1",), [_BPF_LD_W_ABS, 0, 0, _OFF_ARG1], [_BPF_JSET_K, "deny", "allow", _O_TMPFILE],
                 ("named-open2",), [_BPF_LD_W_ABS, 0, 0, _OFF_ARG2], [_BPF_JSET_K, "deny", "allow", _O_TMPFILE]]
        body += [("own-prio",), [_BPF_LD_W_ABS, 0, 0, _OFF_ARG0], [_BPF_JEQ_K, "who", "deny", 0],
                 ("own-ioprio",), [_BPF_LD_W_ABS, 0, 0, _OFF_ARG0], [_BPF_JEQ_K, "who", "deny", 1],
                 ("who",), [_BPF_LD_W_ABS, 0, 0, _OFF_ARG1], [_BPF_JEQ_K, "allow", "deny", 0],
                 ("own-pid",), [_BPF_LD_W_ABS, 0, 0, _OFF_ARG0], [_BPF_JEQ_K, "allow", "deny", 0]]
    labels, code = {}, []
    for step in body:  # a (name,) marks where the next instruction is that name's
        if isinstance(step, tuple):
            labels[step[0]] = len(code)
        else:
            code.append(step)
    body = code
    labels.update({"deny": len(body), "nosys": len(body) + 1, "allow": len(body) + 2})
    body += [[_BPF_RET_K, 0, 0, _RET_ERRNO | errno.EPERM],
             [_BPF_RET_K, 0, 0, _RET_ERRNO | errno.ENOSYS],
             [_BPF_RET_K, 0, 0, _RET_ALLOW]]
    out = []
    for i, (code, jt, jf, k) in enumerate(body):
        jt = labels[jt] - i - 1 if isinstance(jt, str) else jt
        jf = labels[jf] - i - 1 if isinstance(jf, str) else jf
        assert 0 <= jt < 256 and 0 <= jf < 256
        out.append((code, jt, jf, k))
    return out


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


_compiled: dict[tuple[str, str], bytes] = {}


def compiled(machine: str | None = None, kind: str = "walls") -> bytes:
    """The filter as the kernel reads it; built once (the warm process does, before it
    forks, so that no call child pays for it)."""
    key = (machine or platform.machine(), kind)
    if key not in _compiled:
        _compiled[key] = b"".join(struct.pack("=HBBI", *insn) for insn in program(*key))
    return _compiled[key]


_ready: dict[tuple[str, str], tuple] = {}


def prepare(machine: str | None = None, kind: str = "walls") -> tuple:
    """The filter in the kernel's structure and the prctl that loads it, made once (the warm
    process does, before it forks): a call child then only loads it, with no Python objects
    of its own to make and so no pages to copy on the way."""
    key = (machine or platform.machine(), kind)
    if key not in _ready:
        raw = compiled(*key)
        buf = ctypes.create_string_buffer(raw, len(raw))
        fprog = _SockFprog(len(raw) // 8, ctypes.cast(buf, ctypes.c_void_p))
        prctl = ctypes.CDLL(None, use_errno=True).prctl
        prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
        _ready[key] = (buf, ctypes.byref(fprog), prctl)  # byref holds fprog, which points into buf
    return _ready[key]


def install(machine: str | None = None, kind: str = "walls") -> None:
    """Load the filter into this process (and all it starts from now on), for good."""
    _, fprog, prctl = prepare(machine, kind)
    if prctl(_PR_SET_NO_NEW_PRIVS, 1, None, 0, 0) != 0:
        raise SeccompError(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS failed")
    if prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, fprog, 0, 0) != 0:
        raise SeccompError(ctypes.get_errno(), "loading the system-call filter failed")
