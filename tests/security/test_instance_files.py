"""The instance folder is the service's user's alone (class 12): made 0700, with the
SQLite database (password hashes, the LTI private key, webhook secrets) and the session
key 0600, whatever the umask; a folder and database left readable by an older version
are tightened when the service next starts."""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run_in(folder: Path, *argv: str) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("GRADER_DATABASE_URL", "GRADER_SECRET_KEY",
                                                            "GRADER_INSTANCE_DIR")}
    env["PYTHONPATH"] = str(ROOT)  # this checkout's grader, run from another folder
    result = subprocess.run([sys.executable, *argv], cwd=folder, env=env, capture_output=True, text=True,
                            preexec_fn=lambda: os.umask(0o022), timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


START_WEB = "from grader.app import create_app; create_app()"


@pytest.mark.slow  # takes seconds: left out of the fast loop
def test_a_new_instance_folder_is_private(tmp_path):
    run_in(tmp_path, "-m", "grader.cli", "db", "upgrade")
    run_in(tmp_path, "-c", START_WEB)
    instance = tmp_path / "instance"
    assert mode(instance) == 0o700
    assert mode(instance / "grader.db") == 0o600
    assert mode(instance / "secret_key") == 0o600
    for extra in ("grader.db-wal", "grader.db-shm"):
        if (instance / extra).exists():
            assert mode(instance / extra) & 0o077 == 0, extra


def test_an_instance_left_readable_is_tightened_at_the_next_start(tmp_path):
    instance = tmp_path / "instance"
    instance.mkdir(mode=0o755)
    sqlite3.connect(instance / "grader.db").close()
    os.chmod(instance, 0o755)
    os.chmod(instance / "grader.db", 0o644)
    run_in(tmp_path, "-m", "grader.cli", "db", "upgrade")
    assert mode(instance) == 0o700 and mode(instance / "grader.db") == 0o600
