"""The sandbox's kernel walls, tested against the kernel: its cgroup, the call child's
system-call filter, the parent-death signal, and isolation failures told apart from
the student's. (Hostile submissions graded end to end are in test_attacks.py.)"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grader.engine import cgroup
from grader.inside import seccomp
from grader.engine.bwrap import MASK, SANDBOX_VENV, bwrap_command, installed_copies
from grader.engine.sandbox import Limits, Sandbox, SandboxUnavailable

pytestmark = [pytest.mark.sandbox, pytest.mark.skipif(os.geteuid() != 0, reason="cgroups need the worker to be root")]


@pytest.fixture(scope="module")
def sandbox():
    """One warm sandbox for the module's tests, as a worker's serves call after call (a
    test that breaks it leaves the next call to start it again); a test that closes a
    sandbox makes its own."""
    box = Sandbox()
    yield box
    box.close()


def call(box: Sandbox, source: str, limits: Limits = Limits(timeout=3)):
    return box.call({"submission.py": source}, "f", [], {}, limits=limits)


def children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def gone(pid: int, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state == "Z":
            return True
        time.sleep(0.05)
    return False


# ------------------------------------------------------------------ the cgroup

def test_every_process_of_the_sandbox_is_in_its_own_bounded_cgroup(sandbox):
    sandbox.start()
    group = sandbox.cgroup
    assert group is not None and group.version == cgroup.version()
    warm = children(sandbox._proc.pid)
    assert warm and {sandbox._proc.pid, *warm} <= group.pids()
    limits = Limits(timeout=3, memory_bytes=200 << 20, tmp_bytes=8 << 20)
    out = call(sandbox, "import os\ndef f():\n    return open('/proc/self/cgroup').read()\n", limits)
    assert out.kind == "ok", out.detail
    usage = group.memory_usage()
    limit_file = "memory.max" if group.version == 2 else "memory.limit_in_bytes"
    limit = int((group.memory_dir / limit_file).read_text())
    assert usage < limit <= usage + (208 << 20) + (64 << 20)  # what was held, plus the call's share
    assert int((group.dirs["pids"] / "pids.max").read_text()) == cgroup.PIDS_MAX


def test_closing_the_sandbox_ends_every_process_and_removes_its_cgroup():
    sandbox = Sandbox()
    try:
        out = call(sandbox, "import os, time\ndef f():\n    if os.fork() == 0:\n        os.setsid()\n"
                            "        time.sleep(600)\n    return 1\n")
        assert out.kind == "ok"
        group = sandbox.cgroup
        pids = group.pids()
    finally:
        sandbox.close()
    assert all(gone(pid, 0.5) for pid in pids)
    assert not any(d.exists() for d in group.dirs.values())


GRADER_KILLED_MID_CALL = r"""
import sys, threading, time
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from grader.engine.sandbox import Limits, Sandbox
box = Sandbox()
box.start()
source = "import time\ndef f():\n    time.sleep(600)\n"
threading.Thread(target=box.call, args=({"submission.py": source}, "f", [], {}),
                 kwargs={"limits": Limits(timeout=120)}, daemon=True).start()
time.sleep(1.5)
print(" ".join(map(str, sorted(box.cgroup.pids()))), flush=True)
time.sleep(600)
"""


def test_nothing_of_the_sandbox_outlives_a_grader_killed_mid_call():
    # The worker is SIGKILLed (OOM, a node drained) while a call sleeps with 120 s to go:
    # bubblewrap dies with it, and the warm process, whose parent-death signal cannot
    # cross its uid change, sees its request pipe close and ends the sandbox.
    root = str(Path(__file__).resolve().parent.parent)
    grader = subprocess.Popen([sys.executable, "-c", GRADER_KILLED_MID_CALL, root],
                              stdout=subprocess.PIPE, text=True)
    try:
        pids = [int(p) for p in grader.stdout.readline().split()]
        assert len(pids) >= 3, pids  # bwrap, the warm process, the call (and spares)
    finally:
        grader.kill()
        grader.wait()
    assert [pid for pid in pids if not gone(pid, 5)] == []


def test_host_memory_of_a_cuda_sandbox_is_bounded_too():
    box = Sandbox(cuda=True)
    try:
        box.start()
        assert box.cgroup is not None and box.cgroup.pids()
    finally:
        box.close()


# ------------------------------------------------------------------ the call child

DENIED_PROBE = '''
import ctypes, os, platform
NR = {"x86_64": dict(ptrace=101, keyctl=250, io_uring_setup=425, bpf=321, perf_event_open=298,
                     userfaultfd=323, mount=165, unshare=272, setns=308, clone=56),
      "aarch64": dict(ptrace=117, keyctl=219, io_uring_setup=425, bpf=280, perf_event_open=241,
                      userfaultfd=282, mount=40, unshare=97, setns=268, clone=220)}[platform.machine()]
libc = ctypes.CDLL(None, use_errno=True)

def f():
    seen = {}
    for name, args in (("ptrace", (16, 1, 0, 0)), ("keyctl", (0, -3, 0)), ("io_uring_setup", (1, 0)),
                       ("bpf", (0, 0, 0)), ("perf_event_open", (0, 0, -1, -1, 0)), ("userfaultfd", (0,)),
                       ("mount", (b"none", b"/tmp", b"tmpfs", 0, 0)), ("unshare", (0x10000000,)),
                       ("setns", (0, 0)), ("clone", (0x10000000 | 17, 0, 0, 0, 0))):
        result = libc.syscall(NR[name], *args)
        seen[name] = (result, ctypes.get_errno())
    pid = os.fork()  # an ordinary fork still works
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return {k: list(v) for k, v in seen.items()}
'''


def test_the_call_child_cannot_make_system_calls_a_submission_never_needs(sandbox):
    out = call(sandbox, DENIED_PROBE)
    assert out.kind == "ok", out.detail
    assert out.value == {name: [-1, 1] for name in out.value}  # every one EPERM
    assert len(out.value) == 10


def test_the_filter_checks_the_architecture_first():
    prog = seccomp.program("x86_64")
    assert prog[0] == (0x20, 0, 0, 4) and prog[1][3] == 0xC000003E and prog[2][3] == 0x80000000
    assert seccomp.program("aarch64")[1][3] == 0xC00000B7
    with pytest.raises(seccomp.SeccompError):
        seccomp.program("riscv64")


def test_a_refused_mount_in_the_call_child_is_a_sandbox_error_not_the_students(sandbox):
    # tmpfs refuses a negative size: the call child's private /tmp cannot be mounted.
    out = call(sandbox, "def f():\n    return 1\n", Limits(timeout=3, tmp_bytes=-1))
    assert out.kind == "sandbox", (out.kind, out.detail)
    assert "could not isolate the call (private /tmp" in out.detail
    assert call(sandbox, "def f():\n    return 1\n").value == 1  # and the sandbox carries on


def test_each_call_has_its_own_session_and_keyring(sandbox):
    source = ("import os\ndef f():\n    return [os.getsid(0) == os.getpid(),"
              " open('/proc/self/autogroup').read().split()[0]]\n")
    first, second = call(sandbox, source), call(sandbox, source)
    assert first.value[0] is True and second.value[0] is True
    assert first.value[1] != second.value[1]  # a fresh autogroup each



def test_a_call_is_the_first_of_its_own_pids_and_holds_the_calls_uid_alone(sandbox):
    """Each call's process is born PID 1 of a namespace of its own, in a user namespace that
    maps the calls' uid only: the warm process's uid, which it was forked by, is not there."""
    source = ("import os\ndef f():\n    return [os.getpid(), list(os.getresuid()), list(os.getresgid()),"
              " open('/proc/self/uid_map').read().split(), sorted(p for p in os.listdir('/proc') if p.isdigit())]\n")
    pid, uids, gids, uid_map, processes = call(sandbox, source).value
    calls = sandbox.uid + 1
    assert pid == 1 and processes == ["1"]
    assert uids == [calls] * 3 and gids == [calls] * 3
    assert uid_map == [str(calls), str(calls), "1"]


FORKS_AND_COUNTERS = """import os
def forks(k):
    for _ in range(k):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
def counters():
    return {name: open('/proc/' + name).read() for name in ('stat', 'vmstat', 'schedstat', 'softirqs', 'interrupts')
            if os.path.exists('/proc/' + name)}
def cpus():
    return os.cpu_count()
"""


def test_a_call_cannot_read_how_many_processes_an_earlier_call_started(sandbox):
    """The machine's counters in /proc (stat's "processes" counts every fork since boot)
    read as empty in a call: a hidden test's call that forks k times tells the next call nothing."""
    files = {"submission.py": FORKS_AND_COUNTERS}
    before = sandbox.call(files, "counters", [], {})
    assert sandbox.call(files, "forks", [17], {}).kind == "ok"
    after = sandbox.call(files, "counters", [], {})
    assert "stat" in before.value and "vmstat" in before.value
    assert before.value == after.value == {name: "" for name in before.value}
    assert sandbox.call(files, "cpus", [], {}).value == os.cpu_count()  # what a call may ask still answers

# ------------------------------------------------------------------ what is mounted

def test_an_installed_grader_package_is_hidden_from_the_sandbox():
    venv = os.path.realpath(sys.prefix)
    site = os.path.join(venv, "lib", "python3", "site-packages", "grader")
    assert installed_copies([site]) == [os.path.join(SANDBOX_VENV, "lib", "python3", "site-packages", "grader")]
    assert installed_copies(["/usr/local/lib/python3.12/dist-packages/grader"]) == \
        ["/usr/local/lib/python3.12/dist-packages/grader"]
    assert installed_copies([str(Path(__file__).parent)]) == []  # a checkout is not mounted at all


def test_a_hidden_package_cannot_be_imported_inside(tmp_path):
    # The mechanism behind installed_copies(), on a package the venv really has.
    import pytest as present

    location = os.path.dirname(present.__file__)
    hidden = installed_copies([location])
    assert hidden, "pytest is expected inside the virtual environment"
    cmd = bwrap_command(cuda=False, uid=0, argv=["-c", "import _pytest, pytest; print('IMPORTED')"],
                        extra=[arg for path in hidden for arg in ("--ro-bind", str(MASK), path)])
    if os.geteuid() == 0:
        cmd = [a for a in cmd if a not in ("--cap-add", "CAP_SETUID", "CAP_SETGID", "CAP_SYS_ADMIN")]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert "IMPORTED" not in run.stdout
    assert "ImportError: the grader's own modules are not available inside the sandbox" in run.stderr, \
        run.stderr[-500:]


def test_where_no_cgroup_can_be_made_grading_refuses_with_the_fix():
    # An unprivileged worker may not create cgroups here: the kernel says EACCES.
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setresgid(65534, 65534, 65534)
            os.setresuid(65534, 65534, 65534)
            try:
                Sandbox().start()
                said = "STARTED"
            except SandboxUnavailable as exc:
                said = f"REFUSED {exc}"
            os.write(write, said.encode()[:60000])
        finally:
            os._exit(0)
    os.close(write)
    said = os.read(read, 65536).decode()
    os.waitpid(pid, 0)
    assert said.startswith("REFUSED cannot ") and "Permission denied" in said, said
    assert "Delegate=yes" in said and "cgroup v1" in said  # the fix, for either hierarchy


# ------------------------------------------------------------------ what one submission leaves the next

STOP_EVERY_OTHER_PROCESS = """import os, signal
def f():
    stopped = []
    for pid in range(2, 400):
        if pid == os.getpid():
            continue
        try:
            os.kill(pid, signal.SIGSTOP)
            stopped.append(pid)
        except OSError:
            pass
    return stopped
"""


def test_processes_a_submission_stops_serve_no_later_submission(sandbox):
    """A spare child forked ahead lived through the attacker's calls; stopped, it was handed
    the next student's call, and the warm process blocked writing a request larger than a
    pipe holds to it. Now no call can name a spare (each call's processes are in a PID
    namespace of their own), and a child is checked runnable before it gets a request."""
    sandbox.start()
    time.sleep(1.0)  # the warm process forks its spares while idle
    call(sandbox, STOP_EVERY_OTHER_PROCESS)
    sandbox.reset()  # the attacker's submission ends; the next student's begins
    honest = "def f(text):\n    return len(text)\n"
    started = time.monotonic()
    outcomes = [sandbox.call({"submission.py": honest}, "f", ["x" * (84 << 10)], {}, limits=Limits(timeout=3))
                for _ in range(8)]
    assert [o.value for o in outcomes] == [84 << 10] * 8, [(o.kind, o.detail) for o in outcomes]
    assert time.monotonic() - started < 8  # each in its normal time, none waiting out a limit


REACH_FOR_EVERY_PROCESS = """import os, signal
def f():
    seen = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
    reached = []
    for pid in range(1, 400):
        if pid == os.getpid():
            continue
        try:
            os.kill(pid, 0)
            reached.append(pid)
        except OSError:
            continue
        for act in (lambda: os.kill(pid, signal.SIGSTOP), lambda: os.setpriority(os.PRIO_PROCESS, pid, 19),
                    lambda: os.sched_setaffinity(pid, {0})):
            try:
                act()
            except OSError:
                pass
    for act in (lambda: os.kill(-1, signal.SIGSTOP), lambda: os.setpriority(os.PRIO_USER, os.getuid(), 19)):
        try:
            act()  # every process it may signal, every one of its uid
        except OSError:
            pass
    return [seen, reached]
"""

WHERE_AM_I = "import os\ndef f():\n    return [os.getpid(), os.getpriority(os.PRIO_PROCESS, 0), len(os.sched_getaffinity(0))]\n"


def test_spares_waiting_through_a_submissions_calls_are_out_of_their_reach(sandbox):
    """A spare waits for its call behind the walls that need nothing of it, of the calls'
    uid, through calls of its own submission and of earlier ones. No call can name it (each
    call's processes are in a PID namespace of their own): a call reaches no other process,
    and the calls after it, of its submission and of the next student's, run as the calls
    before it did."""
    sandbox.reset()
    time.sleep(1.0)  # the spares stand up their walls while the warm process is idle
    before = call(sandbox, WHERE_AM_I)
    attack = call(sandbox, REACH_FOR_EVERY_PROCESS)
    started = time.monotonic()
    after = [call(sandbox, WHERE_AM_I) for _ in range(3)]
    sandbox.reset()  # the attacker's submission ends; the spares that waited through it serve the next
    after += [call(sandbox, WHERE_AM_I) for _ in range(3)]
    assert attack.value == [[1], []], (attack.kind, attack.detail)  # itself alone, PID 1 of its namespace
    assert before.value[0] == 1
    assert [o.value for o in after] == [before.value] * 6, [(o.kind, o.detail) for o in after]
    assert time.monotonic() - started < 6  # none stopped, none waiting out a limit


def test_a_time_limit_says_no_time_finer_than_a_tenth_of_a_second(sandbox):
    """A call's limit may be what is left of the submission's time: its digits would time
    the calls before it (hidden tests' too) more finely than durations are rounded."""
    out = call(sandbox, "def f():\n    while True:\n        pass\n", Limits(timeout=0.734567))
    assert out.kind == "timeout" and "(0.7 s per call)" in out.detail, out.detail


def test_the_sandboxes_share_the_cpu_weight_the_operator_sets_or_the_workers_own():
    from grader.engine.cgroup import CPU_SHARES_V1, SandboxCgroup, own_cpu_weight
    made = SandboxCgroup.create(cpu_weight=300)
    try:
        base = made.dirs["cpu"].parent
        if made.version == 2:
            assert (base / "cpu.weight").read_text().strip() == "300"
        else:
            assert (base / "cpu.shares").read_text().strip() == str(round(300 * CPU_SHARES_V1 / 100))
    finally:
        made.remove()
    default = SandboxCgroup.create()
    try:
        base = default.dirs["cpu"].parent
        written = (base / ("cpu.weight" if default.version == 2 else "cpu.shares")).read_text().strip()
        expected = own_cpu_weight() if default.version == 2 else round(own_cpu_weight() * CPU_SHARES_V1 / 100)
        assert int(written) == expected
    finally:
        default.remove()


def _killed_in(group_dir: Path, own_limit: int, above_limit: int | None) -> str | None:
    """Run a process that wants 200 MiB in a group limited to ``own_limit``, inside a parent
    limited to ``above_limit`` (standing in for the machine); what the group tells of it."""
    from grader.engine.cgroup import SandboxCgroup

    parent, child = group_dir, group_dir / "call"
    os.makedirs(child)
    v = 2 if (parent / "cgroup.controllers").exists() else 1
    if v == 2:
        (parent / "cgroup.subtree_control").write_text("+memory")
    group = SandboxCgroup(v, {"memory": child})
    if above_limit:
        (parent / ("memory.max" if v == 2 else "memory.limit_in_bytes")).write_text(str(above_limit))
    group.set_memory_max(own_limit)
    mark = group.memory_mark()
    hog = subprocess.run(["sh", "-c", f"echo $$ > {child}/cgroup.procs && exec {sys.executable} -c "
                                      "'x = bytearray(200 << 20)'"])
    assert hog.returncode == -signal.SIGKILL or hog.returncode == 137, hog.returncode
    return group.killed_for_memory(mark)


def test_a_kill_for_the_machines_memory_is_told_from_the_sandboxs_own_limit():
    """A sandbox's process killed because the memory above it ran out is the grader's
    problem; killed at its own limit, the student's. Each group reads its own counters, so
    two sandboxes (two tests, two workers) side by side never take each other's kills."""
    from grader.engine.cgroup import CgroupUnavailable, SandboxCgroup

    try:
        made = SandboxCgroup.create()
    except CgroupUnavailable as exc:
        pytest.skip(str(exc))
    base = made.memory_dir.parent
    made.remove()
    for own, above, told in ((64 << 20, None, "limit"), (1 << 30, 64 << 20, "host")):
        where = base / f"probe-{os.getpid()}-{told}"
        os.makedirs(where)
        try:
            assert _killed_in(where, own, above) == told
        finally:
            for d in (where / "call", where):
                d.rmdir()


def test_a_sandbox_that_dies_as_a_submission_ends_serves_the_next_from_a_fresh_start(sandbox):
    """The reset after a submission is not waited for (the worker writes its report
    meanwhile); the next submission's first call reads its word, and where the sandbox
    died instead, that call starts a fresh one rather than failing."""
    assert call(sandbox, "def f():\n    return 1\n").value == 1
    sandbox.reset()
    starts = sandbox.starts
    sandbox.cgroup.kill()  # the warm process and all below it, before or after its sweep
    assert call(sandbox, "def f():\n    return 2\n").value == 2
    assert sandbox.starts == starts + 1


def test_submissions_that_make_no_call_leave_the_next_ones_calls_answered_in_turn(sandbox):
    """A submission refused before its first call (a syntax error) still ends with a reset:
    two resets, and no call between them, must not leave a word unread that the next call
    would take for its answer."""
    assert call(sandbox, "def f():\n    return 2\n").value == 2
    sandbox.reset()
    sandbox.reset()
    assert call(sandbox, "def f():\n    return 3\n").value == 3
    sandbox.reset()
    assert call(sandbox, "def f():\n    return 4\n").value == 4


MEMFD_HOARD = """import os


def f():
    held = []
    for _ in range(40):  # 600 MiB, never mapped: only the cgroup's bound sees it
        fd = os.memfd_create("hoard")
        os.write(fd, b"x" * (15 << 20))
        held.append(fd)
    return len(held)
"""


def test_the_first_call_after_a_submission_ended_is_held_to_its_own_memory_bound(sandbox):
    """The reset's word, read as the next submission's first call begins, puts back the
    idle bound: read after that call set its own, it lifted the call's to the idle one."""
    assert call(sandbox, "def f():\n    return 1\n").value == 1
    sandbox.reset()
    out = sandbox.call({"submission.py": MEMFD_HOARD}, "f", [], {},
                       limits=Limits(timeout=10, memory_bytes=128 << 20, tmp_bytes=16 << 20))
    assert out.kind == "memory", (out.kind, out.detail, out.value)
