"""The pages a grade's child will write, copied while it waits for its grade.

A grade's child is forked from a warm process of 200-300 MiB, and each page it writes is
copied first (copy-on-write): for autograd-basics ~1,700 pages of pytest's, torch's and
Python's own state, a fault and a 4 KiB copy each, 4-6 ms of its grade. Which pages these
are hardly depends on the exercise: the same machinery runs every suite.

So the warm process learns once which pages running a suite writes (:func:`learn`): a child
of it runs our own warm-up suite (no exercise's code, no grade's data) and reports the pages
it had to copy; nothing else comes back from it. A spare grade child then copies those pages
ahead (:func:`copy`, MADV_POPULATE_WRITE, Linux 5.14+) while it waits, and stops as soon as
its grade is there: what is left it copies as it writes, as before. Copying a page that the
grade then never writes costs its CPU (~2.5 µs) and 4 KiB until the child ends, so spares
copy ahead only where the worker pauses between submissions (``pauses``).

A page is named by its address alone. One no longer mapped where the child runs (memory the
collection of an exercise freed) is refused by the kernel (ENOMEM), never written; one
freed and mapped again is made present, as a write would: what it holds is unchanged.
"""

from __future__ import annotations

import array
import ctypes
import errno
import os
import signal
import time
from typing import Callable

from . import walls

PAGE = os.sysconf("SC_PAGE_SIZE")
_MADV_POPULATE_WRITE = 23
MAX_PAGES = 8192  # 32 MiB: a bound on what a spare may copy ahead, whatever the warm-up wrote
MAX_RUNS = 3072  # 48 KiB as a frame: it waits in a pipe, which holds 64 KiB at the least
LEARN_WITHIN_S = 10.0

_PRESENT = 1 << 63
_EXCLUSIVE = 1 << 56  # mapped by this process alone: for a page present at the fork, copied since

_libc = ctypes.CDLL(None, use_errno=True)
_libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]


def learn(rehearse: Callable[[], None]) -> list[tuple[int, int]]:
    """The pages a child forked from here copies while it runs ``rehearse()``, as runs of
    (address, length); none where that cannot be learnt (the warm process stays as fast as
    it was without this)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_end)
            walls.dumpable()  # our own /proc/self/pagemap: this child alone is ours to read
            before = _pagemap()
            rehearse()
            view = memoryview(pack(_runs(_copied(before))))
            while view:
                view = view[os.write(write_end, view):]
        finally:
            os._exit(0)
    os.close(write_end)
    data = bytearray()
    deadline = time.monotonic() + LEARN_WITHIN_S
    try:
        while time.monotonic() < deadline and walls.readable(read_end, deadline - time.monotonic()):
            chunk = os.read(read_end, 1 << 16)
            if not chunk:
                break
            data += chunk
        else:
            data = bytearray()  # it did not finish in time: nothing learnt
    finally:
        os.close(read_end)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)
    return unpack(data)


def pack(runs: list[tuple[int, int]]) -> bytes:
    return array.array("Q", (n for run in runs for n in run)).tobytes()


def unpack(data) -> list[tuple[int, int]]:
    """Runs from their bytes; at most MAX_RUNS runs and MAX_PAGES pages of them."""
    numbers = array.array("Q")
    numbers.frombytes(bytes(data[:len(data) - len(data) % 16]))
    runs, pages = [], 0
    for start, length in zip(numbers[0:2 * MAX_RUNS:2], numbers[1:2 * MAX_RUNS:2]):
        pages += length // PAGE
        if pages > MAX_PAGES:
            break
        runs.append((start, length))
    return runs


def copy(runs: list[tuple[int, int]], arrived: Callable[[], bool], every: int = 32) -> int:
    """Copy the pages of ``runs`` into this process, looking every ``every`` runs whether
    ``arrived()`` (its grade is there), and stopping then; returns the pages copied."""
    copied = 0
    for i, (start, length) in enumerate(runs):
        if i % every == 0 and arrived():
            break
        if _libc.madvise(start, length, _MADV_POPULATE_WRITE) == 0:
            copied += length // PAGE
        elif ctypes.get_errno() in (errno.EINVAL, errno.EPERM, errno.ENOSYS):
            break  # a kernel without it, or a filter that refuses it: nothing is copied ahead
    return copied


def _regions() -> list[tuple[int, int]]:
    """Our private writable mappings: the heap, anonymous memory, libraries' data, the stack."""
    regions = []
    with open("/proc/self/maps") as fh:
        for line in fh:
            fields = line.split()
            if fields[1] == "rw-p":
                start, end = (int(x, 16) for x in fields[0].split("-"))
                regions.append((start, end))
    return regions


def _entries(fd: int, start: int, end: int) -> array.array:
    entries = array.array("Q")
    entries.frombytes(os.pread(fd, (end - start) // PAGE * 8, start // PAGE * 8))
    return entries


def _pagemap() -> dict[tuple[int, int], array.array]:
    """Each region's page entries now (at the fork, every present page shared with the parent)."""
    fd = os.open("/proc/self/pagemap", os.O_RDONLY)
    try:
        return {(start, end): _entries(fd, start, end) for start, end in _regions()}
    finally:
        os.close(fd)


def _copied(before: dict[tuple[int, int], array.array]) -> list[int]:
    """Pages present at the fork and ours alone now: the ones written since (pages that were
    not there then were allocated by the rehearsal, and a grade's child would not have them)."""
    pages: list[int] = []
    fd = os.open("/proc/self/pagemap", os.O_RDONLY)
    try:
        for (start, end), then in before.items():
            try:
                now = _entries(fd, start, end)
            except OSError:
                continue
            pages.extend(start + i * PAGE for i, (was, is_) in enumerate(zip(then, now))
                         if was & _PRESENT and is_ & _PRESENT and is_ & _EXCLUSIVE)
    finally:
        os.close(fd)
    return pages


def _runs(pages: list[int]) -> list[tuple[int, int]]:
    """Sorted page addresses as runs of (address, length)."""
    runs: list[tuple[int, int]] = []
    for page in pages:
        if runs and runs[-1][0] + runs[-1][1] == page:
            runs[-1] = (runs[-1][0], runs[-1][1] + PAGE)
        else:
            runs.append((page, PAGE))
    return runs
