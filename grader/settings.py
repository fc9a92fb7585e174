"""Configuration, read from the environment in one place.

Every setting has a default that works on a single development machine.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
MAX_SOURCE_BYTES = 256 * 1024  # largest submission accepted, everywhere


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


@dataclass(frozen=True)
class Settings:
    exercises_dir: Path
    # "bwrap" is the only safe choice; "none" runs submissions unconfined and
    # every report produced that way says so.
    sandbox: str
    sandbox_uid: int  # the warm process's uid; calls run as sandbox_uid + 1
    sandbox_tmp_mb: int  # size of the sandbox's /tmp (memory)
    device: str  # "auto", "cpu" or "cuda": what this worker may use
    database_url: str
    redis_url: str
    gpu_queue: bool  # the deployment has GPU workers: "any" exercises go to the gpu queue
    secret_key: str | None  # signs the web sessions; None: one kept in ./instance/secret_key
    submission_rate_limit: str  # per user, Flask-Limiter's notation

    @classmethod
    def from_env(cls) -> "Settings":
        unsafe = _flag("GRADER_UNSAFE_NO_SANDBOX")
        return cls(
            exercises_dir=Path(os.environ.get("GRADER_EXERCISES_DIR", REPO_ROOT / "exercises")),
            sandbox="none" if unsafe else "bwrap",
            sandbox_uid=int(os.environ.get("GRADER_SANDBOX_UID", 61000 + 2 * (os.getpid() % 2000))),
            sandbox_tmp_mb=int(os.environ.get("GRADER_SANDBOX_TMP_MB", 512)),
            device=os.environ.get("GRADER_DEVICE", "auto"),
            database_url=os.environ.get("GRADER_DATABASE_URL",
                                        f"sqlite:///{Path.cwd() / 'instance' / 'grader.db'}"),
            redis_url=os.environ.get("GRADER_REDIS_URL", "redis://127.0.0.1:6379/0"),
            gpu_queue=_flag("GRADER_GPU_QUEUE"),
            secret_key=os.environ.get("GRADER_SECRET_KEY") or None,
            submission_rate_limit=os.environ.get("GRADER_SUBMISSION_RATE_LIMIT", "20 per minute"),
        )


def settings() -> Settings:
    return Settings.from_env()
