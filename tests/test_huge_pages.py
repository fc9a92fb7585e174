"""A warm process forks from a heap in 2 MiB pages (grader/inside/huge_pages.py): what it
folds reads back unchanged, and both rooms' warm processes are folded once ready."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

FOLD_64_MIB = r'''
import sys
from grader.inside import huge_pages
data = bytearray(range(256)) * (1 << 18)  # 64 MiB, every page written
folded = huge_pages.fold()
huge = [int(line.split()[1]) for line in open("/proc/self/smaps_rollup") if line.startswith("AnonHugePages:")][0]
intact = data == bytearray(range(256)) * (1 << 18)
print(folded >> 20, huge >> 10, intact)
'''


def folding(code: str = FOLD_64_MIB) -> list[str]:
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    return done.stdout.split()


def kernel_folds() -> bool:
    """MADV_COLLAPSE is Linux 6.1's; a kernel without it leaves the heap as it was."""
    return int(folding()[0]) > 0


def test_a_folded_heap_reads_back_unchanged_and_lies_in_huge_pages():
    folded_mib, huge_mib, intact = folding()
    assert intact == "True"
    if int(folded_mib) == 0:
        pytest.skip("this kernel does not fold memory into huge pages (MADV_COLLAPSE, Linux 6.1+)")
    assert int(folded_mib) >= 60 and int(huge_mib) >= 60


@pytest.mark.sandbox
@pytest.mark.skipif(os.geteuid() != 0, reason="the sandboxes' warm processes are read as root")
@pytest.mark.parametrize("room", ["student", "exercise"])
def test_each_rooms_warm_process_forks_from_a_heap_in_huge_pages(room):
    from grader.engine.exercise_sandbox import ExerciseSandbox
    from grader.engine.sandbox import Sandbox

    if not kernel_folds():
        pytest.skip("this kernel does not fold memory into huge pages (MADV_COLLAPSE, Linux 6.1+)")
    sandbox = Sandbox() if room == "student" else ExerciseSandbox()
    try:
        sandbox.start()
        launcher = sandbox._proc.pid  # bubblewrap; the warm process is its child
        [warm] = Path(f"/proc/{launcher}/task/{launcher}/children").read_text().split()
        rollup = Path(f"/proc/{warm}/smaps_rollup").read_text().splitlines()
        huge_kib = int(next(line for line in rollup if line.startswith("AnonHugePages:")).split()[1])
    finally:
        sandbox.close()
    assert huge_kib >= 64 << 10  # torch's heap is about 220 MiB, most of it folded
