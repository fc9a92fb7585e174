"""Hostile submissions against the sandbox: one per file in tests/attacks/.

Each test grades an attack against the attack-target exercise (tests/fixtures/exercises/:
1 s per call, 6 s per submission, 256 MiB) and checks that it earned no point an honest
answer would not, that its report leaks nothing of the trusted side, that none of its
processes outlives the grade, and that the next submission is graded correctly.

A test marked xfail(strict=True) shows a weakness the engine still has; its reason says
which. Once the engine is fixed the test passes, strict xfail reports that as a failure,
and the marker can go.
"""

from __future__ import annotations

import ast
import os
import re
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from grader.engine import grading
from grader.protocol.report import Report
from grader.engine.sandbox import Sandbox

TESTS = Path(__file__).resolve().parent
ATTACKS = TESTS / "attacks"
TARGET = TESTS / "fixtures" / "exercises" / "attack-target"
SOLUTION = (TESTS.parent / "exercises" / "autograd-basics" / "solution.py").read_text(encoding="utf-8")

# What no report may contain: lines of the hidden tests, the hidden test's inputs and
# expected values (as describe() would show them, four significant digits), the
# reference solution, and files of the grader's machine.
HIDDEN_SOURCE = (TARGET / "tests" / "test_attack_target.py").read_text(encoding="utf-8")
HIDDEN_X = next(ast.literal_eval(line.split("=", 1)[1]) for line in HIDDEN_SOURCE.splitlines()
                if line.startswith("HIDDEN_X ="))
HIDDEN_VALUES = [f"{abs(v):.4g}" for v in HIDDEN_X + [4 * v for v in HIDDEN_X]]
OUTSIDE = ["REFERENCE-SOLUTION-MARKER-5d1c", "root:x:0:0:", 'name = "autograd-grader"']
SECRET = "s3cr3t-value-8e21"

# Attacks that freeze the sandbox's own processes; the test thaws them after this many
# seconds so that a weakness costs seconds, not the engine's 20 s grace period.
THAW_AFTER = {"stop_process_group": 4.0}


# ------------------------------------------------------------------ helpers

@dataclass
class Graded:
    name: str
    source: str
    report: Report
    seconds: float
    restarted: bool      # the warm sandbox process died and had to be started again
    thawed: bool         # the test had to SIGCONT frozen sandbox processes
    stray: list[str]     # processes of the sandbox still running below the warm process


_graded: dict[str, Graded] = {}


@pytest.fixture(scope="module", autouse=True)
def _fresh_sandbox_per_module():
    grading.shutdown()
    yield
    grading.shutdown()


@pytest.fixture(scope="session")
def jacobian_exercise():
    """An exercise that blocks APIs: torch.func and torch.autograd.functional.jacobian."""
    from grader import catalog

    return catalog.load(TESTS.parent / "exercises" / "jacobian")


def graded(target, name: str) -> Graded:
    """tests/attacks/<name>.py, graded once per test run: tests of one attack share it."""
    if name not in _graded:
        _graded[name] = grade_attack(target, name)
    return _graded[name]


def grade_attack(target, name: str) -> Graded:
    source = (ATTACKS / f"{name}.py").read_text(encoding="utf-8")
    sandbox = grading.sandbox_for(False)
    sandbox.start()
    grading.exercise_sandbox().start()  # its start (torch, pytest) is no part of a grade's time
    starts = sandbox.starts
    uid = sandbox.uid
    outcome: dict = {}

    def run():
        try:
            outcome["report"] = grading.grade(target, source)
        except BaseException as exc:  # noqa: BLE001 - raised again below, in the test
            outcome["error"] = exc

    started = time.monotonic()
    worker = threading.Thread(target=run)
    worker.start()
    worker.join(THAW_AFTER.get(name))
    thawed = worker.is_alive()
    while worker.is_alive():
        for pid, _, _ in processes(uid):
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        worker.join(0.5)
    seconds = time.monotonic() - started
    if "error" in outcome:
        raise outcome["error"]
    restarted = grading.sandbox_for(False) is not sandbox or sandbox.starts != starts or not sandbox.alive
    return Graded(name, source, outcome["report"], seconds, restarted, thawed, stray_processes(uid))


def processes(uid: int) -> list[tuple[int, int, str]]:
    """(pid, parent pid, command line) of this machine's processes running as uid."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if int(fields["Uid"].split()[0]) == uid:
            command = cmdline.replace(b"\0", b" ").decode(errors="replace")
            found.append((int(entry), int(fields["PPid"]), command))
    return found


def stray_processes(uid: int, wait: float = 3.0) -> list[str]:
    """Processes of the sandbox that are neither its warm process nor an idle spare child.

    The warm process runs as the sandbox uid under bubblewrap (root). It may keep children
    forked ahead for the next calls, each behind the walls that need nothing of a call:
    a direct child with its command line, already of uid + 1 (the uid calls run as), the
    first process of the call's PID namespace to come, with no child of its own, blocked
    reading the request pipe. Any other process of the sandbox uid is something a
    submission left, and so is any other process of uid + 1 once the call is over.
    """
    deadline = time.monotonic() + wait
    while True:
        running = processes(uid)
        ours = {pid for pid, _, _ in running}
        warm = {pid: cmd for pid, parent, cmd in running if parent not in ours}
        stray = [f"{pid} {cmd}" for pid, parent, cmd in running if parent in ours]
        calls = processes(uid + 1)
        parents = {parent for _, parent, _ in calls}
        spares = {pid for pid, parent, cmd in calls if parent in warm and cmd == warm[parent]
                  and pid not in parents and _waits_on_pipe(pid)}
        stray += [f"{pid} {cmd}" for pid, parent, cmd in calls if pid not in spares]
        if not stray or time.monotonic() > deadline:
            return stray
        time.sleep(0.1)


def _waits_on_pipe(pid: int) -> bool:
    try:
        return "pipe_read" in Path(f"/proc/{pid}/wchan").read_text()
    except OSError:
        return False


def processes_with(marker: str) -> list[str]:
    found = []
    for entry in os.listdir("/proc"):
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes() if entry.isdigit() else b""
        except OSError:
            continue
        if marker.encode() in cmdline:
            found.append(entry + " " + cmdline.replace(b"\0", b" ").decode(errors="replace"))
    return found


def strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in strings(k) + strings(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in strings(v)]
    return []


def report_text(report: Report, *, output: bool = True) -> str:
    data = report.to_dict()
    if not output:
        data.pop("output")
    return "\n".join(strings(data))


def leaks(report: Report, attack_source: str = "") -> list[str]:
    """What the report shows that it must not (the attack's own lines excepted)."""
    text = report_text(report)
    own = {line.strip() for line in attack_source.splitlines()}
    hidden_lines = [line.strip() for line in HIDDEN_SOURCE.splitlines()
                    if len(line.strip()) >= 16 and line.strip() not in own]
    return [s for s in hidden_lines + HIDDEN_VALUES + OUTSIDE if s in text]


def message(report: Report, visible: bool) -> str:
    return next(t.message or "" for t in report.tests if t.visible == visible)


def assert_next_submission_grades(target) -> None:
    report = grading.grade(target, SOLUTION)
    assert (report.status, report.score, report.max_score) == ("graded", 2, 2), report.render()


def assert_contained(g: Graded, target, *, honest: bool = False, check_leaks: bool = True) -> None:
    """No undeserved point, nothing leaked, nothing left running, the next grade is right.

    honest: the attack also computes the right answer, so it keeps full marks.
    """
    report = g.report
    if honest:
        assert report.score == report.max_score, report.render()
    else:
        assert report.score == 0, report.render()
    if check_leaks:
        assert leaks(report, g.source) == [], report.render()
    assert g.stray == []
    assert_next_submission_grades(target)


# ------------------------------------------------------------------ cheating

def test_monkeypatched_checks_and_builtins_do_not_reach_the_hidden_tests(target):
    g = graded(target, "monkeypatch_checks")
    assert g.report.status == "graded"
    # The real expect_close ran in the trusted process and saw the zeros.
    assert "expected shape (3,)" in message(g.report, visible=True)
    assert_contained(g, target)


@pytest.mark.parametrize("name", ["os_exit_at_import", "sys_exit_at_import",
                                  "os_exit_in_call", "sys_exit_in_call"])
def test_exiting_with_status_zero_earns_nothing(target, name):
    g = graded(target, name)
    assert g.report.status == "graded"
    shown = message(g.report, visible=True)
    assert "ended its process" in shown or "SystemExit" in shown, shown
    assert not g.restarted
    assert_contained(g, target)


def test_forged_test_output_shows_only_as_printed_output(target):
    g = graded(target, "forged_output")
    report = g.report
    assert report.score == 0 and all(not t.passed for t in report.tests)
    assert "2 passed in 0.01s" in report.output and '"score": 2' in report.output
    rest = report_text(report, output=False)
    for forged in ("PASSED", "passed in", "FORGED", '"score": 2'):
        assert forged not in rest
    assert_contained(g, target)


@pytest.mark.parametrize("name", ["always_equal", "lying_tensor"])
def test_values_that_claim_to_equal_anything_earn_nothing(target, name):
    g = graded(target, name)
    assert g.report.status == "graded"
    assert "cannot be graded" in message(g.report, visible=True)
    assert_contained(g, target)


UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def test_terminal_escapes_and_bidi_overrides_are_shown_escaped(target):
    g = graded(target, "terminal_escapes")
    for shown in (g.report.render(), g.report.to_json(), g.report.render("ko")):
        assert UNSAFE.findall(shown) == [], UNSAFE.findall(shown)
    assert "\\x1b[2J\\x1b[H" in g.report.output and "\\u202e2/0\\u202c" in g.report.output
    assert "\\x9b2J" in g.report.output and "\\x0dhere" in g.report.output
    assert "\\x1b]0;pwned" in message(g.report, visible=True)
    assert_contained(g, target)


@pytest.mark.parametrize("options", [[], ["--json"], ["--lang", "ko"]])
def test_grader_grade_prints_no_terminal_escapes(options):
    from click.testing import CliRunner

    from grader.cli import main

    result = CliRunner().invoke(main, ["grade", str(TARGET), str(ATTACKS / "terminal_escapes.py"), *options])
    assert result.exit_code == 1, result.output
    assert "pwned" in result.output and UNSAFE.findall(result.output) == [], UNSAFE.findall(result.output)


def test_a_blocked_api_imported_from_where_it_is_defined_is_refused_by_name(jacobian_exercise):
    g = graded(jacobian_exercise, "jacrev_from_its_module")
    report = g.report
    assert (report.status, report.score) == ("submission_error", 0), report.render()
    assert "line 3 of submission.py uses torch._functorch.eager_transforms.jacrev, which is " \
        "torch.func.jacrev" in report.message, report.message
    assert all("switched off" in (t.hint or "") for t in report.tests), report.render()
    assert g.stray == []


def test_reloading_a_blocked_module_does_not_bring_it_back(jacobian_exercise):
    g = graded(jacobian_exercise, "reload_blocked_module")
    report = g.report
    assert report.status == "graded" and report.score == 0, report.render()
    assert "is not available in this exercise" in message(report, visible=True), report.render()
    assert g.stray == []


def test_a_forged_gradcheck_does_not_pass_the_gradcheck_test():
    from grader import catalog

    g = grade_attack(catalog.find("custom-function"), "forged_gradcheck")
    results = {t.id.rsplit("::", 1)[-1]: t.passed for t in g.report.tests}
    assert results.pop("test_gradcheck_float64") is False, g.report.render()
    assert all(results.values()), g.report.render()  # float32 is right: only gradcheck sees the error
    assert g.stray == []


def test_a_forward_that_answers_inf_to_the_gradchecks_steps_does_not_pass_it():
    from grader import catalog

    g = grade_attack(catalog.find("custom-function"), "inf_forward")
    results = {t.id.rsplit("::", 1)[-1]: t.passed for t in g.report.tests}
    assert results["test_gradcheck_float64"] is False, g.report.render()
    assert g.stray == []


def test_a_gradient_written_in_place_into_an_emptied_grad_is_found_made_by_hand():
    from grader import catalog

    g = grade_attack(catalog.find("autograd-basics"), "grad_written_in_place")
    assert g.report.score < g.report.max_score, g.report.render()
    assert any("assigned by hand" in (t.hint or "") for t in g.report.tests), g.report.render()
    assert g.stray == []


def test_a_probe_result_cut_short_by_the_submission_is_the_students_failure_not_the_exercises():
    from grader import catalog

    g = grade_attack(catalog.find("custom-function"), "probe_result_cut")
    [gradcheck] = [t for t in g.report.tests if t.id.endswith("test_gradcheck_float64")]
    assert not gradcheck.passed, g.report.render()  # a hidden test: its message stays hidden, as any
    assert "not your mistake" not in g.report.render()
    assert g.stray == []


def test_a_forged_device_and_autocast_flags_earn_nothing():
    from grader import catalog

    g = grade_attack(catalog.find("grad-scaler"), "forged_device")
    amp = [t for t in g.report.tests if "test_amp_step" in t.id]
    assert len(amp) == 2 and not any(t.passed for t in amp), g.report.render()
    assert "float32 forward pass" in next(t.message for t in amp if t.visible)
    assert all("autocast" in (t.hint or "") for t in amp), g.report.render()
    assert g.stray == []


# ------------------------------------------------------------------ secrets

def test_guessing_paths_finds_neither_hidden_tests_nor_solution(target):
    g = graded(target, "read_hidden_files")
    assert "SEARCHED" in g.report.output  # it did run its search
    assert_contained(g, target)


@pytest.mark.slow  # starts a sandbox of its own
def test_grader_environment_never_reaches_the_sandbox(target, monkeypatch):
    monkeypatch.setenv("GRADER_TEST_SECRET", SECRET)
    # The student sandbox, where the attack runs, starts again while the secret is in this
    # process's environment (the exercise sandbox's own walls are test_exercise_sandbox.py's).
    grading.sandbox_for(False).close()
    g = grade_attack(target, "read_environment")
    assert "ENVIRONMENT" in g.report.output
    assert SECRET not in g.report.to_json() and "GRADER_TEST_SECRET" not in g.report.to_json()
    assert_contained(g, target)


def test_network_is_unreachable_from_the_sandbox(target):
    g = graded(target, "network")
    attempts = [line for line in g.report.output.splitlines() if line.startswith("NETWORK ")]
    assert len(attempts) == 10, g.report.output
    assert all(": BLOCKED " in line for line in attempts), attempts
    assert_contained(g, target, honest=True)


def test_hidden_inputs_cannot_be_carried_into_a_visible_test(target):
    g = graded(target, "stash_hidden_inputs")
    assert leaks(g.report, g.source) == []


def test_carrying_hidden_inputs_in_tmp_earns_nothing_more(target):
    g = graded(target, "stash_hidden_inputs")
    assert "STASHED INPUTS:" in g.report.output
    assert_contained(g, target, honest=True, check_leaks=False)


def test_hidden_inputs_cannot_leak_through_an_exception_class_name(target):
    g = graded(target, "exception_name_leak")
    assert leaks(g.report, g.source) == []


def test_hidden_inputs_cannot_leak_through_line_numbers_or_durations(target):
    g = graded(target, "line_from_hidden_input")
    hidden = message(g.report, visible=False)
    assert "ValueError" in hidden and "line" not in hidden, hidden
    assert "line 20" in message(g.report, visible=True)  # x[0] = 1: the student's own input, shown
    assert all(t.duration_ms % 100 == 0 for t in g.report.tests), [t.duration_ms for t in g.report.tests]
    assert g.report.duration_ms % 100 == 0
    assert_contained(g, target)


def test_made_up_exception_classes_earn_nothing(target):
    g = graded(target, "exception_name_leak")
    assert_contained(g, target, check_leaks=False)


# ------------------------------------------------------------------ resources

@pytest.mark.slow
def test_fork_bomb_is_contained_and_next_submission_grades(target):
    g = graded(target, "fork_bomb")
    assert g.report.status == "time_limit"
    assert g.seconds < target.limits.submission_seconds + 2
    assert_contained(g, target)


def test_memory_bomb_hits_the_memory_limit_and_the_warm_process_survives(target):
    g = graded(target, "memory_bomb")
    assert g.report.status == "memory_limit"
    assert "memory limit exceeded (256 MiB" in message(g.report, visible=True)
    assert not g.restarted
    assert_contained(g, target)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["endless_loop", "sleep_forever"])
def test_running_forever_hits_the_time_limit(target, name):
    g = graded(target, name)
    assert g.report.status == "time_limit"
    assert "time limit exceeded (1 s per call)" in message(g.report, visible=True)
    assert g.seconds < 2 * target.limits.call_seconds + 2
    assert not g.restarted
    assert_contained(g, target)


def test_huge_file_is_cut_at_the_file_size_limit_and_gone_afterwards(target, grade_file):
    g = graded(target, "huge_file")
    line = next(line for line in g.report.output.splitlines() if line.startswith("HUGE-FILE"))
    size = int(re.search(r"size=(\d+)", line).group(1))
    assert size <= target.limits.file_mb << 20 and "File too large" in line, line
    assert_contained(g, target, honest=True)
    after = grade_file(ATTACKS / "look_for_leftovers.py")
    assert "huge-file-attack.bin" not in after.output and "LEFTOVER tmp:" in after.output


def test_files_left_in_tmp_are_gone_for_the_next_submission(target, grade_file):
    g = grade_attack(target, "leave_shared_memory")
    after = grade_file(ATTACKS / "look_for_leftovers.py")
    assert "LEFTOVER tmp:" in after.output
    assert "left-by-an-earlier-submission.txt" not in after.output, after.output
    assert_contained(g, target, honest=True)


def test_shared_memory_left_behind_is_gone_for_the_next_submission(target, grade_file):
    grade_file(ATTACKS / "leave_shared_memory.py")
    after = grade_file(ATTACKS / "look_for_leftovers.py")
    assert "LEFT-BY-AN-EARLIER-SUBMISSION" not in after.output, after.output


def test_a_child_finds_no_trace_of_an_earlier_calls_inputs_in_its_memory(target):
    # Enough hidden calls that the children forked ahead are used up and new ones are
    # forked after the hidden inputs passed through the warm process; then a scan.
    source = (ATTACKS / "scan_memory.py").read_text()
    sandbox = Sandbox()
    try:
        hidden = torch.tensor(HIDDEN_X, dtype=torch.float64, requires_grad=True)
        for _ in range(8):
            assert sandbox.call({"submission.py": source}, "grad_2xtx", [hidden], {}).kind == "ok"
        time.sleep(0.5)  # idle: the warm process forks its next children now
        scan = sandbox.call({"submission.py": source}, "grad_2xtx", [torch.ones(3, requires_grad=True)], {})
    finally:
        sandbox.close()
    assert "SCAN-MEMORY found=0" in scan.output, scan.output


def test_files_in_tmp_count_against_the_memory_limit(target):
    g = graded(target, "fill_tmp")
    stored = int(re.search(r"stored_mib=(\d+)", g.report.output).group(1))
    assert stored <= target.limits.memory_mb


def test_filling_tmp_earns_nothing_more(target):
    g = graded(target, "fill_tmp")
    assert "FILL-TMP" in g.report.output
    assert_contained(g, target, honest=True)


def test_printing_megabytes_is_truncated(target):
    g = graded(target, "print_megabytes")
    report = g.report
    assert report.output_truncated
    assert 0 < len(report.output.encode()) <= target.limits.output_kb << 10
    assert_contained(g, target, honest=True)


def test_huge_tensor_result_is_refused_without_harm(target):
    g = graded(target, "huge_tensor")
    assert g.report.status == "memory_limit"  # the hidden call's 1 GiB
    shown = message(g.report, visible=True)  # the visible call's 65 MiB
    assert "out of memory" in shown or "returned too much data" in shown, shown
    assert not g.restarted
    assert_contained(g, target)


def test_flooding_the_result_pipe_is_cut_at_the_result_limit(target):
    g = graded(target, "flood_result_pipe")
    assert "returned more than 64 MiB" in message(g.report, visible=True)
    assert not g.restarted
    assert_contained(g, target)


def test_forged_result_frame_earns_nothing(target):
    g = graded(target, "deep_json_frame")
    assert_contained(g, target)


def test_forged_result_frame_is_blamed_on_the_student(target):
    g = graded(target, "deep_json_frame")
    assert g.report.warnings == []
    assert "not a result" in message(g.report, visible=True)


# ------------------------------------------------------------------ decoding

def _memory(field: str) -> int:
    """VmRSS or VmHWM (the peak since the last reset) of this, the trusted, process."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) << 10
    raise LookupError(field)


def test_tensors_naming_one_extent_cannot_multiply_the_trusted_sides_memory(target):
    grading.sandbox_for(False).start()
    before = _memory("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM starts again from VmRSS
    g = grade_attack(target, "shared_extent")
    grew = _memory("VmHWM") - before
    print(f"\nshared_extent: peak RSS of the trusted process {before >> 20} MiB -> "
          f"{(before + grew) >> 20} MiB (+{grew >> 20} MiB for a 20 MiB blob named 48 times)")
    assert grew < 160 << 20, f"the trusted process grew by {grew >> 20} MiB"
    assert "not a result" in message(g.report, visible=True) and "overlap" in message(g.report, visible=True)
    assert_contained(g, target)


def test_a_value_that_decodes_is_graded_as_the_students_answer(target):
    g = grade_attack(target, "int64_min")
    assert g.report.status == "graded" and g.report.score == 0, (g.report.status, g.report.message)
    assert_contained(g, target)


@pytest.mark.parametrize("name", ["empty_tensor_huge_shape", "deep_grad_chain", "result_without_arguments"])
def test_a_result_that_fails_to_decode_is_the_students_error(target, name):
    g = graded(target, name)
    assert g.report.status == "graded" and g.report.warnings == [], g.report.render()
    shown = message(g.report, visible=True)
    assert "sent back data the grader cannot read" in shown and "not a result" in shown, shown
    assert all("exercise's test" not in (t.message or "") for t in g.report.tests), g.report.render()
    assert_contained(g, target)


# ------------------------------------------------------------------ processes

@pytest.mark.parametrize("name", ["kill_parent", "kill_process_group", "kill_everything",
                                  pytest.param("limit_the_warm_process", marks=pytest.mark.slow)])
def test_attacking_the_parent_process_earns_nothing_and_leaves_nothing_running(target, name):
    g = graded(target, name)
    assert_contained(g, target)


@pytest.mark.parametrize("name", ["kill_parent", "kill_process_group", "kill_everything"])
def test_signalling_the_parent_cannot_kill_the_warm_sandbox(target, name):
    g = graded(target, name)
    assert not g.restarted
    assert g.report.status == "graded"


def test_lowering_the_warm_process_limits_cannot_kill_it(target):
    g = graded(target, "limit_the_warm_process")
    assert not g.restarted
    assert g.report.status == "graded"


@pytest.mark.slow
def test_stopping_the_parent_is_cut_off_at_the_time_limit(target):
    g = graded(target, "stop_process_group")
    assert not g.thawed, "the grade was still running %.0f s later" % THAW_AFTER["stop_process_group"]
    assert g.report.status == "time_limit"
    assert not g.restarted
    assert_contained(g, target)


@pytest.mark.slow
def test_background_process_does_not_survive_the_grade(target):
    g = graded(target, "background_process")
    assert re.search(r"BACKGROUND daemons running: [1-9]", g.report.output)  # it did start one
    marker = "GRADER-ATTACK-BACKGROUND-3c9d"
    deadline = time.monotonic() + 3
    while processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1)  # and nothing comes back a moment later
    assert processes_with(marker) == []
    assert_contained(g, target, honest=True)


# ------------------------------------------------------------------ kernel walls

def test_a_ptrace_helper_cannot_hold_the_call_back(target):
    g = graded(target, "ptrace_and_never_wait")
    assert "PTRACE refused errno=1" in g.report.output, g.report.output
    assert g.report.status == "time_limit", g.report.render()
    assert g.seconds < 2 * target.limits.call_seconds + 3
    assert not g.restarted
    assert_contained(g, target)


def test_memory_held_in_memfd_files_counts_against_the_memory_limit(target):
    g = graded(target, "hoard_memfd")
    assert g.report.status == "memory_limit", g.report.render()
    assert "memory limit exceeded (256 MiB" in message(g.report, visible=True)
    assert not g.restarted
    assert_contained(g, target)


def test_a_call_cannot_slow_down_the_calls_after_it(target, grade_file):
    g = graded(target, "slow_down_the_next_call")
    assert "SLOWED" in g.report.output
    after = grade_file(ATTACKS / "look_at_scheduling.py")
    line = next(line for line in after.output.splitlines() if line.startswith("SCHEDULING"))
    cpus = len(os.sched_getaffinity(0))
    assert line == f"SCHEDULING policy=0 nice=0 cpus={cpus} autogroup_nice=0 warm_autogroup_nice=0", line
    assert_contained(g, target, honest=True)


def _join_session_keyring(name: bytes | None) -> int:
    import ctypes
    import platform

    keyctl = {"x86_64": 250, "aarch64": 219}[platform.machine()]
    return ctypes.CDLL(None, use_errno=True).syscall(keyctl, 1, name)  # KEYCTL_JOIN_SESSION_KEYRING


@pytest.mark.slow  # starts a sandbox of its own
def test_hidden_inputs_cannot_be_carried_through_the_kernel_keyring(target):
    # A worker under systemd or a container runtime has a session keyring, which every
    # process it starts inherits (and, possessing it, may read and write).
    # Only the student sandbox, where the attack's calls run, starts again inside it.
    grading.sandbox_for(False).close()
    assert _join_session_keyring(b"grader-test-worker") > 0
    try:
        g = grade_attack(target, "stash_in_keyring")
    finally:
        grading.sandbox_for(False).close()  # no later test's sandbox holds this keyring
        _join_session_keyring(None)  # an anonymous one of its own again
    assert "KEYRING STASH:" in g.report.output
    assert leaks(g.report, g.source) == [], g.report.output
    assert_contained(g, target, honest=True, check_leaks=False)


def test_every_attack_file_is_graded_by_a_test():
    source = "".join(p.read_text(encoding="utf-8") for p in sorted(TESTS.glob("test_attacks*.py")))
    unused = [p.stem for p in sorted(ATTACKS.glob("*.py")) if f'"{p.stem}' not in source]
    assert unused == []
