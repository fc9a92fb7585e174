"""The exercise sandbox: an exercise's hidden tests run in a sandbox of their own, never
in the worker that holds the database and broker credentials. Bundles here attack the
worker the way an uploaded bundle might; each wall must hold, and a bundle that breaks
the protocol, loops, crashes or exhausts memory is the exercise's failure, never the
student's score, and leaves the next grade untouched."""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path

import pytest

from grader import catalog
from grader.authoring.check import check
from grader.engine import exercise_sandbox, grading
from grader.engine.bwrap import GRADER_PACKAGE
from grader.engine.grading import grade

pytestmark = [pytest.mark.sandbox,
              pytest.mark.skipif(os.geteuid() != 0, reason="the sandboxes need the worker to be root (cgroups)")]

TESTS = Path(__file__).resolve().parent
HOSTILE = TESTS / "fixtures" / "exercises" / "hostile-exercise"
SOLUTION = (HOSTILE / "solution.py").read_text()
LOOT = "LOOT-7f3a9c"


@pytest.fixture(scope="module")
def worker():
    """What a worker holds: its secrets in the environment, its database and instance
    folder on disk (outside /tmp, which every sandbox replaces with its own).

    One worker serves the module's tests, as one worker serves grade after grade: its
    sandboxes start once, from a process that holds all this (a test that kills one
    leaves the next grade to start it again, as in production); each test has its own
    bundle."""
    home = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="grader-worker-"))
    instance = home / "instance"
    instance.mkdir()
    database = instance / "grader.db"
    with sqlite3.connect(database) as db:
        db.execute("create table loot (secret text)")
        db.execute("insert into loot values (?)", (LOOT,))
    with pytest.MonkeyPatch.context() as env:
        env.setenv("GRADER_DATABASE_URL", f"sqlite:///{database}?{LOOT}")
        env.setenv("GRADER_SECRET_KEY", LOOT)
        env.setenv("GRADER_REDIS_URL", f"redis://:{LOOT}@127.0.0.1:6379/0")
        grading.shutdown()  # sandboxes an earlier module started did so without these secrets
        try:
            yield home
        finally:
            grading.shutdown()  # none started with these secrets outlives them
    shutil.rmtree(home, ignore_errors=True)


def bundle_in(tmp_path: Path, worker: Path, tests: dict[str, str] | None = None,
              submission_seconds: int = 20) -> catalog.Bundle:
    """A copy of the hostile exercise that knows where the worker keeps its things;
    ``tests`` replaces its hidden tests."""
    folder = tmp_path / "hostile-exercise"
    shutil.copytree(HOSTILE, folder)
    if tests is not None:
        shutil.rmtree(folder / "tests")
        (folder / "tests").mkdir()
        for name, text in tests.items():
            (folder / "tests" / name).write_text(text)
    toml = folder / "exercise.toml"
    toml.write_text(toml.read_text().replace("submission_seconds = 20", f"submission_seconds = {submission_seconds}"))
    (folder / "tests" / "targets.json").write_text(json.dumps({
        "database": str(worker / "instance" / "grader.db"), "instance": str(worker / "instance"),
        "outside": str(worker / "written.txt"), "catalogue": str(TESTS.parent / "exercises")}))
    return catalog.load(folder)


def messages(report) -> dict[str, str]:
    return {t.id.rsplit("::", 1)[-1]: t.message for t in report.tests}


# ------------------------------------------------------------------ the walls

def test_every_attempt_of_the_hidden_tests_to_reach_the_worker_is_refused(tmp_path, worker):
    bundle = bundle_in(tmp_path, worker)
    first = grade(bundle, SOLUTION)
    assert first.status == "graded", first.message
    said = messages(first)
    assert len(said) == 15
    assert {name: m for name, m in said.items() if not m.startswith("refused:")} == {}
    assert LOOT not in first.to_json()
    # What stopped each: the walls, not a missing tool.
    # A grade's child forked by its exercise's collector may open local sockets only; one that
    # collected its own tests has a network namespace of its own, its loopback down: nothing
    # listens there.
    for test in ("test_connect_to_postgresql", "test_connect_to_redis", "test_reach_the_internet"):
        assert "Operation not permitted" in said[test] or "unreachable" in said[test], said[test]
    assert "Read-only file system" in said["test_write_into_the_bundle"]
    assert "Read-only file system" in said["test_write_into_the_grader_package"]
    assert "No such file" in said["test_write_outside_the_scratch_space"]
    assert "No such file" in said["test_read_other_exercises"]
    assert "Operation not permitted" in said["test_trace_the_warm_process"]
    assert not (worker / "written.txt").exists()
    assert not (bundle.tests_dir / "planted.py").exists() and not (GRADER_PACKAGE / "planted.py").exists()
    # The grade before left a process running; the next grade finds nothing of it.
    second = grade(bundle, SOLUTION)
    assert messages(second)["test_look_for_what_an_earlier_grade_left"].startswith("refused: LookupError")


def test_the_bundle_check_fails_and_says_why_when_hidden_tests_reach_for_the_database(tmp_path, worker):
    tests = {"test_database.py": (
        "import json, sqlite3\nfrom pathlib import Path\n"
        "from grader.testing import visible\n\n"
        "TARGETS = json.loads((Path(__file__).parent / 'targets.json').read_text())\n\n"
        "@visible\ndef test_uses_the_database(student):\n"
        "    sqlite3.connect(f\"file:{TARGETS['database']}?mode=ro\", uri=True).execute('select 1')\n"
        "    assert student.call('grad_2xtx', __import__('torch').ones(2, requires_grad=True)).value is not None\n"
        "\n@visible\ndef test_plain(student):\n    pass\n")}
    rows = check(bundle_in(tmp_path, worker, tests))
    solution = next(r for r in rows if r.subject == "solution" and r.expected == "full marks")
    assert not solution.ok
    assert "test_uses_the_database: OperationalError" in solution.actual, solution.actual


# ------------------------------------------------------------------ links and sizes

def test_a_linked_file_in_the_tests_is_refused_and_never_read(tmp_path, worker):
    bundle = bundle_in(tmp_path, worker)
    (bundle.tests_dir / "secret.txt").symlink_to(worker / "instance" / "grader.db")
    report = grade(bundle, SOLUTION)
    assert report.status == "internal_error" and report.tests == []
    assert "tests/secret.txt" in report.message and "link" in report.message


def test_a_linked_probes_file_is_refused(tmp_path, worker):
    bundle = bundle_in(tmp_path, worker)
    (bundle.path / "probes.py").symlink_to(worker / "instance" / "grader.db")
    report = grade(bundle, SOLUTION)
    assert report.status == "internal_error" and "probes.py: cannot be read as a file of the bundle" in report.message


# ------------------------------------------------------------------ the exercise's failures

OK_TEST = "from grader.testing import visible\n\n@visible\ndef test_ok(student):\n    pass\n"
# A hidden test that writes frames of its own choosing to the worker, past the harness.
FORGE = ("import gc, json\n\n"
         "def channel():\n"
         "    return next(o for o in gc.get_objects() if type(o).__name__ == 'RemoteChannel')\n\n")


@pytest.mark.parametrize("body, says", [
    ("import os\n\ndef test_exits(student):\n    os._exit(3)\n",
     "ended their process before their verdicts (exit status 3)"),
    ("def test_hoards(student):\n    hoard = bytearray(6 << 30)\n    assert hoard\n",
     "ran out of memory"),
    # A forged "ended" written to the result pipe: only the warm process may say that.
    ("import json, os, struct, time\n\ndef test_forges_the_end(student):\n"
     "    head = json.dumps({'event': 'ended', 'exit': 0}).encode()\n"
     "    for fd in map(int, os.listdir('/proc/self/fd')):\n"
     "        try:\n            os.write(fd, struct.pack('>II', len(head), 0) + head)\n"
     "        except OSError:\n            pass\n    time.sleep(30)\n",
     "broke the grading protocol (an unknown event 'ended')"),
    # The harness's word that the child is done, said before any verdict: its grade ends there.
    ("import os, struct, time\n\ndef test_says_it_is_done(student):\n"
     "    for fd in map(int, os.listdir('/proc/self/fd')):\n"
     "        try:\n            os.write(fd, struct.pack('>II', 0, 0))\n"
     "        except OSError:\n            pass\n    time.sleep(30)\n",
     "ended their process before their verdicts"),
    # Verdicts no pytest would give, written past the harness.
    ("import json, os, struct\n\ndef test_forges_verdicts(student):\n"
     "    head = json.dumps({'event': 'finished', 'results': [{'id': 'x', 'name': 'x', 'visible': True,"
     " 'passed': True, 'points': 1e9, 'max_points': 1.0}]}).encode()\n"
     "    for fd in map(int, os.listdir('/proc/self/fd')):\n"
     "        try:\n            os.write(fd, struct.pack('>II', len(head), 0) + head)\n"
     "        except OSError:\n            pass\n",
     "broke the grading protocol (a result's points are out of range)"),
    (FORGE + "def test_same_id_twice(student):\n    channel().send({'event': 'finished', 'results': [dict("
     "id='x', name='x', visible=True, passed=True, points=1, max_points=1)] * 2})\n",
     "broke the grading protocol (two results have the same test id)"),
    (FORGE + "def test_endless_duration(student):\n    channel().send({'event': 'finished', 'results': [dict("
     "id='x', name='x', visible=True, passed=True, points=1, max_points=1, duration_ms=1e300)]})\n",
     "broke the grading protocol (a result's duration is out of range)"),
    (FORGE + "def test_english_as_a_translation(student):\n    channel().send({'event': 'finished', 'results': [dict("
     "id='x', name='x', visible=True, passed=True, points=1, max_points=1, i18n={'en': {'name': 'y'}})]})\n",
     "broke the grading protocol (a result's translations are malformed)"),
    # Its module ends the process as the tests are collected, before any grade is there.
    ("import os\n\nos._exit(3)\n\ndef test_never_runs(student):\n    pass\n",
     "ended their process before their verdicts (exit status 3)"),
], ids=["exits", "hoards_memory", "forges_the_end", "says_done_early", "forges_verdicts", "same_id_twice",
        "endless_duration", "english_as_a_translation", "exits_while_collected"])
def test_an_exercise_that_fails_as_a_whole_is_its_failure_and_the_next_grade_is_untouched(
        tmp_path, worker, body, says):
    report = grade(bundle_in(tmp_path, worker, {"test_a.py": body}), SOLUTION)
    assert report.status == "internal_error", (report.status, report.message)
    assert says in report.message
    assert report.score == 0 and report.tests == []
    after = grade(catalog.find("autograd-basics"), (TESTS.parent / "exercises/autograd-basics/solution.py").read_text())
    assert after.status == "graded" and after.score == after.max_score


def test_hidden_tests_that_never_end_are_ended(tmp_path, worker, monkeypatch):
    monkeypatch.setattr(exercise_sandbox, "SUITE_GRACE_SECONDS", 2)
    bundle = bundle_in(tmp_path, worker, {"test_loop.py": "def test_loops(student):\n    while True:\n        pass\n"},
                       submission_seconds=1)
    report = grade(bundle, SOLUTION)
    assert report.status == "internal_error" and "did not finish within 3 s" in report.message
    assert grade(bundle_in(tmp_path / "again", worker, {"test_ok.py": OK_TEST}), SOLUTION).status == "graded"


# ------------------------------------------------------------------ one grade, then the next

SECRET_SUBMISSION = """# STUDENT-SECRET-{token} my private solution
import torch


def grad_2xtx(x):
    y = 2 * torch.dot(x, x)
    y.backward()
    return x.grad
"""

MEMORY_SCAN = r"""import re
from grader.testing import visible

# The patterns do not match their own text here: only what an earlier grade left.
PATTERNS = [rb"STUDENT-SECRET-[0-9a-f]{32}", rb"HIDDEN-TEST-MARKER-[0-9]b7e"]


@visible
def test_scan_my_memory(student):
    found = set()
    with open("/proc/self/mem", "rb", buffering=0) as mem:
        for line in open("/proc/self/maps").read().splitlines():
            span, perms = line.split()[:2]
            low, high = (int(a, 16) for a in span.split("-"))
            if "r" not in perms or "[v" in line or high - low > 1 << 34:
                continue
            try:
                mem.seek(low)
                data = mem.read(high - low)
            except OSError:
                continue
            for pattern in PATTERNS:
                found.update(m.group().decode() for m in re.finditer(pattern, data))
    assert False, "found: " + ", ".join(sorted(found)) if found else "nothing"
"""


def test_nothing_of_an_earlier_grade_is_in_the_memory_of_the_next(tmp_path, worker):
    token = os.urandom(16).hex()
    target = catalog.load(TESTS / "fixtures" / "exercises" / "attack-target")
    assert grade(target, SECRET_SUBMISSION.format(token=token)).score == 2
    time.sleep(1)  # idle: the exercise sandbox forks the next grade's child now
    report = grade(bundle_in(tmp_path, worker, {"test_scan.py": MEMORY_SCAN}), SOLUTION)
    assert messages(report) == {"test_scan_my_memory": "nothing"}


COLLECTED_AT = """import time
from grader.testing import visible

COLLECTED = time.time()


@visible
def test_collected(student):
    assert False, f"collected at {COLLECTED!r}"
"""


def test_the_next_grade_finds_its_exercises_tests_collected_before_its_submission_arrives(
        tmp_path, worker, monkeypatch):
    bundle = bundle_in(tmp_path, worker, {"test_when.py": COLLECTED_AT})
    graded_at = []
    send = exercise_sandbox.ExerciseSandbox.send

    def send_and_note(self, header, *parts, deadline):
        if header.get("op") == "grade":
            graded_at.append(time.time())  # the submission leaves the worker
        return send(self, header, *parts, deadline=deadline)

    monkeypatch.setattr(exercise_sandbox.ExerciseSandbox, "send", send_and_note)
    grade(bundle, SOLUTION)
    for _ in range(10):
        time.sleep(0.5)  # idle: the worker has sent this exercise ahead after its last grade
        collected = float(re.search(r"collected at ([0-9.]+)", messages(grade(bundle, SOLUTION))["test_collected"])[1])
        if collected < graded_at[-1]:
            break
    else:
        pytest.fail("every grade's tests were collected only after its submission arrived")


HOOKS_CONFTEST = """import pytest

SEEN = []


def pytest_configure(config):
    SEEN.append(f"configure {config.getoption('assertmode')} {config.rootpath.name}")


def pytest_sessionstart(session):
    SEEN.append("sessionstart")


def pytest_collection_modifyitems(items):
    SEEN.append(f"collected {len(items)}")


@pytest.fixture
def seen():
    return SEEN
"""

HOOKS_TEST = """from grader.testing import visible


@visible
def test_hooks(seen):
    assert False, f"seen {seen}"
"""


def test_each_grade_runs_its_suites_conftest_hooks_once_as_a_fresh_pytest_run_would(tmp_path, worker):
    """pytest's configuration is made ahead in the warm process; each grade's copy of it is
    used once, and the suite's own conftest is read and its hooks run in the grade's child."""
    bundle = bundle_in(tmp_path, worker, {"conftest.py": HOOKS_CONFTEST, "test_hooks.py": HOOKS_TEST})
    expected = "seen ['configure plain bundle', 'sessionstart', 'collected 1']"
    for _ in range(3):
        assert messages(grade(bundle, SOLUTION))["test_hooks"] == expected


def test_a_warm_process_lost_just_after_a_grade_leaves_that_grades_verdicts_standing(
        tmp_path, worker, monkeypatch):
    """Once a grade has its verdicts, the worker sends the exercise ahead for the next
    grade; a warm process gone by then is the next grade's to start again, never this
    grade's failure."""
    bundle = bundle_in(tmp_path, worker, {"test_a.py": OK_TEST})
    grade(bundle, SOLUTION)  # and the next grade's spare is prepared
    prepare, lost = exercise_sandbox.ExerciseSandbox._prepare, []

    def gone_first(self, *args):
        if not lost:  # the one after the grade below: its own spare was prepared before it
            lost.append(self._proc.pid)
            if self.cgroup is not None:
                self.cgroup.kill()
            self._proc.kill()
            self._proc.wait()
        return prepare(self, *args)

    monkeypatch.setattr(exercise_sandbox.ExerciseSandbox, "_prepare", gone_first)
    report = grade(bundle, SOLUTION)
    assert lost and [t.passed for t in report.tests] == [True], report.message
    assert [t.passed for t in grade(bundle, SOLUTION).tests] == [True]
    assert grading.exercise_sandbox()._proc.pid != lost[0]  # started again, for the grade after


def test_a_spare_collected_for_one_exercise_never_grades_another(tmp_path, worker):
    one = bundle_in(tmp_path / "one", worker, {"test_a.py": OK_TEST})
    other = bundle_in(tmp_path / "other", worker, {"test_a.py": OK_TEST.replace("pass", "assert False, 'other'")})
    for bundle, passed in ((one, True), (other, False), (one, True), (one, True), (other, False)):
        report = grade(bundle, SOLUTION)
        assert [t.passed for t in report.tests] == [passed], report.message


# Verdicts the worker accepts, then the start of a frame that carries the submission and
# never ends: what the warm process read of it was freed unwiped, for later children to find.
PARTIAL_FRAME = FORGE + r"""import os, struct
from grader.testing import visible


@visible
def test_leaves_half_a_frame(student):
    source = channel().files["submission.py"].encode()
    channel().send({"event": "finished", "results": [dict(id="x", name="x", visible=True, passed=True,
                                                           points=1, max_points=1)]})
    os.write(channel().send.fd, struct.pack(">II", 100_000, 0) + (source * 60_000)[:60_000])
    os._exit(0)
"""


def test_half_a_frame_of_one_grade_is_not_in_the_memory_of_the_next(tmp_path, worker):
    token = os.urandom(16).hex()
    first = grade(bundle_in(tmp_path / "half", worker, {"test_half.py": PARTIAL_FRAME}),
                  SECRET_SUBMISSION.format(token=token))
    assert first.status == "graded", first.message
    time.sleep(1)  # idle: the exercise sandbox forks the next grade's child now
    report = grade(bundle_in(tmp_path / "scan", worker, {"test_scan.py": MEMORY_SCAN}), SOLUTION)
    assert messages(report) == {"test_scan_my_memory": "nothing"}


# A grade's test names processes after the submission's secret; they are killed as the grade
# ends. The next grade's child reads /proc as its tests are collected, at once.
DEAD_NAMES = r"""import ctypes, os, re, time
from grader.testing import visible


def names():
    found = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            found.add(open(f"/proc/{pid}/comm").read().strip())
        except OSError:
            pass
    return found


SEEN = names()
time.sleep(0.3)
SEEN |= names()


@visible
def test_names(student):
    import gc
    channel = next(o for o in gc.get_objects() if type(o).__name__ == "RemoteChannel")
    secret = re.search("STUDENT-SECRET-([0-9a-f]{32})", channel.files["submission.py"])[1]
    for i in range(3):
        if os.fork() == 0:
            ctypes.CDLL(None).prctl(15, secret[i * 10:(i + 1) * 10].encode(), 0, 0, 0)  # PR_SET_NAME
            time.sleep(300)
            os._exit(0)
    time.sleep(0.2)
    assert False, "seen: " + " ".join(sorted(SEEN))
"""


def test_the_names_an_earlier_grades_processes_gave_themselves_are_not_seen_by_the_next(tmp_path, worker):
    bundle = bundle_in(tmp_path, worker, {"test_names.py": DEAD_NAMES})
    tokens, said = [], []
    for _ in range(3):
        tokens.append(os.urandom(16).hex())
        said.append(messages(grade(bundle, SECRET_SUBMISSION.format(token=tokens[-1])))["test_names"])
    for earlier, message in zip(tokens, said[1:]):
        assert not any(earlier[i * 10:(i + 1) * 10] in message for i in range(3)), said


def test_an_answer_that_arrives_after_its_grade_ended_is_never_read_as_the_next_grades(tmp_path, worker):
    # A call, and at once the verdicts: the worker answers the call after the suite ended.
    stale = FORGE + ("def test_asks_and_leaves(student):\n"
                     "    from grader import protocol\n"
                     "    header, parts = protocol.call_frame('submission', 'grad_2xtx', True, "
                     "[__import__('torch').ones(2, requires_grad=True)], {})\n"
                     "    channel().send(header, *parts)\n"
                     "    channel().send({'event': 'finished', 'results': []})\n")
    grade(bundle_in(tmp_path, worker, {"test_stale.py": stale}), SOLUTION)
    after = grade(catalog.find("autograd-basics"), (TESTS.parent / "exercises/autograd-basics/solution.py").read_text())
    assert after.status == "graded" and after.score == after.max_score, after.message


def test_hidden_tests_that_ask_and_never_read_the_answers_cannot_hold_the_worker(tmp_path, worker, monkeypatch):
    monkeypatch.setattr(exercise_sandbox, "SUITE_GRACE_SECONDS", 2)
    flood = FORGE + ("def test_asks_and_never_reads(student):\n"
                     "    from grader import protocol\n"
                     "    big = __import__('torch').ones(2 << 20, requires_grad=True)\n"
                     "    for _ in range(3):\n"
                     "        header, parts = protocol.call_frame('submission', 'grad_2xtx', True, [big], {})\n"
                     "        channel().send(header, *parts)\n"
                     "    __import__('time').sleep(600)\n")
    started = time.monotonic()
    report = grade(bundle_in(tmp_path, worker, {"test_flood.py": flood}, submission_seconds=1), SOLUTION)
    assert report.status == "internal_error" and "did not finish within 3 s" in report.message
    assert time.monotonic() - started < 30


def test_frames_as_large_as_allowed_cost_the_worker_a_bounded_amount_of_memory(tmp_path, worker):
    huge = FORGE + ("def test_huge_frames(student):\n"
                    "    from grader import protocol\n"
                    "    from grader.inside import wire\n"
                    "    n = (protocol.EVENT_HEADER - 100) // 3\n"
                    "    head = b'{\"event\":\"progress\",\"done\":0,\"total\":1,\"pad\":[' + b'{},' * (n - 1) + b'{}]}'\n"
                    "    for _ in range(3):\n"
                    "        wire.write_all(channel().send.fd, __import__('struct').pack('>II', len(head), "
                    "protocol.EVENT_BLOB), head, bytes(protocol.EVENT_BLOB))\n")
    bundle = bundle_in(tmp_path, worker, {"test_huge.py": huge})
    grading.exercise_sandbox().start()
    before = _memory("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM starts again from VmRSS
    report = grade(bundle, SOLUTION)
    grew = _memory("VmHWM") - before
    assert report.status == "internal_error" and "a malformed progress report" in report.message
    assert grew < 600 << 20, f"the worker grew by {grew >> 20} MiB"


def _memory(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) << 10
    raise LookupError(field)


# ------------------------------------------------------------------ the collector
#
# The child that collected an exercise's tests forks the child of each later grade of that
# exercise (grader/testing/warm.py, at _collector). Each grade's child shares its namespaces
# with the grades before and after it; these hidden tests do, as a grade's child, what a
# grade could to leave something for the next, and the next must find nothing of it.

COLLECTED_ONCE = """import os, time
from grader.testing import visible

COLLECTED = (os.getpid(), time.time())


@visible
def test_once(student):
    assert False, f"collected {COLLECTED} graded in {os.getpid()}"
"""


def test_the_grades_of_an_exercise_each_run_in_a_process_of_their_own_from_its_tests_collected_once(
        tmp_path, worker):
    bundle = bundle_in(tmp_path, worker, {"test_once.py": COLLECTED_ONCE})
    said = [re.fullmatch(r"collected (\(.*\)) graded in (\d+)", messages(grade(bundle, SOLUTION))["test_once"])
            for _ in range(3)]
    assert all(said), said
    assert len({m[1] for m in said}) == 1  # one collection
    assert len({m[2] for m in said}) == 3  # three processes, one per grade


LEAVE_A_FILE = """import os
from grader.testing import visible


@visible
def test_leave(student):
    found = sorted(os.listdir("/tmp"))
    with open("/tmp/left-behind", "w") as fh:
        fh.write("from an earlier grade")
    os.makedirs("/tmp/a/b", exist_ok=True)
    os.chmod("/tmp/a", 0)
    assert False, f"found {found}"
"""


def test_what_a_grade_leaves_in_tmp_is_never_seen_by_the_next(tmp_path, worker):
    bundle = bundle_in(tmp_path, worker, {"test_leave.py": LEAVE_A_FILE})
    for _ in range(3):
        assert messages(grade(bundle, SOLUTION)) == {"test_leave": "found ['bundle']"}


# A hidden test's way to the other processes of its uid (the collector's among them): a part of
# the sources below, which are formatted (hence the doubled braces).
OTHERS_OF_MY_UID = """def others_of_my_uid():
    me, uid = os.getpid(), str(os.getuid())
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != me:
            try:
                status = open(f"/proc/{{name}}/status").read()
            except OSError:
                continue
            if status.split("Uid:")[1].split()[0] == uid:
                yield int(name)
"""

TAMPER = """import os, resource, signal
from grader.testing import visible

CHANGES = {{
    "nice": lambda pid: os.setpriority(os.PRIO_PROCESS, pid, 19),
    "cpus": lambda pid: os.sched_setaffinity(pid, {{min(os.sched_getaffinity(0))}}),
    "limits": lambda pid: resource.prlimit(pid, resource.RLIMIT_NOFILE, (64, 64)),
    "oom score": lambda pid: open(f"/proc/{{pid}}/oom_score_adj", "w").write("500"),
    "memory": lambda pid: open(f"/proc/{{pid}}/mem", "rb").read(1),
    "SIGSTOP": lambda pid: os.kill(pid, signal.SIGSTOP),
    "SIGKILL": lambda pid: os.kill(pid, signal.SIGKILL),
}}


""" + OTHERS_OF_MY_UID + """

@visible
def test_tamper(student):
    inherited = (os.getpriority(os.PRIO_PROCESS, 0), sorted(os.sched_getaffinity(0)),
                 resource.getrlimit(resource.RLIMIT_NOFILE), open("/proc/self/oom_score_adj").read().strip())
    done = False
    for pid in others_of_my_uid():
        try:
            CHANGES[{change!r}](pid)
            done = True
        except OSError:
            pass
    assert False, f"inherited {{inherited}} changed {{done}}"
"""


@pytest.mark.parametrize("change, possible", [("nice", False), ("cpus", True), ("limits", True),
                                              ("oom score", False), ("memory", False)])
def test_a_grade_that_changes_the_process_its_exercise_was_collected_in_leaves_the_next_as_it_was(
        tmp_path, worker, change, possible):
    """What a process of its uid may change in another, it does (its memory, its /proc files
    and its nice value stay out of its reach); the next grade's child inherits none of it."""
    bundle = bundle_in(tmp_path, worker, {"test_tamper.py": TAMPER.format(change=change)})
    said = [re.fullmatch(r"inherited (.*) changed (True|False)", messages(grade(bundle, SOLUTION))["test_tamper"])
            for _ in range(3)]
    assert all(said), said
    assert len({m[1] for m in said}) == 1, said  # every grade starts as the first did
    assert {m[2] for m in said} == {str(possible)}, said


@pytest.mark.parametrize("change", ["SIGSTOP", "SIGKILL"])
def test_a_grade_that_stops_or_kills_the_process_its_exercise_was_collected_in_leaves_the_next_graded(
        tmp_path, worker, change):
    bundle = bundle_in(tmp_path, worker, {"test_tamper.py": TAMPER.format(change=change)})
    for _ in range(3):
        assert re.fullmatch(r"inherited .* changed True", messages(grade(bundle, SOLUTION))["test_tamper"])


SYSTEM_V_IPC = """import ctypes
from grader.testing import visible

libc = ctypes.CDLL(None, use_errno=True)


@visible
def test_ipc(student):
    said = []
    for name, call in (("shm", lambda: libc.shmget(0, 4096, 0o1600)), ("msg", lambda: libc.msgget(0, 0o1600)),
                       ("sem", lambda: libc.semget(0, 1, 0o1600)), ("mq", lambda: libc.mq_open(b"/q", 0o102, 0o600, None))):
        ctypes.set_errno(0)
        said.append(f"{name} {call()} {ctypes.get_errno()}")
    assert False, ", ".join(said)
"""


def test_a_grade_can_leave_nothing_in_system_v_ipc_or_message_queues_for_the_next(tmp_path, worker):
    bundle = bundle_in(tmp_path, worker, {"test_ipc.py": SYSTEM_V_IPC})
    assert messages(grade(bundle, SOLUTION)) == {"test_ipc": "shm -1 1, msg -1 1, sem -1 1, mq -1 1"}


MANY_FILES_AT_COLLECTION = """import os

for i in range(2100):  # more than the collector will vouch for
    open(f"/tmp/made-while-collected-{i}", "w").close()
"""


def test_an_exercise_whose_collection_leaves_more_files_than_a_collector_checks_is_graded_all_the_same(
        tmp_path, worker):
    bundle = bundle_in(tmp_path, worker, {"conftest.py": MANY_FILES_AT_COLLECTION, "test_a.py": OK_TEST})
    for _ in range(3):
        report = grade(bundle, SOLUTION)
        assert [t.passed for t in report.tests] == [True], (report.status, report.message)


PRIORITIES = """import ctypes, platform
from grader.testing import visible

libc = ctypes.CDLL(None, use_errno=True)
IOPRIO_SET = {"x86_64": 251, "aarch64": 30}[platform.machine()]
PRIO_PROCESS, PRIO_PGRP, PRIO_USER = 0, 1, 2
IOPRIO_WHO_PROCESS, IOPRIO_WHO_USER, IDLE = 1, 3, 3 << 13


@visible
def test_priorities(student):
    said = []
    for name, call in (("own nice", lambda: libc.setpriority(PRIO_PROCESS, 0, 1)),
                       ("group nice", lambda: libc.setpriority(PRIO_PGRP, 0, 5)),
                       ("user nice", lambda: libc.setpriority(PRIO_USER, 0, 5)),
                       ("own io", lambda: libc.syscall(IOPRIO_SET, IOPRIO_WHO_PROCESS, 0, IDLE)),
                       ("user io", lambda: libc.syscall(IOPRIO_SET, IOPRIO_WHO_USER, 0, IDLE))):
        ctypes.set_errno(0)
        said.append(f"{name} {call()} {ctypes.get_errno()}")
    assert False, ", ".join(said)
"""


def test_a_grade_sets_its_own_priorities_and_not_those_of_every_process_of_its_uid(tmp_path, worker):
    bundle = bundle_in(tmp_path, worker, {"test_priorities.py": PRIORITIES})
    for _ in range(2):
        assert messages(grade(bundle, SOLUTION)) == {
            "test_priorities": "own nice 0 0, group nice -1 1, user nice -1 1, own io 0 0, user io -1 1"}


# What a grade's hidden tests could do (found by attacking the collector) to leave the next
# grade of the same exercise something: each grade after the first must find what the first did.

def _said_three_times(tmp_path, worker, source: str) -> list[str]:
    bundle = bundle_in(tmp_path, worker, {"test_x.py": source})
    return [messages(grade(bundle, SOLUTION))["test_x"] for _ in range(3)]


SCHEDULING_BY_PID = r'''import os, ctypes, struct
from grader.testing import visible
libc = ctypes.CDLL(None, use_errno=True)
SYS_IOPRIO_SET, SYS_IOPRIO_GET, SYS_SCHED_SETATTR, SYS_SCHED_GETATTR = 251, 252, 314, 315

def getattr_(pid):
    buf = ctypes.create_string_buffer(64)
    libc.syscall(SYS_SCHED_GETATTR, pid, buf, 56, 0)
    size, policy, flags, nice, prio, runtime, dl, period, umin, umax = struct.unpack("=IIQiIQQQII", buf.raw[:56])
    return {{"slice": runtime, "util": (umin, umax)}}

''' + OTHERS_OF_MY_UID + r'''
def ioprio(pid):  # IOPRIO_CLASS_IDLE
    return libc.syscall(SYS_IOPRIO_SET, 1, pid, 3 << 13)

def slice_(pid):  # SCHED_OTHER with a custom slice of 100 ms (EEVDF, Linux >= 6.12)
    attr = struct.pack("=IIQiIQQQII", 56, 0, 0, 0, 0, 100_000_000, 0, 0, 0, 0)
    return libc.syscall(SYS_SCHED_SETATTR, pid, ctypes.create_string_buffer(attr, 56), 0)

@visible
def test_x(student):
    inherited = (libc.syscall(SYS_IOPRIO_GET, 1, 0), getattr_(0))
    done = []
    for pid in others_of_my_uid():
        ctypes.set_errno(0)
        done.append(({change}(pid), ctypes.get_errno()))
    assert False, f"inherited {{inherited}} changed {{done}}"
'''


SHARED_AT_COLLECTION = r'''import mmap, os, socket, struct
from grader.testing import visible

KIND = {kind!r}
if KIND == "mmap":
    SHARED = mmap.mmap(-1, 4096, flags=mmap.MAP_SHARED)
elif KIND == "memfd":
    FD = os.memfd_create("note")
elif KIND == "tmpfile":
    FD = os.open("/tmp", os.O_TMPFILE | os.O_RDWR, 0o600)  # no name in /tmp: the check sees nothing
elif KIND == "pipe":
    R, W = os.pipe()
    os.set_blocking(R, False)
elif KIND == "socketpair":
    A, B = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    B.setblocking(False)


def read():
    if KIND == "mmap":
        return SHARED[:64].rstrip(b"\0").decode()
    if KIND in ("memfd", "tmpfile"):
        return os.pread(FD, 64, 0).decode()
    if KIND == "pipe":
        try:
            return os.read(R, 64).decode()
        except BlockingIOError:
            return ""
    if KIND == "socketpair":
        try:
            return B.recv(64).decode()
        except BlockingIOError:
            return ""


def write(text):
    data = text.encode()
    if KIND == "mmap":
        SHARED[:64] = data.ljust(64, b"\0")
    elif KIND in ("memfd", "tmpfile"):
        os.pwrite(FD, data, 0)
    elif KIND == "pipe":
        os.write(W, data)
    elif KIND == "socketpair":
        A.send(data)


@visible
def test_x(student):
    found = read()
    # what this grade saw of its student's submission, say
    write(f"secret of grade in pid {{os.getpid()}}")
    assert False, f"found {{found!r}}"
'''


SHARED_DEVNULL = r'''import fcntl, os, struct
from grader.testing import visible

F_SETSIG, F_GETSIG, F_OFD_GETLK, F_OFD_SETLK = 10, 11, 36, 37
SECRET = 0b1011001  # say, a bit of what this grade's student answered

def ofd_locked(byte):
    fd = os.open("/dev/null", os.O_RDWR)  # an open file description of our own
    try:
        lk = struct.pack("hhqqi", fcntl.F_WRLCK, 0, byte, 1, 0)
        return struct.unpack("hhqqi", fcntl.fcntl(fd, F_OFD_GETLK, lk))[0] != fcntl.F_UNLCK
    finally:
        os.close(fd)

def flocked():
    fd = os.open("/dev/null", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)

@visible
def test_x(student):
    found = {{"fl": fcntl.fcntl(3, fcntl.F_GETFL) & (os.O_APPEND | os.O_NONBLOCK),
             "sig": fcntl.fcntl(3, F_GETSIG), "flock": flocked(),
             "ofd": sum(1 << b for b in range(8) if ofd_locked(b))}}
    what = {what!r}
    if what == "flags":
        fcntl.fcntl(3, fcntl.F_SETFL, os.O_APPEND | os.O_NONBLOCK)
    elif what == "signal":
        fcntl.fcntl(3, F_SETSIG, SECRET)
    elif what == "flock":
        fcntl.flock(3, fcntl.LOCK_EX)
    elif what == "ofd":
        for b in range(8):
            if SECRET >> b & 1:
                fcntl.fcntl(3, F_OFD_SETLK, struct.pack("hhqqi", fcntl.F_WRLCK, 0, b, 1, 0))
    assert False, f"found {{found}}"
'''


ATIME = r'''import os
from grader.testing import visible

for i in range(8):
    open(f"/tmp/bit-{i}", "w").write("x")

@visible
def test_x(student):
    found = sum(1 << i for i in range(8) if os.stat(f"/tmp/bit-{i}").st_atime_ns > os.stat(f"/tmp/bit-{i}").st_mtime_ns)
    for i in range(8):
        if 89 >> i & 1:
            open(f"/tmp/bit-{i}").read()
    assert False, f"found {found}"
'''


TMP_ROOT = r'''import os
from grader.testing import visible

@visible
def test_x(student):
    st = os.stat("/tmp")
    try:
        xattr = os.getxattr("/tmp", "user.note")
    except OSError as exc:
        xattr = exc.errno
    found = (oct(st.st_mode), st.st_mtime_ns, xattr)
    what = {what!r}
    if what == "utime":
        os.utime("/tmp", ns=(123456789, 987654321))  # any two 64-bit numbers
    elif what == "chmod":
        os.chmod("/tmp", 0o1751)
    elif what == "xattr":
        os.setxattr("/tmp", "user.note", b"the student's answer: 42")
    assert False, f"found {{found}}"
'''



@pytest.mark.parametrize("change", ["ioprio", "slice_"])
def test_a_grade_sets_no_scheduling_attribute_of_another_process_by_its_pid(tmp_path, worker, change):
    said = [re.fullmatch(r"inherited (.*) changed (.*)", m)
            for m in _said_three_times(tmp_path, worker, SCHEDULING_BY_PID.format(change=change))]
    assert all(said) and len({m[1] for m in said}) == 1, said
    assert all(re.fullmatch(r"\[(\(-1, 1\)(, )?)+\]", m[2]) for m in said), said  # each refused: EPERM


@pytest.mark.parametrize("kind", ["mmap", "memfd", "tmpfile", "pipe", "socketpair"])
def test_what_the_exercises_code_makes_to_share_while_collected_is_never_shared_by_two_grades(
        tmp_path, worker, kind):
    assert _said_three_times(tmp_path, worker, SHARED_AT_COLLECTION.format(kind=kind)) == ["found \'\'"] * 3


@pytest.mark.parametrize("what", ["flags", "signal", "flock", "ofd"])
def test_what_a_grade_sets_on_its_standard_files_outlives_it_in_no_other_grade(tmp_path, worker, what):
    said = _said_three_times(tmp_path, worker, SHARED_DEVNULL.format(what=what))
    assert len(set(said)) == 1, said


def test_which_files_a_grade_read_is_not_told_by_their_access_times_to_the_next(tmp_path, worker):
    said = _said_three_times(tmp_path, worker, ATIME)
    assert said == ["found 0"] * 3, said


@pytest.mark.parametrize("what", ["utime", "chmod", "xattr"])
def test_what_a_grade_sets_on_tmp_itself_the_next_never_finds(tmp_path, worker, what):
    for found in _said_three_times(tmp_path, worker, TMP_ROOT.format(what=what)):
        mode, mtime, xattr = re.fullmatch(r"found \('(\w+)', (\d+), (\d+)\)", found).groups()
        assert (mode, int(xattr)) == ("0o41777", errno.ENODATA) and int(mtime) != 987654321, found


NET_COUNTERS = """import os, socket
from grader.testing import visible


def counters():
    out = {}
    for name in ("snmp", "netstat"):
        lines = open(f"/proc/net/{name}").read().split("\\n")
        for head, values in zip(lines[0::2], lines[1::2]):
            for key, value in zip(head.split()[1:], values.split()[1:]):
                if value != "0" and key not in ("Forwarding", "DefaultTTL", "RtoAlgorithm", "RtoMin", "RtoMax", "MaxConn"):
                    out[head.split()[0] + key] = int(value)
    return out


@visible
def test_x(student):
    found = counters()
    for _ in range(42):  # say, what this grade's student answered
        try:
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("10.1.2.3", 9))
        except OSError:
            pass
    assert False, f"found {found}"
"""

NAMELESS_FILES = """import os
from grader.testing import visible


def nameless():
    try:
        fd = os.open("/tmp", os.O_TMPFILE | os.O_RDWR, 0o600)
    except OSError as exc:
        return f"errno {exc.errno}"
    inode = os.fstat(fd).st_ino
    os.close(fd)
    return f"inode {inode}"


@visible
def test_x(student):
    found = nameless()  # /tmp's next inode number, and nothing of /tmp changed
    for _ in range(37):  # say, what this grade's student answered
        nameless()
    assert False, f"found {found}"
"""


@pytest.mark.parametrize("source", [NET_COUNTERS, NAMELESS_FILES], ids=["network counters", "tmp inode numbers"])
def test_a_grade_moves_no_counter_of_the_namespaces_it_shares_with_the_next(tmp_path, worker, source):
    said = _said_three_times(tmp_path, worker, source)
    assert len(set(said)) == 1, said
