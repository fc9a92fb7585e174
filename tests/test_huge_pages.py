"""A warm process folds its heap into 2 MiB pages once its forks have cost enough
(grader/inside/huge_pages.py): not before, what it folds reads back unchanged, and the
student sandbox's warm process, serving calls, comes to fork from huge pages."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# 64 MiB written, then forks until folding is due, then folded piece by piece.
FORK_THEN_FOLD = r'''
import os
from grader.inside import huge_pages

def huge_mib():
    rollup = open("/proc/self/smaps_rollup").read().splitlines()
    return int(next(l for l in rollup if l.startswith("AnonHugePages:")).split()[1]) >> 10

data = bytearray(range(256)) * (1 << 18)
due_at_start = huge_pages.due()
forks = 0
while not huge_pages.due() and forks < 10_000:
    pid = huge_pages.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    forks += 1
before = huge_mib()
steps = 0
while huge_pages.due():
    huge_pages.fold_next()
    steps += 1
print(due_at_start, forks, before, steps, huge_pages.folded >> 20, huge_mib(),
      data == bytearray(range(256)) * (1 << 18))
'''


def kernel_folds() -> bool:
    """MADV_COLLAPSE is Linux 6.1's; a kernel without it leaves the heap as it was. Asked of
    the kernel directly, not through the module under test."""
    code = """
import ctypes, mmap
area = mmap.mmap(-1, 8 << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
area.write(b"x" * (8 << 20))
start = ctypes.addressof(ctypes.c_char.from_buffer(area))
aligned = -(-start // (2 << 20)) * (2 << 20)
madvise = ctypes.CDLL(None, use_errno=True).madvise
madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
print(madvise(aligned, 2 << 20, 25) == 0)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return done.stdout.strip() == "True"


def test_the_heap_is_folded_only_once_forks_have_cost_enough_and_reads_back_unchanged():
    done = subprocess.run([sys.executable, "-c", FORK_THEN_FOLD], cwd=ROOT, capture_output=True, text=True,
                          check=True)
    due_at_start, forks, before, steps, folded, after, intact = done.stdout.split()
    assert due_at_start == "False" and 0 < int(forks) < 10_000
    assert int(before) == 0  # nothing folded before it was due
    assert intact == "True"
    if not kernel_folds():
        pytest.skip("this kernel does not fold memory into huge pages (MADV_COLLAPSE, Linux 6.1+)")
    assert int(steps) >= 4  # in pieces, so that a request arriving meanwhile waits little
    assert int(folded) >= 60 and int(after) >= 60


@pytest.mark.sandbox
@pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox's warm process is read as root")
def test_a_student_sandbox_serving_calls_comes_to_fork_from_huge_pages():
    from grader.engine.sandbox import Sandbox

    if not kernel_folds():
        pytest.skip("this kernel does not fold memory into huge pages (MADV_COLLAPSE, Linux 6.1+)")
    sandbox = Sandbox()

    def huge_mib() -> int:
        launcher = sandbox._proc.pid  # bubblewrap; the warm process is its child
        [warm] = Path(f"/proc/{launcher}/task/{launcher}/children").read_text().split()
        rollup = Path(f"/proc/{warm}/smaps_rollup").read_text().splitlines()
        return int(next(line for line in rollup if line.startswith("AnonHugePages:")).split()[1]) >> 10

    try:
        sandbox.start()
        time.sleep(0.5)  # its first spares forked
        assert huge_mib() < 16  # a single submission's forks do not pay for the folding
        submissions = 0
        while huge_mib() < 64 and submissions < 100:  # each: its calls, then spares forked again
            out = sandbox.call({"submission.py": "def f(x):\n    return 2 * x\n"}, "f", [21], {})
            assert (out.kind, out.value) == ("ok", 42)
            sandbox.reset()
            submissions += 1
            time.sleep(0.1)
        out = sandbox.call({"submission.py": "def f(x):\n    return 2 * x\n"}, "f", [4], {})
        assert (out.kind, out.value) == ("ok", 8)
    finally:
        sandbox.close()
    assert 1 < submissions < 100
