"""grader.testing itself, the API hidden tests are written in: what each check decides and
what it lets a student see. Pure functions, no sandbox."""

from __future__ import annotations

import re
import sys

import pytest
import torch

from grader.inside.wire import StudentException, TensorState
from grader.testing.feedback import EXERCISE_BUG, revealed
from grader.testing import (Feedback, Hint, Mistake, StudentError, Text, describe, expect_close, expect_leaf,
                            expect_true, gradcheck_from_values, hints_for_errors)

HALF = Mistake(torch.tensor([1.0, 2.0]), "only half of the gradient", "기울기의 절반만")


def test_a_close_value_passes_and_a_far_one_explains_itself():
    expect_close(torch.tensor([2.0, 4.0]), torch.tensor([2.0, 4.0 + 1e-7]), what="x.grad")
    with pytest.raises(Feedback) as failed:
        expect_close(torch.tensor([2.0, 5.0]), torch.tensor([2.0, 4.0]), what="x.grad")
    assert "x.grad: expected" in failed.value.message and "max abs difference 1" in failed.value.message
    assert failed.value.hint is None and "기대값" in failed.value.text.ko


def test_a_value_matching_a_known_mistake_gets_that_mistakes_hint():
    with pytest.raises(Feedback) as failed:
        expect_close(torch.tensor([1.0, 2.0]), torch.tensor([2.0, 4.0]), what="x.grad", mistakes=[HALF],
                     hint=Hint("generic"))
    assert failed.value.hint == Hint("only half of the gradient", "기울기의 절반만")


def test_a_wrong_value_matching_no_mistake_gets_the_tests_own_hint():
    with pytest.raises(Feedback) as failed:
        expect_close(torch.tensor([9.0, 9.0]), torch.tensor([2.0, 4.0]), what="x.grad", mistakes=[HALF],
                     hint=Hint("generic"))
    assert failed.value.hint == Hint("generic")


@pytest.mark.parametrize("actual, says", [(None, "is None"), ([2.0, 4.0], "should be a tensor"),
                                          (torch.ones(3), "has shape (3,)")])
def test_a_missing_or_misshapen_value_says_what_is_wrong(actual, says):
    with pytest.raises(Feedback, match=re.escape(f"x.grad {says}")):
        expect_close(actual, torch.tensor([2.0, 4.0]), what="x.grad")


def test_the_dtype_is_checked_only_when_asked():
    expect_close(torch.tensor([1.0]), torch.tensor([1.0], dtype=torch.float64), what="y")
    with pytest.raises(Feedback, match="dtype"):
        expect_close(torch.tensor([1.0]), torch.tensor([1.0], dtype=torch.float64), what="y", check_dtype=True)


def test_describe_shows_a_few_elements_and_never_the_whole_tensor():
    text = describe(torch.arange(1000.0))
    assert text.startswith("shape (1000,), float32, [0, 1, 2, 3, 4, 5, ...]") and "999" not in text
    assert describe(None) == "None" and describe("x" * 500).endswith("x" * 60 + ")")


def test_expect_true_fails_with_its_message_and_hint():
    expect_true(True, "never shown")
    with pytest.raises(Feedback) as failed:
        expect_true(False, "x is no longer a leaf", hint=Hint("keep x"), message_ko="x가 leaf가 아닙니다")
    assert (failed.value.message, failed.value.hint.en, failed.value.text.ko) == (
        "x is no longer a leaf", "keep x", "x가 leaf가 아닙니다")


@pytest.mark.parametrize("is_leaf, requires_grad", [(False, True), (True, False)])
def test_expect_leaf_fails_for_an_x_replaced_detached_or_switched_off(is_leaf, requires_grad):
    expect_leaf(TensorState(torch.ones(2), requires_grad=True, is_leaf=True))
    with pytest.raises(Feedback) as failed:
        expect_leaf(TensorState(torch.ones(2), requires_grad=requires_grad, is_leaf=is_leaf), "a")
    assert failed.value.message == "a is no longer a leaf that requires grad"
    assert failed.value.hint.en.startswith("Do not replace or detach a;") and failed.value.hint.ko


def raised(type_: str, message: str) -> StudentError:
    return StudentError("exception", "grad_2xtx", exception=StudentException(
        type=type_, message=message, traceback=[(17, "grad_2xtx", "raise ValueError(x)")]))


def test_a_hidden_tests_short_message_reveals_no_exception_text_and_no_line():
    short = raised("ValueError", "x[0] was 1.7320508").short()
    assert short.en == "Your code raised an exception in grad_2xtx(): ValueError"
    assert short.ko == "grad_2xtx(): 코드에서 예외가 발생했습니다 (ValueError)"
    assert "1.73" not in short.en + short.ko and "17" not in short.en + short.ko


def test_an_exception_class_the_student_named_is_not_shown_by_its_name():
    assert raised("Hidden_x0_is_1_73", "").short().en.endswith(": an exception")


def test_a_visible_tests_message_shows_the_whole_exception():
    error = raised("ValueError", "bad shape")
    assert "ValueError" in error.message and "bad shape" in error.message


def test_hints_for_errors_names_the_misconception_of_a_known_error():
    again = Hint("keep the graph with retain_graph=True")
    with pytest.raises(StudentError) as failed:
        with hints_for_errors({"backward through the graph a second time": again}):
            raise raised("RuntimeError", "Trying to backward through the graph a second time")
    assert failed.value.hint is again
    with pytest.raises(StudentError) as other:
        with hints_for_errors({"backward through the graph a second time": again}):
            raise raised("RuntimeError", "something else")
    assert other.value.hint is None


def jacobian_data(f, x: torch.Tensor, eps: float = 1e-6):
    """What the custom-function probe returns: outputs at x ± eps, and backward's rows."""
    plus, minus = [], []
    for j in range(x.numel()):
        step = torch.zeros_like(x)
        step[j] = eps
        plus.append(f(x + step))
        minus.append(f(x - step))
    rows = [torch.autograd.functional.jacobian(f, x)[i] for i in range(x.numel())]
    return plus, minus, rows


def test_gradcheck_from_values_accepts_a_right_backward_and_names_a_wrong_one():
    x = torch.tensor([0.3, -1.2, 2.0], dtype=torch.float64)
    plus, minus, rows = jacobian_data(torch.nn.functional.softplus, x)
    assert gradcheck_from_values(plus, minus, rows, eps=1e-6) is None
    wrong = [row * 1.5 for row in rows]  # a backward off by a factor
    assert gradcheck_from_values(plus, minus, wrong, eps=1e-6).startswith("Jacobian mismatch for output 0")


@pytest.mark.parametrize("forged", [float("inf"), float("-inf"), float("nan")])
def test_gradcheck_from_values_takes_no_non_finite_output_as_a_match(forged):
    # A forward that answers inf (or nan) only at the perturbed inputs makes the difference
    # quotient infinite, and |a - n| <= atol + rtol * |n| then holds for any backward at all.
    x = torch.tensor([0.3, -1.2, 2.0], dtype=torch.float64)
    plus, minus, rows = jacobian_data(torch.nn.functional.softplus, x)
    plus = [p.clone().fill_(forged) for p in plus]
    wrong = [row * 1.5 for row in rows]
    assert gradcheck_from_values(plus, minus, wrong, eps=1e-6).startswith("Jacobian mismatch")
    assert gradcheck_from_values(plus, minus, rows, eps=1e-6).startswith("Jacobian mismatch")


def test_expect_close_holds_infinities_and_nan_to_torch_testings_rules():
    inf, nan = float("inf"), float("nan")
    expect_close(torch.tensor([1.0, inf]), torch.tensor([1.0, inf]), what="y")  # the same infinity
    for actual, expected in (([1.0, inf], [1.0, 5.0]), ([1.0, 5.0], [1.0, inf]), ([1.0, -inf], [1.0, inf]),
                             ([1.0, nan], [1.0, 5.0]), ([1.0, nan], [1.0, nan])):
        with pytest.raises(Feedback):
            expect_close(torch.tensor(actual), torch.tensor(expected), what="y")
    expect_close(torch.tensor([1.0, nan]), torch.tensor([1.0, nan]), what="y", equal_nan=True)  # asked for


def test_a_part_missing_from_what_the_student_returned_is_the_students_mistake():
    from grader.testing.api import returned

    result = returned({"y": torch.ones(2), "pairs": [(1, 2)]}, "jacobian_data")
    assert isinstance(result, dict) and isinstance(result["pairs"][0], tuple)
    assert describe(result).startswith("a dict (")
    for read in (lambda r: r["plus"], lambda r: r["pairs"][3], lambda r: r["pairs"][0][5], lambda r: r["pairs"]["x"]):
        with pytest.raises(Feedback) as failed:
            read(result)
        assert not revealed(failed.value, visible=False)[2]  # never "the exercise's own error"
        message, _hint, exercise_bug = revealed(failed.value, visible=True)
        assert not exercise_bug and message.en.startswith("jacobian_data() returned a ")
        assert "which has no" in message.en and message.ko  # said in Korean too
    assert result.get("plus") is None and list(result) == ["y", "pairs"]  # reading as a dict reads


def test_gradcheck_from_values_refuses_data_that_is_not_a_jacobian():
    x = torch.tensor([0.3, -1.2], dtype=torch.float64)
    plus, minus, rows = jacobian_data(torch.nn.functional.softplus, x)
    assert "shapes of a Jacobian" in gradcheck_from_values(plus, minus, rows[:1], eps=1e-6)
    with pytest.raises(Feedback, match="float64"):
        gradcheck_from_values([p.float() for p in plus], minus, rows, eps=1e-6)


# ------------------------------------------------------------------ words, and what is shown

@pytest.mark.parametrize("written", [Text("keep x", "x를 지키세요"), ("keep x", "x를 지키세요"),
                                     Hint("keep x", "x를 지키세요")])
def test_one_text_type_is_accepted_wherever_words_are_written(written):
    with pytest.raises(Feedback) as failed:
        expect_true(False, written, hint=written)
    assert failed.value.text == failed.value.hint == Text("keep x", "x를 지키세요")
    assert Mistake(torch.ones(1), written).hint == Text("keep x", "x를 지키세요")
    assert Text.of("English only").get("ko") == "English only"


def test_the_graders_own_words_come_in_korean_from_the_message_catalogue():
    error = StudentError("timeout", "train", "time limit exceeded (5 s per call)")
    assert error.text.en == "Your code ran out of time in train(): time limit exceeded (5 s per call)"
    assert error.text.ko == "train(): 시간 제한을 넘었습니다 (time limit exceeded (5 s per call))"
    with pytest.raises(Feedback) as failed:
        expect_leaf(TensorState(torch.ones(2), requires_grad=False), "w1")
    assert failed.value.text.ko == "w1가 더 이상 기울기를 요구하는 리프 텐서가 아닙니다"


def test_what_a_failed_test_shows_is_decided_in_one_place():
    feedback = Feedback("x.grad: expected 4, got 5", Hint("half"))
    assert revealed(feedback, visible=True) == (feedback.text, Hint("half"), False)
    assert revealed(feedback, visible=False) == (None, Hint("half"), False)  # the message may echo inputs
    error = raised("ValueError", "x[0] was 1.7320508")
    assert revealed(error, visible=False)[0] == error.short()
    assert revealed(AssertionError("x is 1.73"), visible=False) == (None, None, False)
    assert revealed(AssertionError("x is 1.73"), visible=True)[0] == Text("x is 1.73")
    assert revealed(KeyError("oops"), visible=True) == (EXERCISE_BUG, None, True)


@pytest.mark.parametrize("source, uses", [
    ("import torch\ndef vjp(f, x, v):\n    return torch.autograd.functional.vjp(f, x, v)[1]\n", True),
    ("from torch.autograd.functional import jacobian\n", True),
    ("from torch.autograd import functional as F\n", True),
    ("import torch.func as tf\n", True),
    ("from torch.func import jacrev\n", True),
    ("import torch\ndef vjp(f, x, v):\n    y = f(x)\n    y.backward(v)\n    return x.grad\n", False),
    ("import torch.nn.functional as F\n", False),
    ("def broken(:\n", False),
])
def test_the_derivative_libraries_are_recognised_by_name_in_the_source(source, uses):
    from grader.testing.evidence import uses_derivative_library

    assert uses_derivative_library(source) is uses


@pytest.mark.parametrize("body, assigns", [
    ("    x.grad = 4 * x.detach()\n", True),
    ("    setattr(x, 'grad', 4 * x.detach())\n", True),
    ("    x.grad = None\n", False),
    ("    setattr(x, 'requires_grad', True)\n", False),
    # written in place into a .grad made empty first
    ("    x.grad = torch.zeros_like(x)\n    x.grad.add_(4 * x.detach())\n", True),
    ("    x.grad = torch.zeros_like(x)\n    x.grad.copy_(4 * x.detach())\n", True),
    ("    x.grad = torch.zeros_like(x)\n    x.grad += 4 * x.detach()\n", True),
    ("    x.grad = torch.zeros_like(x)\n    x.grad[:] = 4 * x.detach()\n", True),
    ("    x.grad = torch.zeros_like(x)\n    g = x.grad\n    g.mul_(0).add_(4 * x.detach())\n", True),
    ("    x.grad = torch.zeros_like(x)\n    g = x.grad\n    g += 4 * x.detach()\n", True),
    ("    x.grad = torch.zeros_like(x)\n    g = x.grad\n    g[0] = 4.0\n", True),
    ("    (g,) = torch.autograd.grad((2 * x * x).sum(), x)\n    x.grad = torch.zeros_like(x)\n"
     "    x.grad.copy_(g)\n", True),
    ("    x.grad = torch.zeros_like(x)\n    x.grad.data.add_(4 * x.detach())\n", True),
    ("    x.grad = torch.zeros_like(x)\n    x.grad.data = 4 * x.detach()\n", True),
    # a name once bound to the gradient, then to a copy of it: the copy is the student's own
    ("    (2 * x * x).sum().backward()\n    g = x.grad\n    g = g.clone()\n    g.mul_(1.0)\n    return g\n", False),
    # clearing is not a gradient
    ("    y = (2 * x * x).sum()\n    if x.grad is not None:\n        x.grad.mul_(0)\n    y.backward()\n", False),
    ("    y = (2 * x * x).sum()\n    if x.grad is not None:\n        x.grad.zero_()\n    y.backward()\n", False),
    ("    y = (2 * x * x).sum()\n    if x.grad is not None:\n        x.grad.fill_(0)\n    y.backward()\n", False),
])
def test_a_gradient_made_by_hand_is_found_in_the_source(body, assigns):
    from grader.testing.evidence import assigns_grad

    assert assigns_grad(f"def grad_2xtx(x):\n{body}    return x.grad\n", "grad_2xtx") is assigns


class _Graded:
    """What expect_no_hand_made_grad reads of the student: the source and the latest calls."""

    def __init__(self, source: str, *origins):
        from grader.testing import Call

        self.source = source
        args = [TensorState(torch.ones(2), requires_grad=True, grad=TensorState(torch.ones(2)), grad_origin=o)
                for o in origins]
        self.last_calls = {"grad_2xtx": Call(None, args, {})}


BY_HAND_SOURCE = "def grad_2xtx(x):\n    x.grad = 4 * x.detach()\n    return x.grad\n"
PLAIN_SOURCE = "def grad_2xtx(x):\n    (2 * x @ x).backward()\n    return x.grad\n"


@pytest.mark.parametrize("source, origins, fails", [
    (PLAIN_SOURCE, ("written",), "assigned by hand"),  # the sandbox saw it written (from a helper, say)
    (PLAIN_SOURCE, ("backward", "upstream"), "of your own making"),
    (BY_HAND_SOURCE, ("backward",), None),  # what ran is what counts, not a line never reached
    (BY_HAND_SOURCE, (None,), "assigned by hand"),  # nothing seen: the source decides
    (PLAIN_SOURCE, (None,), None),
])
def test_a_hand_made_gradient_is_decided_from_what_the_sandbox_saw(source, origins, fails):
    from grader.testing import expect_no_hand_made_grad

    if fails is None:
        expect_no_hand_made_grad(_Graded(source, *origins), "grad_2xtx")
        return
    with pytest.raises(Feedback) as failed:
        expect_no_hand_made_grad(_Graded(source, *origins), "grad_2xtx")
    assert fails in failed.value.hint.en


def test_unpacking_what_the_student_returned_into_too_many_or_too_few_names_is_the_students_mistake():
    from grader.testing.api import returned

    three = returned((torch.ones(2), torch.ones(2), torch.ones(2)), "two_gradients")
    with pytest.raises(Feedback) as failed:
        g1, g2 = three
    message, _hint, exercise_bug = revealed(failed.value, visible=True)
    assert not exercise_bug and message.en.startswith("two_gradients() returned a tuple (")
    assert message.en.endswith("3 values, where 2 are expected")
    with pytest.raises(Feedback, match="1 values, where at least 2 are expected"):
        first, *middle, last = returned([torch.ones(2)], "f")
    g1, g2 = returned((1, 2), "f")  # the right number reads as ever
    first, *rest = returned([1, 2, 3], "f")
    assert (g1, g2, first, rest) == (1, 2, 1, [2, 3])
    assert list(returned((1, 2, 3), "f")) == [1, 2, 3] and [v for v in returned([1], "f")] == [1]
    assert dict(zip("ab", returned((1, 2), "f"))) == {"a": 1, "b": 2}


def test_an_error_reading_a_returned_value_of_the_wrong_kind_is_the_students_mistake(tmp_path):
    import importlib.util

    from grader.testing import Call, api

    (tmp_path / "tests").mkdir()
    file = tmp_path / "tests" / "test_reads.py"
    file.write_text("import torch\n\n"
                    "def unpack(call):\n    g1, g2 = call.value\n\n"
                    "def key(call):\n    return call.value['loss']\n\n"
                    "def gradient(call):\n    return call.args[0].grad.data\n\n"
                    "def misspelt(call):\n    return torch.tensr\n")
    spec = importlib.util.spec_from_file_location("test_reads", file)
    reads = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reads)
    call = Call(None, [TensorState(torch.ones(2), requires_grad=True)], {})
    api._this_test["calls"] = [("two_gradients", call)]
    try:
        for read in (reads.unpack, reads.key, reads.gradient):
            with pytest.raises((TypeError, AttributeError)) as raised:
                read(call)
            found = api.misread(raised.value, tmp_path)
            assert found is not None, read
            message, _hint, exercise_bug = revealed(found, visible=True)
            assert not exercise_bug and message.en.startswith("two_gradients() returned None, which is not what")
        with pytest.raises(AttributeError) as raised:
            reads.misspelt(call)
        assert api.misread(raised.value, tmp_path) is None  # not a value the student returned
        with pytest.raises(TypeError) as raised:
            call.value[0]
        assert api.misread(raised.value, tmp_path) is None  # not in the exercise's files
        api._this_test["calls"] = []
        with pytest.raises(TypeError) as raised:
            reads.key(call)
        assert api.misread(raised.value, tmp_path) is None  # the test had called nothing of the student's
    finally:
        api._this_test["calls"] = []


SUITE = """import torch
from grader.testing import points, visible

EVENTS = __import__("builtins").__dict__.setdefault("suite_events", [])
EVENTS.append("collected")


@visible
@points(2)
def test_shown(student):
    EVENTS.append("ran shown")
    assert student.call("f", torch.ones(2)).value.tolist() == [2.0, 2.0]


def test_hidden(student):
    EVENTS.append("ran hidden")
"""


@pytest.mark.parametrize("visible_only, ran", [(False, ["ran shown", "ran hidden"]), (True, ["ran shown"])])
def test_a_suite_is_collected_before_its_grade_and_runs_the_grade_it_is_given(tmp_path, visible_only, ran):
    """What the exercise sandbox's spare does: configure and collect, then wait for the
    grade (``start``), which says whether the visible tests alone run."""
    import builtins

    from grader import protocol
    from grader.testing import harness

    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_suite.py").write_text(SUITE)
    events = builtins.__dict__.setdefault("suite_events", [])
    events.clear()

    class Channel:
        files, device, visible = {"submission.py": ""}, "cpu", False

        def call(self, module, function, args, kwargs):
            return protocol.CallOutcome("ok", value=2 * args[0], args=args)

    def start():
        events.append("graded")
        return visible_only

    progress, loaded = [], set(sys.modules)
    try:
        run = harness.run_suite(tmp_path, Channel(), on_progress=lambda *seen: progress.append(seen), start=start)
    finally:
        del builtins.suite_events
        for name in set(sys.modules) - loaded:  # as in a fresh child: the suite's module is new each grade
            if name.rpartition(".")[2] == "test_suite":
                del sys.modules[name]
    assert events == ["collected", "graded", *ran]
    assert [r.passed for r in run.results] == [True] * len(ran) and run.error is None
    assert progress[0] == (0, len(ran)) and progress[-1] == (len(ran), len(ran))


BROKEN_SUITE = """
import torch

SCALE = {"x": 2}["y"]  # the exercise's own bug, at import


def test_never_runs(student):
    pass
"""


def test_a_suite_that_cannot_be_collected_says_where_in_its_own_traceback(tmp_path):
    # Its failures' reports are cut to one line once the tests run; a collection error's is not.
    from grader.testing import harness

    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_broken.py").write_text(BROKEN_SUITE)
    loaded = set(sys.modules)
    try:
        run = harness.run_suite(tmp_path, object())
    finally:
        for name in set(sys.modules) - loaded:
            if name.rpartition(".")[2] == "test_broken":
                del sys.modules[name]
    assert run.error.startswith("the exercise's tests could not be collected")
    assert "test_broken.py" in run.error and "KeyError" in run.error and 'SCALE = {"x": 2}["y"]' in run.error
