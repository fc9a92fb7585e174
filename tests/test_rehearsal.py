"""A spare rehearses a call while it waits (grader/inside/first_use.py), and the call it
then serves sees nothing of it: the same random numbers, modes and evidence as a call in a
child that did not rehearse."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grader.engine.sandbox import Limits, Sandbox

ROOT = Path(__file__).resolve().parent.parent

# A call's child as the warm process makes it (the witness installed, torch's first use
# paid), then a call: a retained graph backpropagated twice, and random numbers drawn.
CHILD = """
import json, sys, torch
from grader.inside import first_use, witness
witness.install()
first_use.pay()
state = lambda: (torch.get_rng_state().tolist(), torch.is_grad_enabled(), str(torch.get_default_dtype()),
                 list(witness._watched), witness._graph_count[0], len(witness._running))
before, generator = state(), torch.get_rng_state()
rehearsed = first_use.rehearse() if sys.argv[1] == "rehearse" else None
unchanged = state() == before
drawn = torch.rand(4).tolist()
torch.set_rng_state(generator)
undisturbed = torch.rand(4).tolist() == drawn  # what the generator would have given anyway
x = torch.tensor([1.0, -2.0, 0.5], requires_grad=True)
witness.watch([x])
y = 2 * x @ x
y.backward(retain_graph=True)
y.backward()
print(json.dumps({"rehearsed": rehearsed, "unchanged": unchanged, "origin": witness.origin(x),
                  "passes": witness.passes(x), "grad": x.grad.tolist(), "undisturbed": undisturbed}))
"""


def _child(mode: str) -> dict:
    run = subprocess.run([sys.executable, "-c", CHILD, mode], capture_output=True, text=True, cwd=ROOT, check=True)
    return json.loads(run.stdout)


def test_a_rehearsed_child_serves_its_call_as_a_child_that_did_not_rehearse():
    rehearsed, plain = _child("rehearse"), _child("plain")
    assert rehearsed.pop("rehearsed") is True  # it ran to its end: its copies are made
    assert rehearsed.pop("unchanged") is True and plain.pop("unchanged") is True
    plain.pop("rehearsed")
    assert rehearsed == plain
    assert rehearsed["origin"] == "backward" and rehearsed["passes"] == [0, 0] and rehearsed["undisturbed"]


RANDOM = "import torch\n\ndef f():\n    return torch.rand(4)\n"


@pytest.mark.sandbox
@pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox needs the worker to be root")
def test_calls_served_by_rehearsed_spares_draw_what_a_child_forked_for_its_call_draws():
    # Every call's child starts from the warm process's generator. Before its first
    # submission the sandbox keeps 6 spares, each rehearsed; a submission's 7th and 8th
    # calls find none and fork a child for the call, which rehearses nothing.
    box = Sandbox()
    try:
        box.start()
        time.sleep(1.0)  # its spares forked, each rehearsed
        drawn = []
        for _ in range(8):
            out = box.call({"submission.py": RANDOM}, "f", [], {}, limits=Limits(timeout=5))
            assert out.kind == "ok", out.detail
            drawn.append(out.value.data.tolist())
        box.reset()
    finally:
        box.close()
    assert all(values == drawn[-1] for values in drawn), drawn


def _warm_pid(box: Sandbox) -> str:
    launcher = box._proc.pid  # bubblewrap; the warm process is its child
    [warm] = Path(f"/proc/{launcher}/task/{launcher}/children").read_text().split()
    return warm


def _rollup_mib(pid: str, field: str) -> int:
    rollup = Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()
    return int(next(line for line in rollup if line.startswith(field + ":")).split()[1]) >> 10


def _spares_private_mib(box: Sandbox) -> list[int]:
    """Each idle spare's memory of its own (what its rehearsal copied, mostly): the warm
    process's children, the calls' uid in all four places."""
    warm = _warm_pid(box)
    sizes = []
    for pid in Path(f"/proc/{warm}/task/{warm}/children").read_text().split():
        status = Path(f"/proc/{pid}/status").read_text()
        uids = next(line for line in status.splitlines() if line.startswith("Uid:")).split()[1:]
        if len(set(uids)) == 1:
            sizes.append(_rollup_mib(pid, "Private_Dirty"))
    return sizes


def _folded(box: Sandbox, calls: int = 200) -> None:
    """Calls until the warm process has folded its heap into huge pages (grader/inside/
    huge_pages.py: once its forks have cost enough), and until it is done folding. A spare
    forked before a fold keeps the small pages the warm process gave up: ~200 MiB of its
    own, which no rehearsal made. (A kernel that folds nothing changes no spare.)"""
    warm = _warm_pid(box)
    for _ in range(calls):
        if _rollup_mib(warm, "AnonHugePages"):
            break
        out = box.call({"submission.py": "def f(x):\n    return 2 * x\n"}, "f", [21], {})
        assert (out.kind, out.value) == ("ok", 42)
        box.reset()
    folded, settled = -1, _rollup_mib(warm, "AnonHugePages")
    while folded != settled:  # a piece at a time, while idle
        time.sleep(0.5)
        folded, settled = settled, _rollup_mib(warm, "AnonHugePages")


@pytest.mark.sandbox
@pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox needs the worker to be root")
def test_spares_rehearse_while_submissions_leave_idle_time_and_not_while_they_come_back_to_back():
    box = Sandbox()

    def submissions(n: int, gap_s: float) -> list[int]:
        for _ in range(n):
            time.sleep(gap_s)
            out = box.call({"submission.py": "def f(x):\n    return 2 * x\n"}, "f", [21], {})
            assert (out.kind, out.value) == ("ok", 42)
            box.reset()
        time.sleep(1.0)  # the spares forked since the last one
        return _spares_private_mib(box)

    try:
        box.start()
        _folded(box)  # as a sandbox that has graded a while: no fold during what is measured
        # Each submission takes the oldest spare: after eight, every spare is one forked since
        # the third (when the last three had each come at once, or each after a pause).
        busy = submissions(8, 0.0)
        idle = submissions(8, 0.15)
        busy_again = submissions(8, 0.0)
    finally:
        box.close()
    assert busy and idle and busy_again
    assert max(busy) < min(idle) and max(busy_again) < min(idle), (busy, idle, busy_again)
