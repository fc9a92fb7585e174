"""No two worker processes of a host run their sandboxes as the same uids, and a block
comes back when the process that held it ends."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from grader.engine import uids

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="only root changes uid, so only root claims")

CLAIM = "import sys; from pathlib import Path; from grader.engine import uids; " \
        "print(uids.claim(70000, claims=Path(sys.argv[1])), flush=True); sys.stdin.read()"


def _holder(claims):
    """A process that claims a block, says which, and holds it until its stdin closes."""
    proc = subprocess.Popen([sys.executable, "-c", CLAIM, str(claims)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    return proc, int(proc.stdout.readline())


def test_processes_at_once_hold_blocks_of_their_own(tmp_path):
    first, a = _holder(tmp_path)
    second, b = _holder(tmp_path)
    try:
        assert {a, b} == {70000, 70004}
        assert uids.claim(70000, claims=tmp_path) == 70008
        assert uids.claim(70000, claims=tmp_path) == 70008  # the same process, the same block
    finally:
        for proc in (first, second):
            proc.stdin.close()
            proc.wait()


def test_a_block_is_free_again_once_its_holder_ends_however_it_ends(tmp_path):
    proc, uid = _holder(tmp_path)
    proc.kill()  # no chance to let go itself
    proc.wait()
    again, uid_again = _holder(tmp_path)
    try:
        assert uid_again == uid == 70000
    finally:
        again.stdin.close()
        again.wait()


def test_a_forked_child_claims_its_own_block_and_leaves_its_parents(tmp_path):
    parent = uids.claim(70000, claims=tmp_path)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.write(write, str(uids.claim(70000, claims=tmp_path)).encode())
        finally:
            os._exit(0)
    os.close(write)
    child = int(os.read(read, 32))
    os.waitpid(pid, 0)
    os.close(read)
    assert (parent, child) == (70000, 70004)
    # The child's end let its block go; the parent still holds its own.
    assert uids.claim(70000, claims=tmp_path) == parent
    other, uid = _holder(tmp_path)
    try:
        assert uid == 70004
    finally:
        other.stdin.close()
        other.wait()


def test_a_host_with_every_block_held_gets_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(uids, "BLOCKS", 1)
    holder, _ = _holder(tmp_path)
    try:
        with pytest.raises(uids.NoFreeUids, match="GRADER_SANDBOX_UID"):
            uids.claim(70000, claims=tmp_path)
    finally:
        holder.stdin.close()
        holder.wait()


def test_a_folder_that_cannot_be_written_says_so(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(uids.NoFreeUids, match=r"the sandboxes' uids cannot be claimed: .*file/claims cannot be written"):
        uids.claim(70000, claims=tmp_path / "file" / "claims")


def test_a_worker_that_cannot_claim_uids_cannot_start_its_sandbox_and_says_why(monkeypatch, tmp_path):
    from grader.engine.sandbox import Sandbox
    from grader.engine.warm_process import SandboxUnavailable

    (tmp_path / "file").write_text("")
    monkeypatch.setattr(uids, "CLAIMS", tmp_path / "file" / "claims")
    box = Sandbox()
    try:
        with pytest.raises(SandboxUnavailable, match="cannot be written"):
            box.start()
    finally:
        box.close()
