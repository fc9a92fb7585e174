"""A warm process's heap folded into 2 MiB pages once it has forked enough to pay for it.

A fork copies one page-table entry per 4 KiB page of private memory, and the child's exit
drops them again: with torch loaded, about 220 MiB of heap, 6-8 ms to fork and as much to
exit, on every call and every grade. Folded into 2 MiB pages, the same memory is one entry
per 2 MiB, and a child costs a third of the CPU (bench/fork_cost.py). A child that writes
to such a page gets a private 4 KiB copy as before: only what it touches is copied.

Folding copies the whole heap once (0.3-0.7 s of CPU), which a warm process that forks a
few times only (a single grade from the command line) would never win back. So a warm
process times its forks (:func:`fork`: their CPU, which a busy machine does not inflate as
it does their wall time), and once they have cost :data:`FOLD_AFTER_S` it folds, a piece
at a time while it is idle (:func:`due`, :func:`fold_next`).

Only what is there then is folded (MADV_COLLAPSE, Linux 6.1+); the regions are not marked
for huge pages, so what a child allocates later follows the machine's setting as before.
Where the kernel cannot fold a region (an older kernel, no huge page free, a region that
must not be), it stays as it is: the fork is slower, never different.
"""

from __future__ import annotations

import ctypes
import os
import time
from typing import Callable

_MADV_COLLAPSE = 25
HUGE = 2 << 20
PIECE = 16 << 20  # folded in one step: tens of milliseconds, so that a request waits little
FOLD_AFTER_S = 0.25  # of CPU forking, before the heap is folded (about 35 forks of torch's heap)

_forking = 0.0  # CPU seconds this process has spent in fork() so far
_pieces: list[tuple[int, int]] | None = None  # what is left to fold, once folding began
folded = 0  # bytes folded so far


def fork(how: Callable[[], int] = os.fork) -> int:
    """``how()`` (os.fork(), or a fork like it), timed: what the forks cost decides when
    the heap is folded."""
    global _forking
    began = time.process_time()
    pid = how()
    if pid:
        _forking += time.process_time() - began
    return pid


def due() -> bool:
    """Whether a piece of the heap is to be folded now (the forks have cost enough)."""
    return _forking >= FOLD_AFTER_S and _pieces != []


def fold_next() -> None:
    """Fold the next piece of the heap (at the first step, the pieces are listed)."""
    global _pieces, folded
    if _pieces is None:
        _pieces = [piece for region in _private_regions() for piece in _split(*region)]
    if _pieces:
        start, length = _pieces.pop(0)
        if _madvise(start, length, _MADV_COLLAPSE) == 0:
            folded += length


def fold_all() -> int:
    """Fold the whole heap now; returns the bytes folded."""
    while _pieces != []:
        fold_next()
    return folded


def _split(start: int, end: int) -> list[tuple[int, int]]:
    """The whole huge pages inside [start, end), in pieces of at most PIECE bytes."""
    low, high = -(-start // HUGE) * HUGE, end // HUGE * HUGE
    return [(at, min(PIECE, high - at)) for at in range(low, high, PIECE)]


def _private_regions() -> list[tuple[int, int]]:
    """The heap and the anonymous writable mappings (a library's own data stays as it is:
    the kernel folds no file's pages here)."""
    regions = []
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                fields = line.split()
                if fields[1] == "rw-p" and (len(fields) == 5 or fields[5] == "[heap]"):
                    start, end = (int(x, 16) for x in fields[0].split("-"))
                    regions.append((start, end))
    except OSError:
        return []
    return regions


def _madvise(start: int, length: int, advice: int) -> int:
    madvise = ctypes.CDLL(None, use_errno=True).madvise
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    return madvise(start, length, advice)
