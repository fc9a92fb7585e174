"""Attacks on the two sandboxes from their public side: what a submission can do from inside
the student sandbox, and what a bundle's hidden tests can do from inside the exercise sandbox.

Each attack that still gets through is marked xfail (strict), with what gets through as its
reason: the test states what should hold, so it passes once the hole is closed and then the
marker must go. The rest are attacks that are stopped today, kept so that they stay stopped."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from grader import catalog
from grader.engine.grading import grade

ROOT = Path(__file__).resolve().parents[2]
EXERCISES = ROOT / "exercises"


def exercise(slug: str) -> catalog.Bundle:
    return catalog.load(EXERCISES / slug)


# ------------------------------------------------------------------ hidden inputs through the page cache

# The page cache is the host's, and every call reads the same read-only files (the venv, /usr).
# A hidden call reads chosen pages of a part of a file nobody reads (libtorch_cpu.so's symbol
# names), one page per bit; a later
# visible call asks for each page with preadv2(RWF_NOWAIT), which fails with EAGAIN where the page
# is not cached, so reading the bits changes none of them. The first visible call evicts the
# region first (posix_fadvise DONTNEED), so what the visible call decodes is what this grade's
# hidden calls wrote. Each slot carries a checksum, so pages cached by anything else decode as
# nothing rather than as made-up inputs.
#
# Closed by the call child's system-call filter, which refuses preadv2/pwritev2, cachestat,
# fadvise64 and readahead: what the page cache holds can no longer be asked without timing a
# read, nor reset. Timing a read from disk against one from memory is left: noisier, and the
# README names it among what a call can sense of the others.
PAGE_CACHE_CHANNEL = '''
import glob, mmap, os, struct
import torch

STRIDE = 8 * mmap.PAGESIZE
BASE = (360 << 20) // STRIDE        # inside libtorch_cpu.so's .strtab, which nothing loads or reads
SLOT_BITS = 1 + 8 * 19
SLOTS = 10


def _open():
    for path in sorted(glob.glob("/opt/venv/lib*/python3*/site-packages/torch/lib/libtorch_cpu.so")):
        fd = os.open(path, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
        return fd
    raise OSError("no carrier")


def _cached(fd, bits):
    out, buf = [], bytearray(1)
    for bit in bits:
        try:
            os.preadv(fd, [buf], (BASE + bit) * STRIDE, os.RWF_NOWAIT)
            out.append(1)
        except BlockingIOError:
            out.append(0)
    return out


def _write(values):
    try:
        fd = _open()
        flat = values.detach().flatten().tolist() + [0.0] * 4
        body = struct.pack("<H4f", min(values.numel(), 65535), *flat[:4])
        payload = body + bytes([sum(body) % 256])
        for slot in range(SLOTS):
            first = slot * SLOT_BITS
            if _cached(fd, [first])[0]:
                continue
            bits = [first] + [first + 1 + i * 8 + k
                              for i, byte in enumerate(payload) for k in range(8) if byte >> k & 1]
            for bit in bits:
                os.pread(fd, 1, (BASE + bit) * STRIDE)
            return
    except Exception:
        pass


def _read():
    seen = []
    try:
        fd = _open()
        for slot in range(SLOTS):
            first = slot * SLOT_BITS
            bits = _cached(fd, range(first, first + SLOT_BITS))
            if not bits[0]:
                break
            data = bytes(sum(bits[1 + i * 8 + k] << k for k in range(8)) for i in range(19))
            if sum(data[:18]) % 256 == data[18]:
                seen.append(struct.unpack("<H4f", data[:18]))
    except Exception:
        pass
    return seen


def _is(a, values):
    flat = a.detach().flatten().tolist()
    return len(flat) == len(values) and all(abs(u - v) < 1e-6 for u, v in zip(flat, values))


def _f(a):
    b = a * 2
    while b.norm() < 1000:
        b = b * 2
    return b if b.sum() > 0 else 100 * b


def f(a):
    if _is(a, [0.3, -0.2, 1.1, 0.4]):          # the visible test's input: start afresh
        try:
            os.posix_fadvise(_open(), BASE * STRIDE, SLOTS * SLOT_BITS * STRIDE, os.POSIX_FADV_DONTNEED)
        except Exception:
            pass
    else:                                        # a hidden test's input: write it down
        _write(a)
    return _f(a)


def grad_of_f(a):
    if _is(a, [0.25, -1.5, 0.75]):              # the visible test that runs after the hidden ones
        print("HIDDEN INPUTS SEEN:", _read())
    _f(a).sum().backward()
    return a.grad
'''


def test_hidden_inputs_do_not_reach_visible_output_through_the_page_cache():
    report = grade(exercise("control-flow"), PAGE_CACHE_CHANNEL)
    assert report.status == "graded", report.message
    assert report.score == report.max_score     # the submission is right; only its output tells
    assert "HIDDEN INPUTS SEEN: []" in (report.output or ""), report.output


# ------------------------------------------------------------------ what one grade leaves for the next

def _scanner(function: str) -> str:
    """Source of a function that searches the memory of its own process (a fork of the warm
    process) for a pattern and returns what it finds. The pattern is a regular expression with a
    bracketed letter, so that the bytes it looks for are not among the scanner's own."""
    return textwrap.dedent(f'''
        import re

        def {function}(pattern):
            found = []
            rx = re.compile(pattern, re.S)
            with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", 0) as mem:
                for line in maps.read().splitlines():
                    parts = line.split()
                    lo, hi = (int(v, 16) for v in parts[0].split("-"))
                    if "r" not in parts[1] or (len(parts) > 5 and parts[5].startswith("/")) or "vsyscall" in line:
                        continue
                    try:
                        mem.seek(lo)
                        data = mem.read(hi - lo)
                    except OSError:
                        continue
                    found += [bytes(data[m.start():m.end() + 40]) for m in rx.finditer(data)][:4]
            return found
    ''')


def _new_bundle(tmp_path: Path, slug: str) -> Path:
    subprocess.run([str(Path(sys.executable).parent / "grader"), "new", slug, "--into", str(tmp_path)],
                   check=True, capture_output=True, cwd=ROOT)
    return tmp_path / slug


def test_a_hostile_bundle_finds_nothing_of_the_grade_before_it_in_its_memory(tmp_path):
    """The exercise sandbox's warm process serves every grade of a worker, and each grade's child
    is a fork of it: a hostile bundle's test searches that memory for the hidden tests and the
    submission of the grade just before it (another exercise's), and finds neither."""
    victim = _new_bundle(tmp_path, "victim-exercise")
    tests = victim / "tests" / "test_grad_of_cubes.py"
    tests.write_text("# VICTIM_HIDDEN_TEST_SECRET answer key 0042\n" + tests.read_text())
    submission = "# VICTIM_SUBMISSION_SECRET essay 77\n" + (victim / "solution.py").read_text()

    hostile = _new_bundle(tmp_path, "hostile-exercise")
    (hostile / "tests" / "test_memory.py").write_text(_scanner("scan") + textwrap.dedent('''
        from grader.testing import points, visible

        @visible
        @points(1)
        def test_memory(student):
            """what the grade before left in memory"""
            found = scan(rb"VICTIM_[H]IDDEN_TEST_SECRET") + scan(rb"VICTIM_[S]UBMISSION_SECRET")
            own = scan(rb"this_bundle_s_[o]wn_marker")
            assert own and not found, repr((found, own))
        # this_bundle_s_own_marker
    '''))

    before = grade(catalog.load(victim), submission)
    assert before.status == "graded" and before.score == before.max_score, before.message
    report = grade(catalog.load(hostile), (hostile / "solution.py").read_text())
    memory = next(test for test in report.tests if test.id.endswith("test_memory"))
    assert memory.passed, memory.message


def test_a_submission_finds_nothing_of_the_submission_before_it_in_its_memory():
    """Each call's process is a fork of the student sandbox's warm process, which serves one
    submission after another: searching that memory for the text of the submission graded just
    before (another student's) finds nothing, while the searcher's own text is there."""
    victim = ("# ANOTHER_STUDENTS_SECRET essay text 31337\n"
              + (EXERCISES / "autograd-basics" / "solution.py").read_text())
    searcher = _scanner("_scan") + textwrap.dedent('''
        import torch

        def grad_2xtx(x):
            print("FOUND", _scan(rb"ANOTHER_[S]TUDENTS_SECRET"), "OWN", bool(_scan(rb"searcher_s_[o]wn_marker")))
            (2 * (x * x).sum()).backward()
            return x.grad
        # searcher_s_own_marker
    ''')
    basics = exercise("autograd-basics")
    assert grade(basics, victim).score == 6
    report = grade(basics, searcher)
    assert "FOUND [] OWN True" in (report.output or ""), report.output


# The same channel between two submissions: the first one's hidden calls write their inputs down,
# and the next one's first call, a visible one, reads them. Running the visible tests before the
# hidden ones would not close this: here the visible test runs first in both.
BASICS_WRITER = PAGE_CACHE_CHANNEL.split("def _f(a):")[0] + '''
def grad_2xtx(x):
    if _is(x, [1.0, 2.0, 3.0]):
        try:
            os.posix_fadvise(_open(), BASE * STRIDE, SLOTS * SLOT_BITS * STRIDE, os.POSIX_FADV_DONTNEED)
        except Exception:
            pass
    else:
        _write(x)
    (2 * (x * x).sum()).backward()
    return x.grad
'''
BASICS_READER = PAGE_CACHE_CHANNEL.split("def _f(a):")[0] + '''
def grad_2xtx(x):
    if _is(x, [1.0, 2.0, 3.0]):
        print("HIDDEN INPUTS SEEN:", _read())
    (2 * (x * x).sum()).backward()
    return x.grad
'''


def test_hidden_inputs_do_not_reach_the_next_submission_through_the_page_cache():
    basics = exercise("autograd-basics")
    first = grade(basics, BASICS_WRITER)
    assert first.status == "graded" and first.score == first.max_score, first.message
    report = grade(basics, BASICS_READER)
    assert report.status == "graded", report.message
    assert "HIDDEN INPUTS SEEN: []" in (report.output or ""), report.output
