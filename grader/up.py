"""``grader up``: the whole service on one machine, in one command.

With nothing configured it uses the SQLite file and the Redis URL of grader.settings,
migrates the database, publishes the exercises that are missing or out of date,
starts a Redis of its own when none listens at a local Redis URL, one Celery worker
(with the sweeper's beat inside it) and gunicorn serving the web app, and stays in
the foreground until Ctrl-C or SIGTERM, which stop all of them. Their logs go to
./instance/logs/. Once up, it supervises them: a part that dies is started again, with
growing pauses, while the others keep serving.

Publishing the catalogue folder is grader.catalog.publishing's: ``grader up`` publishes
the bundles the database lacks, ``grader exercise sync`` every bundle.
"""

from __future__ import annotations

import fcntl
import http.client
import ipaddress
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import click
import redis as redis_py
from gunicorn.config import KNOWN_SETTINGS
from sqlalchemy import select

from grader import catalog, db
from grader.accounts.models import Role, User
from grader.accounts.users import AccountError, create_user
from grader.catalog.publishing import publish, stale
from grader.engine import SandboxUnavailable
from grader.engine.grading import shutdown
from grader.settings import private_dir, settings

INSTRUCTOR_EMAIL = "instructor@localhost"
READY_PATH = "/api/v1/openapi.json"  # answers without a key
START_TIMEOUT_S = 240  # a first start on a slow machine imports torch a few times
STOP_TIMEOUT_S = 10  # per group of children, before they are killed
RESTART_FIRST_S = 1.0  # a part that died is started again after this, then twice as long...
RESTART_MAX_S = 60.0  # ...up to this
STEADY_S = 60.0  # a part up this long starts again after RESTART_FIRST_S, should it die


# ------------------------------------------------------------------ the children

class UpError(Exception):
    """grader up cannot start, or a part of it stopped; the message says which and why."""


class _Stop(BaseException):
    """SIGINT, SIGTERM or SIGHUP arrived: stop everything and exit 0."""


@dataclass
class Child:
    name: str  # what the messages call it
    process: subprocess.Popen
    log: Path
    log_start: int  # where this run's lines begin in the (appended) log
    argv: list[str] = field(default_factory=list)  # to start it again as it was started
    popen: dict = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)
    backoff: float = 1.0  # seconds before it is started again, should it die
    restart_at: float | None = None  # it died: when it starts again

    def output(self) -> str:
        with open(self.log, "rb") as file:
            file.seek(self.log_start)
            return file.read().decode("utf-8", "replace")

    def tail(self, lines: int = 20) -> str:
        return "\n".join("    " + line for line in self.output().splitlines()[-lines:])


@dataclass
class Children:
    logs: Path
    env: dict
    running: list[Child] = field(default_factory=list)

    def start(self, name: str, log_name: str, argv: list[str], **popen) -> Child:
        log = self.logs / log_name
        with open(log, "ab") as file:
            file.write(f"\n==== grader up: {' '.join(argv)}  ({time.strftime('%Y-%m-%d %H:%M:%S')})\n".encode())
            start = file.tell()
            # A session of its own: the terminal's Ctrl-C reaches only grader up, which
            # stops the children in order, and stopping one reaches its whole group
            # (gunicorn's workers, Celery's pool and beat).
            popen.setdefault("stdin", subprocess.DEVNULL)
            process = subprocess.Popen(argv, stdout=file, stderr=subprocess.STDOUT, env=self.env,
                                       start_new_session=True, **popen)
        child = Child(name, process, log, start, argv, popen)
        self.running.append(child)
        click.echo(f"started {name} (pid {process.pid}); log: {_shown(log)}")
        return child

    def dead(self) -> Child | None:
        return next((c for c in self.running if c.process.poll() is not None), None)

    def revive(self) -> None:
        """Once everything is up, a part that dies is started again, after 1 s, then 2, 4...
        up to RESTART_MAX_S (back to 1 s once it has stayed up STEADY_S), each time said on
        the terminal and in its log; the others keep running meanwhile: the web answers while
        the worker is down, and students are told their grade waits for it."""
        at = time.monotonic()
        for child in list(self.running):
            if child.process.poll() is None:
                if at - child.started > STEADY_S:
                    child.backoff = RESTART_FIRST_S
                continue
            if child.restart_at is None:
                child.restart_at = at + child.backoff
                click.echo(f"{child.name} (pid {child.process.pid}) exited with status {child.process.returncode}; "
                           f"starting it again in {child.backoff:g} s. The end of {_shown(child.log)}:\n"
                           f"{child.tail(10)}", err=True)
                continue
            if at >= child.restart_at:
                _signal_group(child, signal.SIGKILL)  # what is left of its group (a pool process)
                self.running.remove(child)
                again = self.start(child.name, child.log.name, child.argv, **child.popen)
                again.backoff = min(child.backoff * 2, RESTART_MAX_S)

    def stop(self) -> None:
        """The web server and the worker first, together; Redis last (the worker may
        still hand an unfinished task back to it)."""
        redis = [c for c in self.running if c.name == "redis-server"]
        _stop_group([c for c in self.running if c not in redis])
        _stop_group(redis)
        self.running.clear()


def _signal_group(child: Child, signum: int) -> None:
    try:
        os.killpg(child.process.pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def _stop_group(children: list[Child]) -> None:
    for child in children:
        if child.process.poll() is None:
            _signal_group(child, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    for child in children:
        try:
            child.process.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            click.echo(f"{child.name} (pid {child.process.pid}) did not stop in {STOP_TIMEOUT_S} s; killing it",
                       err=True)
        # Whatever of its group is left (a pool process, a worker the master lost) goes too.
        _signal_group(child, signal.SIGKILL)
        child.process.wait()


# ------------------------------------------------------------------ helpers

def _shown(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _is_local(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _listens(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


def _url_host(host: str) -> str:
    """How a URL spells HOST (an address everybody can reach for a wildcard)."""
    host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
    return f"[{host}]" if ":" in host else host


def _bind(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _answers(host: str, port: int, path: str) -> bool:
    """GET answers 200. http.client, not urllib: no proxy from the environment applies."""
    connection = http.client.HTTPConnection(_url_host(host).strip("[]"), port, timeout=5)
    try:
        connection.request("GET", path)
        return connection.getresponse().status == 200
    except (OSError, http.client.HTTPException):
        return False
    finally:
        connection.close()


def _check_port_free(host: str, port: int) -> None:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise UpError(f"cannot listen on {host}:{port} ({exc.strerror}); "
                          f"choose another port with --port") from None


def _gunicorn_extras() -> list[str]:
    """Newer gunicorns open a control socket under ~/.gunicorn: none here, so that two
    of these can run side by side and nothing is left outside ./instance."""
    flags = {flag for setting in KNOWN_SETTINGS for flag in (setting.cli or ())}
    return ["--no-control-socket"] if "--no-control-socket" in flags else []


def _gpu_present() -> bool:
    return Path("/dev/nvidiactl").exists()


# ------------------------------------------------------------------ the steps

def _redis(children: Children, redis_url: str, instance: Path) -> None:
    """Use the Redis at redis_url; start one there if it is local and nothing listens."""
    parts = urlsplit(redis_url)
    if parts.scheme not in ("redis", "rediss"):
        return  # a unix socket or a sentinel: somebody else runs it
    host, port = parts.hostname or "127.0.0.1", parts.port or 6379
    if _listens(host, port):
        click.echo(f"using the Redis at {host}:{port}")
        return
    if not _is_local(host):
        raise UpError(f"nothing answers at {host}:{port} (GRADER_REDIS_URL); start that Redis, "
                      f"or unset GRADER_REDIS_URL to let grader up start one here")
    server = shutil.which("redis-server")
    if server is None:
        raise UpError(f"no Redis listens at {host}:{port} and redis-server is not installed; install it "
                      f"(Debian/Ubuntu: sudo apt-get install redis-server) or point GRADER_REDIS_URL at a Redis")
    data = instance / "redis"
    data.mkdir(parents=True, exist_ok=True)
    bind = "127.0.0.1" if host == "localhost" else host
    # An append-only file (in ./instance/redis), so that tasks queued when it stops are
    # still there when it starts again, graded at once rather than when the sweeper
    # re-sends them; no snapshots: the database is the source of truth.
    argv = [server, "--port", str(port), "--bind", bind, "--save", "", "--appendonly", "yes",
            "--dir", str(data), "--logfile", "", "--daemonize", "no"]
    if parts.password:
        argv[1:1] = ["-"]  # the password is read from stdin, not shown in ps
    child = children.start("redis-server", "redis.log", argv,
                           **({"stdin": subprocess.PIPE} if parts.password else {}))
    if parts.password:
        child.process.stdin.write(f'requirepass "{parts.password}"\n'.encode())
        child.process.stdin.close()
    client = redis_py.Redis.from_url(redis_url, socket_connect_timeout=1, socket_timeout=2)
    deadline = time.monotonic() + 30
    while True:
        try:
            client.ping()
            break
        except redis_py.RedisError:
            if child.process.poll() is not None or time.monotonic() > deadline:
                raise UpError(f"the Redis it started did not come up; the end of {_shown(child.log)}:\n"
                              f"{child.tail()}") from None
            time.sleep(0.1)
    client.close()


def _first_instructor(database_url: str) -> tuple[str, str] | None:
    """(email, password) of the instructor account made now (an administrator: the first account
    holds the site-wide powers), where there is no administrator yet."""
    with db.transaction(database_url) as session:
        if session.scalar(select(User.id).where(User.role == Role.ADMIN).limit(1)) is not None:
            return None
        password = secrets.token_urlsafe(12)
        try:
            create_user(session, email=INSTRUCTOR_EMAIL, password=password, role=Role.ADMIN)
        except AccountError as exc:
            click.echo(f"no instructor account was made: {exc}", err=True)
            return None
    return INSTRUCTOR_EMAIL, password


def _publish_stale(database_url: str) -> None:
    try:
        bundles = stale(catalog.all_bundles(settings().exercises_dir), database_url)
    except catalog.CatalogError as exc:
        raise UpError(f"the catalogue cannot be loaded: {exc}") from None
    if not bundles:
        return
    click.echo(f"publishing {len(bundles)} exercise(s): grading each reference solution")
    try:
        failed = publish(bundles, database_url)
    except SandboxUnavailable as exc:
        raise UpError(f"cannot grade here: {exc}") from None
    finally:
        shutdown()  # this process grades nothing more: free its warm sandbox
    if failed:
        click.echo(f"{failed} exercise(s) could not be published; the others are", err=True)


def _wait_until_ready(children: Children, worker: Child, host: str, port: int) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    web_ready = worker_ready = False
    while not (web_ready and worker_ready):
        _check_alive(children)
        web_ready = web_ready or _answers(host, port, READY_PATH)
        worker_ready = worker_ready or " ready." in worker.output()
        if time.monotonic() > deadline:
            waiting = [n for n, ok in (("the web server", web_ready), ("the worker", worker_ready)) if not ok]
            raise UpError(f"{' and '.join(waiting)} did not become ready in {START_TIMEOUT_S} s; "
                          f"see {_shown(children.logs)}")
        time.sleep(0.2)


def _check_alive(children: Children) -> None:
    child = children.dead()
    if child is not None:
        raise UpError(f"{child.name} (pid {child.process.pid}) exited with status {child.process.returncode}; "
                      f"the end of {_shown(child.log)}:\n{child.tail()}")


def _on_signal(signum, _frame) -> None:
    # At once, not in the handler of _Stop: a second Ctrl-C arriving before that ran would
    # raise again there, cutting the stopping short with a traceback.
    _ignore(_STOPPING)
    raise _Stop(signum)


_STOPPING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _ignore(signals) -> None:
    """While stopping: a second Ctrl-C must not cut the stopping short."""
    for signum in signals:
        signal.signal(signum, signal.SIG_IGN)


def hold_instance(instance: Path):
    """The instance folder's lock, held while this `grader up` runs (the kernel lets it go
    when the process ends, however it ends): a second one on the same folder would share
    its database and Redis and take its tasks. UpError when another holds it."""
    lock = open(instance / "up.lock", "a+")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.seek(0)
        holder = lock.read().strip() or "?"
        lock.close()
        raise UpError(f"another grader up (pid {holder}) is running on {_shown(instance)}; stop it first, "
                      "or run this one from another folder") from None
    lock.truncate(0)
    lock.write(f"{os.getpid()}\n")
    lock.flush()
    return lock


def run(host: str = "127.0.0.1", port: int = 8000) -> int:
    """Start everything, wait until stopped. Returns the exit status: 0 when stopped by
    a signal, 1 when something could not start or died."""
    config = settings()
    instance = private_dir(Path.cwd() / "instance")  # the database and the key: the service's user only
    logs = instance / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "GRADER_DATABASE_URL": config.database_url, "GRADER_REDIS_URL": config.redis_url,
           "PYTHONUNBUFFERED": "1"}
    # Links in mail lead where this service answers, unless the operator named its public address.
    env.setdefault("GRADER_PUBLIC_URL", f"http://{_url_host(host)}:{port}")
    # One folder of counts for the web and the worker (all counters and histograms): the web's
    # /metrics then adds up the grades the worker counted, as one scrape.
    if not env.get("PROMETHEUS_MULTIPROC_DIR"):
        counts = instance / "metrics"
        shutil.rmtree(counts, ignore_errors=True)
        counts.mkdir()
        env["PROMETHEUS_MULTIPROC_DIR"] = str(counts)
    children = Children(logs, env)
    previous = {s: signal.signal(s, _on_signal) for s in _STOPPING}
    started = time.monotonic()
    lock = None
    try:
        lock = hold_instance(instance)
        _check_port_free(host, port)
        click.echo(f"database: {db.shown_url(config.database_url)}")
        db.upgrade(config.database_url)
        db.engine_for(config.database_url).dispose()
        _redis(children, config.redis_url, instance)
        # Live queues first: a worker takes a regrade only when no submission waits.
        queues = "cpu,gpu,cpu-regrade,gpu-regrade" if config.gpu_queue or _gpu_present() else "cpu,cpu-regrade"
        worker = children.start("the Celery worker", "worker.log", [
            sys.executable, "-m", "celery", "-A", "grader.tasks:celery", "worker", "-Q", queues,
            # Two grades at once where there are two cores (each pool process with sandboxes
            # of its own): one grade leaves a core idle while it waits on its sandboxes.
            "--concurrency", str(config.worker_concurrency), "-B", "--schedule-filename", str(instance / "celerybeat-schedule"),
            "--without-gossip", "--without-mingle", "--hostname", "grader-up@%h", "-l", "info"])
        children.start("gunicorn", "web.log", [
            sys.executable, "-m", "gunicorn", "--bind", f"{_bind(host)}:{port}",
            # One process, several threads: per-process state (rate-limit counters kept in
            # memory, the secret key made on first start) then has a single owner.
            "--workers", "1", "--worker-class", "gthread", "--threads", "8",
            "--graceful-timeout", "5", "--access-logfile", "-", "--error-logfile", "-",
            *_gunicorn_extras(), "grader.app:create_app()"])
        _publish_stale(config.database_url)  # while the children boot
        _wait_until_ready(children, worker, host, port)
        # Only now, so that a password is never made and then lost to a failed start.
        account = _first_instructor(config.database_url)
        db.engine_for(config.database_url).dispose()
        url = f"http://{_url_host(host)}:{port}/"
        if account:
            click.echo(f"an instructor account was made; its password is shown only this once:\n"
                       f"    email:    {account[0]}\n    password: {account[1]}")
        click.echo(f"logs: {_shown(logs)}/   (stop with Ctrl-C)")
        click.echo(f"grader is up: {url}   (in {time.monotonic() - started:.1f} s)")
        while True:
            children.revive()
            time.sleep(0.5)
    except _Stop:  # (_on_signal ignores the stop signals from then on)
        click.echo("stopping...")
        children.stop()
        click.echo("stopped")
        return 0
    except UpError as exc:
        _ignore(_STOPPING)
        click.echo(f"grader up: {exc}", err=True)
        if children.running:
            click.echo("stopping the others...", err=True)
        children.stop()
        return 1
    finally:
        children.stop()  # on any other exception too; a no-op once stopped
        for s, handler in previous.items():
            signal.signal(s, handler)
        if lock is not None:
            lock.close()
