"""A warm process's heap folded into 2 MiB pages, once, before it forks.

A fork copies one page-table entry per 4 KiB page of private memory, and the child's exit
drops them again: with torch loaded, about 220 MiB of heap, 8 ms to fork and as much to
exit, on every call and every grade. Folded into 2 MiB pages, the same memory is one entry
per 2 MiB, and a fork takes about 1 ms (bench/fork_cost.py). A child that writes to such a
page gets a private 4 KiB copy as before: only what it touches is copied.

Only what is there now is folded (MADV_COLLAPSE, Linux 6.1+); the regions are not marked
for huge pages, so what a child allocates later follows the machine's setting as before.
Where the kernel cannot fold a region (an older kernel, no huge pages free, a region that
must not be), it stays as it is: the fork is slower, never different.
"""

from __future__ import annotations

import ctypes

_MADV_COLLAPSE = 25
HUGE = 2 << 20


def fold() -> int:
    """Fold this process's writable private memory into huge pages where the kernel can;
    returns the bytes it folded."""
    libc = ctypes.CDLL(None, use_errno=True)
    madvise = libc.madvise
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    folded = 0
    for start, end in _private_regions():
        low, high = -(-start // HUGE) * HUGE, end // HUGE * HUGE  # the whole huge pages inside
        if high > low and madvise(low, high - low, _MADV_COLLAPSE) == 0:
            folded += high - low
    return folded


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
