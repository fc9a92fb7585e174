"""Configuration, read from the environment in one place.

Every setting has a default that works on a single development machine. `settings()` is
the process's one typed object, parsed once: again only if the environment it came from
changes (as tests change it), never per call. Nothing else of ours reads the environment,
but the sandboxes' own code (``grader.inside``), which cannot import this module and reads
what the worker hands it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
MAX_SOURCE_BYTES = 256 * 1024  # largest submission accepted, everywhere
# A notebook (.ipynb) submitted: its JSON, refused over this before it is parsed, and its cells.
# (Its graded source, the code cells, is held to MAX_SOURCE_BYTES like any other.)
MAX_NOTEBOOK_BYTES = 1024 * 1024
MAX_NOTEBOOK_CELLS = 1000
# Who may read /metrics when no GRADER_METRICS_TOKEN is set: loopback and private networks.
METRICS_NETWORKS = "127.0.0.0/8 ::1/128 10.0.0.0/8 172.16.0.0/12 192.168.0.0/16 fc00::/7"


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


@dataclass(frozen=True)
class Settings:
    exercises_dir: Path
    # "bwrap" is the only safe choice; "none" runs submissions unconfined and
    # every report produced that way says so.
    sandbox: str
    # Where the sandboxes' uids begin. Each worker process claims a block of four of its own
    # (engine/uids.py): the student sandbox's warm process, its calls, the exercise
    # sandbox's warm process, its suites (each room's pair apart from the other's).
    sandbox_uid: int
    sandbox_tmp_mb: int  # size of the sandbox's /tmp (memory)
    sandbox_cgroup: str  # where sandboxes' cgroups go; "": found from the worker's own (see engine/cgroup.py)
    device: str  # "auto", "cpu" or "cuda": what this worker may use
    database_url: str
    redis_url: str
    gpu_queue: bool  # the deployment has GPU workers: "any" exercises go to the gpu queue
    secret_key: str | None  # signs the web sessions; None: one kept in ./instance/secret_key
    submission_rate_limit: str  # per user, Flask-Limiter's notation
    practice_rate_limit: str    # practice runs per user, counted apart from submissions
    api_key_rate_limit: str  # per API key, whatever the user: changing `user` does not reset it
    api_new_users_per_hour: int  # users an API key may make in an hour
    # Failed sign-ins (Flask-Limiter's notation), counted per account and per address; once
    # over, even the right password waits.
    login_account_limit: str
    login_address_limit: str
    signup_address_limit: str
    # "Forgot your password?" asked (mail or not), per address asked about and per client.
    reset_account_limit: str
    reset_address_limit: str
    session_hours: float  # a signed-in session ends this long after the sign-in
    # Origins that may frame the student pages besides the registered platforms' own (an LMS
    # whose pages live elsewhere than its issuer, such as a hosted Canvas's school domain).
    frame_ancestors: str
    # Served over HTTPS (behind a proxy, say): session cookies SameSite=None; Secure, as an
    # LMS iframe needs. Off for plain-HTTP development.
    cookie_secure: bool
    trusted_proxies: int  # proxies in front that set X-Forwarded-*; 0: trust none (ProxyFix off)
    lti_score_policy: str  # what goes to the LMS gradebook: "best" or "latest"
    # Platform URLs and deep linking returns over plain http: for development and tests only.
    lti_allow_http: bool
    http_timeout_s: float  # each outgoing HTTP request (LMS services, webhooks)
    retry_base_s: float  # first back-off of score passback and webhook deliveries; doubles
    # Outgoing requests (webhooks, LMS services) may call private, loopback and link-local
    # addresses (the service's own network): off, so an API client or a registered platform
    # cannot make the workers probe it.
    outbound_allow_private: bool
    bundle_cache: Path  # where a worker unpacks uploaded bundles
    # /metrics: a bearer token the scraper sends ("": none), else only these client networks.
    metrics_token: str = ""
    metrics_networks: str = METRICS_NETWORKS
    log_format: str = "text"  # "json": one JSON object per line (grader/logs.py)
    worker_metrics_port: int = 0  # a worker serves its /metrics on this port; 0: it does not
    # Where the default database and the session signing key live.
    instance_dir: Path = Path("instance")
    database_url_given: bool = False  # GRADER_DATABASE_URL was set (else the instance folder's SQLite)
    # The longest a grade may take; Redis hands an unacknowledged task to another worker after it.
    grade_limit_s: int = 360
    # Grades a worker runs at once (its pool's processes, each with sandboxes of its own).
    worker_concurrency: int = 1
    now: str = ""  # GRADER_NOW: the service's clock fixed at this ISO 8601 time, or "@" and a file holding it
    prometheus_multiproc_dir: str = ""  # PROMETHEUS_MULTIPROC_DIR: counts shared by a pool's processes
    api_key: str = ""  # GRADER_API_KEY: the key `grader exercise push` sends
    # The CPU weight (cgroup v2 units, 1-10000) of all of a worker's sandboxes together;
    # None: the worker's own group's, so that on a busy host they get what the worker gets.
    sandbox_cpu_weight: int | None = None
    # Outgoing mail (grader.mail): "smtp://user:password@host:587" (STARTTLS where the server
    # offers it; "?starttls=require" insists), "smtps://..." (TLS from the start); "": none,
    # and mail goes to the instance folder's outbox and the administrators' mail page.
    smtp_url: str = ""
    mail_from: str = "grader@localhost"
    # The site's address as the world reaches it: every link in a mail begins with it.
    public_url: str = "http://127.0.0.1:8000"

    def secrets(self) -> list[str]:
        """What logs must never show (masked wherever it appears in a line)."""
        return [s for s in (self.secret_key or "", self.metrics_token, self.api_key, _password_of(self.smtp_url))
                if len(s) >= 8]

    @classmethod
    def from_env(cls) -> "Settings":
        unsafe = _flag("GRADER_UNSAFE_NO_SANDBOX")
        instance = Path(os.environ.get("GRADER_INSTANCE_DIR") or Path.cwd() / "instance")
        return cls(
            exercises_dir=Path(os.environ.get("GRADER_EXERCISES_DIR", REPO_ROOT / "exercises")),
            sandbox="none" if unsafe else "bwrap",
            sandbox_uid=int(os.environ.get("GRADER_SANDBOX_UID", 61000)),
            sandbox_tmp_mb=int(os.environ.get("GRADER_SANDBOX_TMP_MB", 512)),
            sandbox_cgroup=os.environ.get("GRADER_CGROUP", ""),
            sandbox_cpu_weight=_cpu_weight(os.environ.get("GRADER_SANDBOX_CPU_WEIGHT", "")),
            device=os.environ.get("GRADER_DEVICE", "auto"),
            database_url=os.environ.get("GRADER_DATABASE_URL",
                                        f"sqlite:///{Path.cwd() / 'instance' / 'grader.db'}"),
            redis_url=os.environ.get("GRADER_REDIS_URL", "redis://127.0.0.1:6379/0"),
            gpu_queue=_flag("GRADER_GPU_QUEUE"),
            secret_key=os.environ.get("GRADER_SECRET_KEY") or None,
            submission_rate_limit=os.environ.get("GRADER_SUBMISSION_RATE_LIMIT", "20 per minute"),
            practice_rate_limit=os.environ.get("GRADER_PRACTICE_RATE_LIMIT", "30 per minute"),
            api_key_rate_limit=os.environ.get("GRADER_API_KEY_RATE_LIMIT", "600 per minute"),
            api_new_users_per_hour=int(os.environ.get("GRADER_API_NEW_USERS_PER_HOUR", 200)),
            login_account_limit=os.environ.get("GRADER_LOGIN_ACCOUNT_LIMIT", "5 per minute; 20 per hour"),
            login_address_limit=os.environ.get("GRADER_LOGIN_ADDRESS_LIMIT", "20 per minute; 100 per hour"),
            # accounts made through invitation links, per address (a classroom shares one)
            signup_address_limit=os.environ.get("GRADER_SIGNUP_ADDRESS_LIMIT", "60 per hour; 300 per day"),
            reset_account_limit=os.environ.get("GRADER_RESET_ACCOUNT_LIMIT", "3 per hour; 10 per day"),
            reset_address_limit=os.environ.get("GRADER_RESET_ADDRESS_LIMIT", "20 per hour; 100 per day"),
            session_hours=float(os.environ.get("GRADER_SESSION_HOURS", 12)),
            frame_ancestors=os.environ.get("GRADER_FRAME_ANCESTORS", ""),
            cookie_secure=_flag("GRADER_COOKIE_SECURE"),
            trusted_proxies=int(os.environ.get("GRADER_TRUSTED_PROXIES", 0)),
            lti_score_policy=os.environ.get("GRADER_LTI_SCORE_POLICY", "best"),
            lti_allow_http=_flag("GRADER_LTI_ALLOW_HTTP"),
            http_timeout_s=float(os.environ.get("GRADER_HTTP_TIMEOUT_S", 10)),
            retry_base_s=float(os.environ.get("GRADER_RETRY_BASE_S", 30)),
            outbound_allow_private=_flag("GRADER_OUTBOUND_ALLOW_PRIVATE") or _flag("GRADER_WEBHOOK_ALLOW_PRIVATE"),
            bundle_cache=Path(os.environ.get("GRADER_BUNDLE_CACHE", Path.cwd() / "instance" / "bundles")),
            metrics_token=os.environ.get("GRADER_METRICS_TOKEN", "").strip(),
            metrics_networks=os.environ.get("GRADER_METRICS_NETWORKS", METRICS_NETWORKS),
            log_format=os.environ.get("GRADER_LOG_FORMAT", "text").strip().lower() or "text",
            worker_metrics_port=int(os.environ.get("GRADER_WORKER_METRICS_PORT") or 0),
            instance_dir=instance,
            database_url_given="GRADER_DATABASE_URL" in os.environ,
            grade_limit_s=int(os.environ.get("GRADER_GRADE_LIMIT_S", 360)),
            worker_concurrency=_positive("GRADER_WORKER_CONCURRENCY", min(2, len(os.sched_getaffinity(0)))),
            now=os.environ.get("GRADER_NOW", "").strip(),
            prometheus_multiproc_dir=os.environ.get("PROMETHEUS_MULTIPROC_DIR", ""),
            api_key=os.environ.get("GRADER_API_KEY", ""),
            smtp_url=os.environ.get("GRADER_SMTP_URL", "").strip(),
            mail_from=os.environ.get("GRADER_MAIL_FROM", "").strip() or "grader@localhost",
            public_url=(os.environ.get("GRADER_PUBLIC_URL", "").strip() or "http://127.0.0.1:8000").rstrip("/"),
        )


_read: tuple[tuple, Settings] | None = None


def settings() -> Settings:
    """This process's settings: parsed from the environment once, and again only when the
    variables they come from (or the folder defaults are relative to) have changed, or in a
    forked child (its sandboxes' uids come from its own pid)."""
    global _read
    source = (os.getpid(), os.getcwd(), *sorted((k, v) for k, v in os.environ.items()
                                   if k.startswith("GRADER_") or k == "PROMETHEUS_MULTIPROC_DIR"))
    if _read is None or _read[0] != source:
        _read = (source, Settings.from_env())
    return _read[1]


def private_dir(path: Path) -> Path:
    """A folder only the service's user can enter (0700), made so or tightened: the
    instance folder holds the database (password hashes, the LTI private key, webhook
    secrets) and the session signing key."""
    path = Path(path)
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    if path.stat().st_mode & 0o077:
        path.chmod(0o700)
    return path


def private_file(path: Path) -> Path:
    """A file only the service's user can read (0600): created so, or tightened."""
    path = Path(path)
    os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
    mode = path.stat().st_mode
    if mode & 0o077:
        path.chmod(mode & 0o700)
    return path


def _password_of(url: str) -> str:
    """The password in a URL's user part ("" where there is none)."""
    from urllib.parse import unquote, urlsplit

    try:
        return unquote(urlsplit(url).password or "")
    except ValueError:
        return ""


def _cpu_weight(text: str) -> int | None:
    if not text.strip():
        return None
    if not text.strip().isdigit() or not 1 <= int(text) <= 10_000:
        raise ValueError(f"GRADER_SANDBOX_CPU_WEIGHT is a cgroup v2 CPU weight from 1 to 10000, not {text!r}")
    return int(text)


def _positive(name: str, default: int) -> int:
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"{name} is a whole number of at least 1, not {text!r}")
    return int(text)
