"""The uids a worker process's sandboxes run as: a block of four that no other process
on this host holds while this one lives.

Two grades in flight on one host (a worker's pool of two processes, or two workers) must
never run their untrusted code as the same uid: RLIMIT_NPROC counts a uid's processes
host-wide, so one submission's fork bomb would make another's calls fail. A block is
claimed with an advisory lock on a file named by its first uid; the kernel lets the lock
go when the process that holds it ends, however it ends, so a block is never lost.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

# Blocks of four: the student sandbox's warm process and calls, then the exercise's.
BLOCK = 4
BLOCKS = 1000
CLAIMS = Path("/run/grader-sandbox-uids")

# By the folder and the range's first uid: (pid, the block's first uid, its lock's descriptor).
_held: dict[tuple[Path, int], tuple[int, int, int]] = {}


class NoFreeUids(RuntimeError):
    pass


def claim(first: int, *, claims: Path | None = None) -> int:
    """This process's block, the first free one from ``first`` (claimed on the first call
    of each process: a forked child claims its own, its parent's lock being its parent's).
    ``claims``: where the locks are (CLAIMS)."""
    claims = claims or CLAIMS
    if os.geteuid() != 0:
        return first  # only root changes uid: unprivileged, bubblewrap refuses anyway
    if _held and next(iter(_held.values()))[0] != os.getpid():
        for _, _, fd in _held.values():
            os.close(fd)  # our parent's locks stay our parent's (it holds the same open files)
        _held.clear()
    if (claims, first) in _held:
        return _held[claims, first][1]
    try:
        claims.mkdir(mode=0o700, parents=True, exist_ok=True)
        for block in range(BLOCKS):
            uid = first + BLOCK * block
            fd = os.open(claims / str(uid), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            _held[claims, first] = (os.getpid(), uid, fd)
            return uid
    except OSError as exc:
        raise NoFreeUids(f"the sandboxes' uids cannot be claimed: {claims} cannot be written "
                         f"({exc.strerror}); a worker that runs as root needs it") from None
    raise NoFreeUids(f"all {BLOCKS} blocks of {BLOCK} sandbox uids from {first} are held by other "
                     f"processes of this host (see {claims}); set GRADER_SANDBOX_UID to another range")
