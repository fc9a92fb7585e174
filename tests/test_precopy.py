"""A spare grade child copies ahead the pages a suite writes (grader/inside/precopy.py): the
warm process learns them from a rehearsal in a child of its own, a spare copies them while it
waits and stops when its grade is there, and nothing it copies changes; and the warm
processes' measure of the worker's pauses (grader/inside/pauses.py) decides when that pays."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grader.inside import pauses

ROOT = Path(__file__).resolve().parent.parent

# Each run in a fresh interpreter: the module forks, and what a page is (present, ours alone)
# is read from /proc/self/pagemap of that process.
PRELUDE = r'''
import array, mmap, os, ctypes, time
from grader.inside import precopy

PAGE = precopy.PAGE

def state(address):
    """(present, ours alone) of the page at address."""
    with open("/proc/self/pagemap", "rb") as fh:
        fh.seek(address // PAGE * 8)
        entry = array.array("Q", fh.read(8))[0]
    return bool(entry >> 63 & 1), bool(entry >> 56 & 1)

def address(buffer, offset=0):
    return ctypes.addressof(ctypes.c_char.from_buffer(buffer)) + offset

def inside(runs, at):
    return any(start <= at < start + length for start, length in runs)

area = mmap.mmap(-1, 64 * PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
area.write(bytes(range(256)) * (64 * PAGE // 256))
base = address(area)
'''

LEARN = PRELUDE + r'''
fresh = []
sparse = mmap.mmap(-1, 8 * PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
sparse[0] = 1  # present at the fork; its other pages are not

def rehearse():
    for i in (3, 4, 5, 40):
        area[i * PAGE] = area[i * PAGE]  # the same byte: copied all the same
    sparse[0] = 2
    sparse[5 * PAGE] = 2  # allocated now, in a region the fork had: no page a later child has
    fresh.append(mmap.mmap(-1, 8 * PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS))
    fresh[-1].write(b"y" * 8 * PAGE)
    open(note, "w").write(str(address(fresh[-1])))

note = f"/tmp/precopy-fresh-{os.getpid()}"
runs = precopy.learn(rehearse)
fresh_at = int(open(note).read())
os.unlink(note)
print(inside(runs, base + 3 * PAGE), inside(runs, base + 5 * PAGE), inside(runs, base + 40 * PAGE),
      inside(runs, base + 6 * PAGE), inside(runs, base + 20 * PAGE), inside(runs, fresh_at),
      sorted(length // PAGE for start, length in runs if base <= start < base + 64 * PAGE),
      inside(runs, address(sparse)), inside(runs, address(sparse, 5 * PAGE)))
'''

COPY = PRELUDE + r'''
original = bytes(area)
runs = [(base + 2 * PAGE, 3 * PAGE), (base + 10 * PAGE, PAGE)]
gone = mmap.mmap(-1, 4 * PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
gone_at = address(gone)
gone.close()  # unmapped: the kernel refuses it, and it is never written
runs.insert(1, (gone_at, 4 * PAGE))
read_end, write_end = os.pipe()
pid = os.fork()
if pid == 0:
    before = [state(base + i * PAGE)[1] for i in range(64)]
    copied = precopy.copy(runs, arrived=lambda: False, every=1)
    after = [i for i in range(64) if state(base + i * PAGE)[1]]
    os.write(write_end, repr((any(before), copied, after, bytes(area) == original)).encode())
    os._exit(0)
os.waitpid(pid, 0)
print(os.read(read_end, 4096).decode())
# A grade already there: nothing is copied.
pid = os.fork()
if pid == 0:
    os.write(write_end, repr((precopy.copy(runs, arrived=lambda: True), state(base + 2 * PAGE)[1])).encode())
    os._exit(0)
os.waitpid(pid, 0)
print(os.read(read_end, 4096).decode())
'''

SLOW = PRELUDE + r'''
precopy.LEARN_WITHIN_S = 0.3
began = time.monotonic()
runs = precopy.learn(lambda: time.sleep(30))
print(runs == [], time.monotonic() - began < 5)
try:
    os.waitpid(-1, os.WNOHANG)
    print("a child is left")
except ChildProcessError:
    print("no child left")
'''


def run(code: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()


def kernel_populates() -> bool:
    """MADV_POPULATE_WRITE is Linux 5.14's; asked of the kernel directly."""
    code = """
import ctypes, mmap
area = mmap.mmap(-1, 4096, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
madvise = ctypes.CDLL(None, use_errno=True).madvise
madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
print(madvise(ctypes.addressof(ctypes.c_char.from_buffer(area)), 4096, 23) == 0)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return done.stdout.strip() == "True"


def test_the_pages_a_rehearsal_copies_are_learnt_and_none_it_made_itself():
    learnt = run(LEARN)[-1]
    # pages 3-5 and 40 written; 6 and 20 not; the rehearsal's own new mapping, and a page it
    # allocated where the fork had none, are no pages a later child would have. Runs join
    # neighbours: 3-5 is one run of three pages.
    assert learnt == "True True True False False False [1, 3] True False"


def test_a_spare_copies_the_pages_ahead_unchanged_and_skips_what_is_no_longer_mapped():
    if not kernel_populates():
        pytest.skip("this kernel has no MADV_POPULATE_WRITE: nothing is copied ahead")
    copied, waiting = run(COPY)
    assert copied == "(False, 4, [2, 3, 4, 10], True)"  # none ours before; the four named, as they were
    assert waiting == "(0, False)"  # its grade there already: it copies nothing


def test_a_rehearsal_that_does_not_finish_in_time_teaches_nothing_and_is_ended():
    assert run(SLOW) == ["True True", "no child left"]  # nothing, well before the rehearsal's end


def test_what_a_spare_is_told_to_copy_is_bounded_however_it_reads():
    from grader.inside import precopy

    page = precopy.PAGE
    runs = [(page * 2 * i, page) for i in range(precopy.MAX_RUNS + 10)]
    assert precopy.unpack(precopy.pack(runs[:5])) == runs[:5]
    assert len(precopy.unpack(precopy.pack(runs))) == precopy.MAX_RUNS  # the frame fits a pipe
    huge = [(0, page * precopy.MAX_PAGES), (page * precopy.MAX_PAGES, page)]
    assert precopy.unpack(precopy.pack(huge)) == huge[:1]  # never more than MAX_PAGES
    assert precopy.unpack(b"\x01" * 23) == []  # no whole run: nothing


def test_work_ahead_pays_while_the_worker_pauses_and_stops_when_it_grades_back_to_back():
    read_end, write_end = os.pipe()
    try:
        waits = pauses.Pauses()
        assert waits.idle()  # too few submissions seen to tell: as a sandbox that just started
        for _ in range(3):  # each submission came as the one before ended
            waits.ended()
            assert waits.quiet(read_end)
            os.write(write_end, b"x")
            assert not waits.quiet(read_end)  # a request waits
            waits.began(waited=True)  # measured to when none waited: no pause at all
            os.read(read_end, 1)
        assert not waits.idle()
        waits.ended()
        time.sleep(pauses.AHEAD_AFTER_IDLE_S + 0.01)  # the worker pauses before the next
        waits.began(waited=False)
        assert waits.idle()
    finally:
        os.close(read_end)
        os.close(write_end)


# What a grade's child holds of its own as its suite starts: the pages copied ahead among it.
OWN_PAGES_SUITE = '''
from grader.testing import visible

@visible
def test_own_pages(student):
    rollup = open("/proc/self/smaps_rollup").read().splitlines()
    raise AssertionError("own " + next(line.split()[1] for line in rollup if line.startswith("Private_Dirty:")))
'''


def test_a_sandbox_that_has_graded_copies_ahead_for_the_grade_after_a_pause(tmp_path, monkeypatch):
    """End to end, in the exercise sandbox: its first grade waits for no learning (a single
    `grader grade` never pays for it), and once it has learnt, a grade that comes after a
    pause finds megabytes of the pages a suite writes already its own."""
    if not kernel_populates():
        pytest.skip("this kernel has no MADV_POPULATE_WRITE: nothing is copied ahead")
    from grader.engine import grade, grading
    from tests.test_engine import exercise_folder

    bundle = exercise_folder(tmp_path, "pages", OWN_PAGES_SUITE)

    def own_kib() -> int:
        report = grade(bundle, "def f():\n    return 1\n")
        assert report.status == "graded", report
        return int(report.tests[0].message.split("own ", 1)[1].split()[0])

    monkeypatch.setattr("grader.engine.grading._pool", {})  # sandboxes of this test's own
    try:
        first = own_kib()
        own_kib()  # its spare was forked before anything was learnt
        time.sleep(0.3)
        own_kib()
        time.sleep(0.3)
        ahead = own_kib()
    finally:
        grading.shutdown()
    assert ahead - first > 8 << 10, (first, ahead)
