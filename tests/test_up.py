"""`grader up`: the whole service from one command, as a newcomer starts it (a real
Redis it starts itself, a real worker, gunicorn), and the docker-compose file."""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GRADER = Path(sys.executable).with_name("grader")
SOLUTION = ROOT / "exercises" / "autograd-basics" / "solution.py"
# Right, and slow enough (a second a call) to be caught mid-grade.
SLOW_SOLUTION = SOLUTION.read_text().replace("    y.backward()", "    __import__('time').sleep(1)\n    y.backward()")


def free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def environment(redis_port: int, **extra: str) -> dict:
    """Nothing configured but a Redis URL where nothing listens yet."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRADER_")}
    env.update(GRADER_REDIS_URL=f"redis://127.0.0.1:{redis_port}/0", **extra)
    if "GRADER_UNSAFE_NO_SANDBOX" in os.environ:
        env["GRADER_UNSAFE_NO_SANDBOX"] = os.environ["GRADER_UNSAFE_NO_SANDBOX"]
    return env


# ------------------------------------------------------------------ processes, from /proc

def _stat(pid: int) -> tuple[str, int, int] | None:
    """(state, parent pid, start time) of a process, or None when there is none."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()
    return fields[0], int(fields[1]), int(fields[19])


def descendants(pid: int) -> set[tuple[int, int]]:
    """Every process below pid, as (pid, start time) so that a reused pid is not taken for it."""
    children: dict[int, list[tuple[int, int]]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (stat := _stat(int(entry.name))) is not None:
            children.setdefault(stat[1], []).append((int(entry.name), stat[2]))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child[0])
    return found


def alive(process: tuple[int, int]) -> bool:
    stat = _stat(process[0])
    return stat is not None and stat[2] == process[1] and stat[0] != "Z"


def wait_until_gone(processes: set[tuple[int, int]], seconds: float = 15) -> set[tuple[int, int]]:
    deadline = time.monotonic() + seconds
    while (left := {p for p in processes if alive(p)}) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


class Up:
    """`grader up` running in a folder of its own, its output in a file."""

    def __init__(self, folder: Path, env: dict, *args: str):
        self.output_file = folder / f"up-{time.monotonic_ns()}.out"
        with open(self.output_file, "w") as out:
            self.process = subprocess.Popen([str(GRADER), "up", *args], cwd=folder, env=env,
                                            stdout=out, stderr=subprocess.STDOUT)
        self.seen: set[tuple[int, int]] = set()

    def output(self) -> str:
        return self.output_file.read_text()

    def wait_for(self, pattern: str, seconds: float = 300) -> re.Match:
        deadline = time.monotonic() + seconds
        while (found := re.search(pattern, self.output())) is None:
            assert self.process.poll() is None, f"grader up exited {self.process.returncode}:\n{self.output()}"
            assert time.monotonic() < deadline, f"no {pattern!r} in {seconds} s:\n{self.output()}"
            self.seen |= descendants(self.process.pid)
            time.sleep(0.2)
        return found

    def child_pid(self, name: str) -> int:
        """The pid of the latest start of ``name``."""
        return int(re.findall(rf"started {name} \(pid (\d+)\)", self.output())[-1])

    def kill_everything(self) -> None:
        """After a failed test: nothing of it may outlive the test."""
        self.seen |= descendants(self.process.pid)
        for pid, start in self.seen:
            if alive((pid, start)):
                os.kill(pid, signal.SIGKILL)
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def request(port: int, method: str, path: str, body: dict | None = None, key: str | None = None):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        if body is not None:
            headers["Content-Type"] = "application/json"
        connection.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
        response = connection.getresponse()
        return response.status, json.loads(response.read() or b"null")
    finally:
        connection.close()


# ------------------------------------------------------------------ the tests

needs_redis_server = pytest.mark.skipif(
    not any((Path(d) / "redis-server").exists() for d in os.environ.get("PATH", "").split(os.pathsep)),
    reason="redis-server is not installed (apt-get install redis-server)")


@pytest.mark.slow
@needs_redis_server
def test_grader_up_starts_everything_grades_a_submission_and_stops_on_ctrl_c(tmp_path):
    from grader import db
    from grader.accounts import keys

    web_port, redis_port = free_ports(2)
    up = Up(tmp_path, environment(redis_port), "--port", str(web_port))
    try:
        url = up.wait_for(r"grader is up: (http://\S+)").group(1)
        assert url == f"http://127.0.0.1:{web_port}/"
        output = up.output()
        assert "publishing 11 exercise(s)" in output and "ok   autograd-basics v1: 6 points" in output
        assert re.search(r"email: +instructor@localhost\n +password: +\S{8,}", output)
        assert "instance/logs" in output
        redis = up.child_pid("redis-server")
        assert "redis-server" in command_line(redis) and f":{redis_port}" in command_line(redis)
        assert (tmp_path / "instance" / "grader.db").is_file()
        assert {"redis.log", "worker.log", "web.log"} <= {p.name for p in (tmp_path / "instance" / "logs").iterdir()}

        status, document = request(web_port, "GET", "/api/v1/openapi.json")
        assert status == 200 and document["openapi"].startswith("3.")

        database = f"sqlite:///{tmp_path / 'instance' / 'grader.db'}"
        with db.transaction(database) as session:
            _, key = keys.create(session, ["submissions:read", "submissions:write"], name="test_up")
        db.engine_for(database).dispose()
        status, created = request(web_port, "POST", "/api/v1/submissions", key=key, body={
            "exercise": "autograd-basics", "source": SOLUTION.read_text(), "user": "newcomer"})
        assert status == 202, created
        path = "/" + created["url"].split("/", 3)[3]
        deadline = time.monotonic() + 180
        while True:
            status, submission = request(web_port, "GET", path, key=key)
            assert status == 200, submission
            if submission["status"] in ("graded", "failed"):
                break
            assert time.monotonic() < deadline, f"still {submission['status']}:\n{up.output()}"
            time.sleep(0.3)
        assert submission["status"] == "graded" and submission["score"] == submission["max_score"] == 6
        connection = http.client.HTTPConnection("127.0.0.1", web_port, timeout=30)
        connection.request("GET", "/metrics")  # the web's, with what the worker counted
        scraped = connection.getresponse().read().decode()
        connection.close()
        assert re.search(r'grader_grades_finished_total\{exercise="autograd-basics",status="graded"\} 1\.0', scraped)
        assert re.search(r'grader_submissions_received_total\{exercise="autograd-basics",way="api"\} 1\.0', scraped)

        if len(os.sched_getaffinity(0)) >= 2:  # two cores: two grades at once, each in sandboxes of its own
            paths = []
            for student in ("first", "second"):
                status, created = request(web_port, "POST", "/api/v1/submissions", key=key, body={
                    "exercise": "autograd-basics", "source": SLOW_SOLUTION, "user": student})
                assert status == 202, created
                paths.append("/" + created["url"].split("/", 3)[3])
            both_running, deadline = False, time.monotonic() + 120
            while True:
                states = [request(web_port, "GET", p, key=key)[1]["status"] for p in paths]
                both_running |= states == ["running", "running"]
                if states == ["graded", "graded"]:
                    break
                assert time.monotonic() < deadline, f"{states}:\n{up.output()}"
                time.sleep(0.1)
            assert both_running

        up.seen |= descendants(up.process.pid)
        names = " ".join(command_line(pid) for pid, _ in up.seen)
        assert "redis-server" in names and "celery" in names and "gunicorn" in names
        started = time.monotonic()
        up.process.send_signal(signal.SIGINT)
        up.process.send_signal(signal.SIGINT)  # pressed twice: the second changes nothing
        assert up.process.wait(45) == 0, up.output()
        assert "Traceback" not in up.output()
        assert time.monotonic() - started < 30
        assert wait_until_gone(up.seen) == set(), [command_line(pid) for pid, _ in up.seen]
        assert "stopped" in up.output()
    finally:
        up.kill_everything()

    # Started again in the same folder: nothing to publish, no second instructor. A part
    # that dies is started again while the others keep serving: a student whose grade waits
    # for the killed worker is told so within seconds, and it is graded once the worker is back.
    again = Up(tmp_path, environment(redis_port), "--port", str(web_port))
    try:
        again.wait_for(r"grader is up: http://")
        assert "publishing" not in again.output() and "instructor account was made" not in again.output()
        worker = again.child_pid("the Celery worker")
        status, created = request(web_port, "POST", "/api/v1/submissions", key=key, body={
            "exercise": "autograd-basics", "source": SLOW_SOLUTION, "user": "newcomer"})
        assert status == 202, created
        path = "/" + created["url"].split("/", 3)[3]
        deadline = time.monotonic() + 60
        while (submission := request(web_port, "GET", path, key=key)[1])["status"] != "running":
            assert time.monotonic() < deadline, submission
            time.sleep(0.2)
        os.killpg(worker, signal.SIGSTOP)  # hung mid-grade: not dead, so not restarted, and silent
        deadline = time.monotonic() + 30
        while not (submission := request(web_port, "GET", path, key=key)[1])["delayed"]:  # the web answers
            assert submission["status"] == "running" and time.monotonic() < deadline, submission
            time.sleep(0.5)
        os.killpg(worker, signal.SIGKILL)  # dead: started again, it takes the grade up at once
        again.wait_for(r"the Celery worker \(pid \d+\) exited with status -9; starting it again in 1 s")
        deadline = time.monotonic() + 180
        while (submission := request(web_port, "GET", path, key=key)[1])["status"] != "graded":
            assert time.monotonic() < deadline, f"still {submission}:\n{again.output()}"
            time.sleep(0.5)
        assert submission["score"] == 6 and submission["delayed"] is False
        assert again.child_pid("the Celery worker") != worker

        os.kill(again.child_pid("gunicorn"), signal.SIGKILL)
        again.wait_for(r"gunicorn \(pid \d+\) exited with status -9; starting it again")
        deadline = time.monotonic() + 60
        while len(re.findall(r"started gunicorn \(pid", again.output())) < 2 or not _answers(web_port):
            assert time.monotonic() < deadline, again.output()
            time.sleep(0.5)
        again.seen |= descendants(again.process.pid)
        again.process.send_signal(signal.SIGINT)
        assert again.process.wait(45) == 0, again.output()
        assert wait_until_gone(again.seen) == set(), [command_line(pid) for pid, _ in again.seen]
    finally:
        again.kill_everything()


def _answers(port: int) -> bool:
    try:
        return request(port, "GET", "/api/v1/openapi.json")[0] == 200
    except OSError:
        return False


@pytest.mark.slow  # takes seconds: left out of the fast loop
def test_grader_up_says_which_package_to_install_without_redis_server(tmp_path):
    (tmp_path / "bin").mkdir()
    _, redis_port = free_ports(2)
    env = environment(redis_port, PATH=str(tmp_path / "bin"))  # no redis-server on it
    result = subprocess.run([str(GRADER), "up", "--port", str(free_ports(1)[0])], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert "redis-server is not installed" in result.stderr and "apt-get install redis-server" in result.stderr


@pytest.mark.slow  # takes seconds: left out of the fast loop
def test_grader_up_refuses_a_port_that_is_taken(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run([str(GRADER), "up", "--port", str(port)], cwd=tmp_path,
                                env=environment(free_ports(1)[0]), capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr and "--port" in result.stderr
    assert not (tmp_path / "instance" / "logs").exists() or not any((tmp_path / "instance" / "logs").iterdir())


@pytest.mark.slow  # takes seconds: left out of the fast loop
def test_a_second_grader_up_on_the_same_folder_refuses_to_start(tmp_path):
    import fcntl

    (tmp_path / "instance").mkdir()
    with open(tmp_path / "instance" / "up.lock", "w") as held:  # as a running grader up holds it
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.write("4242\n")
        held.flush()
        result = subprocess.run([str(GRADER), "up", "--port", str(free_ports(1)[0])], cwd=tmp_path,
                                env=environment(free_ports(1)[0]), capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert "another grader up (pid 4242) is running on" in result.stderr and "stop it first" in result.stderr
    assert not (tmp_path / "instance" / "grader.db").exists()  # it touched nothing


# ------------------------------------------------------------------ docker-compose.yml

def test_the_compose_file_has_every_service_and_only_settings_the_grader_reads():
    yaml = pytest.importorskip("yaml")
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    assert {"redis", "postgres", "web", "worker-cpu", "worker-gpu", "beat"} <= set(services)
    assert services["worker-gpu"]["profiles"] == ["gpu"]
    assert "profiles" not in services["web"] and "profiles" not in services["worker-cpu"]
    devices = services["worker-gpu"]["deploy"]["resources"]["reservations"]["devices"]
    assert devices[0]["driver"] == "nvidia" and devices[0]["capabilities"] == ["gpu"]
    assert "-Q gpu" in " ".join(map(str, services["worker-gpu"]["command"]))
    assert "-Q cpu" in " ".join(map(str, services["worker-cpu"]["command"]))
    assert "--appendonly yes" in " ".join(map(str, services["redis"]["command"]))
    assert "healthcheck" in services["postgres"]

    # What the containers are given, the grader reads (the file's own ${GRADER_IMAGE}-style
    # variables, which choose images, are compose's).
    read = set(re.findall(r"GRADER_[A-Z0-9_]+", "".join(
        path.read_text() for path in (ROOT / "grader").rglob("*.py"))))
    used = {name for service in services.values() for name in (service.get("environment") or {})
            if name.startswith("GRADER_")}
    assert used and used <= read, f"set in docker-compose.yml, read nowhere: {sorted(used - read)}"
    # Every part of the service agrees on where "any" exercises go.
    grader_services = ("migrate", "web", "worker-cpu", "worker-gpu", "beat")
    assert {services[name]["environment"]["GRADER_GPU_QUEUE"] for name in grader_services} == {
        "${GRADER_GPU_QUEUE:-0}"}
    for name in grader_services:
        assert services[name]["environment"]["GRADER_DATABASE_URL"].startswith("postgresql+psycopg://")
        assert services[name]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert services["web"]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert "grader db upgrade" in " ".join(services["migrate"]["command"])


def test_the_worker_grades_two_at_once_where_there_are_two_cores_and_as_many_as_the_operator_says(monkeypatch):
    from grader.settings import Settings

    monkeypatch.delenv("GRADER_WORKER_CONCURRENCY", raising=False)
    assert Settings.from_env().worker_concurrency == min(2, len(os.sched_getaffinity(0)))
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    assert Settings.from_env().worker_concurrency == 1
    monkeypatch.setenv("GRADER_WORKER_CONCURRENCY", "4")
    assert Settings.from_env().worker_concurrency == 4
    for wrong in ("0", "two", "-1"):
        monkeypatch.setenv("GRADER_WORKER_CONCURRENCY", wrong)
        with pytest.raises(ValueError, match=f"GRADER_WORKER_CONCURRENCY is a whole number of at least 1, not '{wrong}'"):
            Settings.from_env()
