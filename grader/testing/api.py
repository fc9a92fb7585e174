"""What hidden tests import: a pytest plugin for grading autograd exercises.

A hidden test is an ordinary pytest test that asks for the ``student``
fixture and checks what comes back::

    import torch
    from grader.testing import points, visible, expect_close, Mistake

    @visible
    @points(2)
    def test_gradient_lands_in_x_grad(student):
        x = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
        call = student.call("grad_2xtx", x)
        expect_close(call.args[0].grad, 4 * x.detach(), what="x.grad",
                     mistakes=[Mistake(2 * x.detach(), "Only half: ...", "절반만: ...")])

``student.call`` runs a function of the submission inside the sandbox and
returns its value with the post-call state of every tensor argument
(:class:`TensorState`: data, grad, requires_grad, is_leaf, grad_fn).
``student.probe`` runs a function of the exercise's probes.py the same way.
The report shows a visible test's message in full; of a hidden test only its
name, points and hint. Tests run seeded, so a submission always gets the same
report.
"""

from __future__ import annotations

import dis
import functools
import hashlib
import random
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import pytest
import torch

from grader.inside.wire import TensorState
from grader.testing.evidence import assigns_grad, empty_grad_hint, why_grad_is_empty
from grader.testing.feedback import Feedback, Hint, StudentError, Text, _

__all__ = [
    "points", "visible", "hint", "Hint", "Text", "Mistake", "Feedback", "StudentError", "Call",
    "expect_close", "expect_true", "hints_for_errors", "describe", "TensorState", "gradcheck_from_values",
    "expect_gradient", "expect_no_hand_made_grad", "expect_leaf", "mean_for_sum",
]


def points(n: float):
    """How many points a test is worth (default 1)."""
    return pytest.mark.points(n)


visible = pytest.mark.visible
"""A visible test: its full message is shown to the student."""


def hint(en: Text | str, ko: str | None = None):
    """The hint shown when this test fails and no more specific one was found."""
    text = Text.of(en, ko)
    return pytest.mark.hint(en=text.en, ko=text.ko)


@dataclass(frozen=True)
class Mistake:
    """A known wrong value, and the misconception that produces it: ``Mistake(value,
    "English", "한국어")`` or ``Mistake(value, Text(...))``."""

    value: Any  # a tensor, or a callable taking the actual value and returning True
    en: Text | str
    ko: str | None = None
    # A mistake every exercise may meet (mean_for_sum): where one of the exercise's own
    # mistakes gives the same value, the hint names both rather than either alone.
    general: bool = False

    @property
    def hint(self) -> Text:
        return Text.of(self.en, self.ko)

    def matches(self, actual: torch.Tensor, rtol: float, atol: float) -> bool:
        if callable(self.value):
            return bool(self.value(actual))
        expected = torch.as_tensor(self.value).to(actual.dtype) if actual.is_floating_point() else \
            torch.as_tensor(self.value)
        return expected.shape == actual.shape and bool(
            torch.allclose(actual.double(), expected.double(), rtol=rtol, atol=atol, equal_nan=False))


@dataclass
class Call:
    """One finished call: the return value and the tensor arguments as the call left them."""

    value: Any
    args: list
    kwargs: dict
    output: str = ""


class Student:
    """The submission, as the hidden tests see it: only through calls into the sandbox."""

    def __init__(self, channel):
        self._channel = channel
        self.last_calls: dict[str, Call] = {}  # each function's latest call, for checks that name it

    @property
    def device(self) -> str:
        """Where the submission runs ("cpu" or "cuda"), as the grader decided it. Set a
        tolerance from this, never from a device the sandbox reports: that is the
        submission's to forge."""
        return self._channel.device

    def call(self, function: str, *args, **kwargs) -> Call:
        return self._run("submission", function, args, kwargs)

    @property
    def source(self) -> str:
        """The submission's text: data to parse for evidence, never to run here."""
        return getattr(self._channel, "files", {}).get("submission.py", "")

    def probe(self, function: str, *args, for_function: str | None = None, **kwargs) -> Call:
        """Run a function of the exercise's probes.py (it may drive the student's code).

        ``for_function`` names what the student wrote (``"Softplus"``), so that an error
        is reported against it rather than against the probe the student never saw; every
        probe call should give it (tests/test_true_hints.py holds the exercises to that).
        Without it, an error names the student's function the traceback reached, if any.
        """
        return self._run("probes", function, args, kwargs, for_function)

    def _run(self, module, function, args, kwargs, shown_as=None) -> Call:
        outcome = self._channel.call(module, function, list(args), dict(kwargs))
        if module == "probes" and shown_as is None:
            # A probe is the grader's own helper, never named to the student: an error is
            # said of the student's function it reached (the outermost frame of theirs), or
            # of no function at all.
            frames = outcome.error.traceback if outcome.kind != "ok" and outcome.error is not None else []
            shown_as = frames[0][1] if frames and frames[0][1] != "<module>" else None
            if outcome.kind != "ok":
                raise StudentError(outcome.kind, shown_as, outcome.said(), outcome.error)
        if outcome.kind != "ok":
            raise StudentError(outcome.kind, shown_as or function, outcome.said(), outcome.error)
        call = Call(returned(outcome.value, shown_as or function), outcome.args, outcome.kwargs, outcome.output)
        if module == "submission":
            self.last_calls[function] = call
        _this_test["calls"].append((shown_as or function, call))
        return call


# ------------------------------------------------------------------ what the student's code returned

def returned(value: Any, function: str) -> Any:
    """A value the student's code returned (a probe's result included: the submission runs
    beside it and may change it), in containers that blame a part missing on that code: a
    hidden test reading ``result["plus"]`` or ``result[2]`` of a result without it fails as
    the student's mistake, with a plain message, not as the exercise's own error."""
    if isinstance(value, dict):
        return _ReturnedDict({k: returned(v, function) for k, v in value.items()}, function)
    if isinstance(value, list):
        return _ReturnedList([returned(v, function) for v in value], function)
    if isinstance(value, tuple):
        return _ReturnedTuple((returned(v, function) for v in value), function)
    return value


def _missing(function: str, whole: Any, part: Any) -> Feedback:
    return Feedback(_("{function}() returned {got}, which has no {part}").format(
        function=function, got=_described(whole), part=repr(part)[:60]))


@functools.lru_cache(maxsize=256)
def _instructions(code) -> dict:
    return {ins.offset: ins for ins in dis.get_instructions(code)}


def _instruction(code, offset: int):
    """The bytecode instruction at ``offset`` of a code object (what a frame is doing)."""
    try:
        return _instructions(code).get(offset)
    except (TypeError, ValueError):
        return None


def _check_unpacking(value, function: str, frame) -> None:
    """When the test's own line unpacks ``value`` (``g1, g2 = call.value``), the number
    of values must fit; else the student's code returned the wrong number of them."""
    ins = _instruction(frame.f_code, frame.f_lasti) if frame is not None else None
    if ins is None or ins.arg is None:
        return
    if ins.opname == "UNPACK_SEQUENCE" and len(value) != ins.arg:
        wanted = str(ins.arg)
    elif ins.opname == "UNPACK_EX" and len(value) < (ins.arg & 0xFF) + (ins.arg >> 8):
        n = (ins.arg & 0xFF) + (ins.arg >> 8)
        # Korean counts with its own word order ("최소 2개"): the message's own "개" follows.
        wanted = Text(f"at least {n}", f"최소 {n}")
    else:
        return
    raise Feedback(_("{function}() returned {got}: {count} values, where {wanted} are expected").format(
        function=function, got=_described(value), count=len(value), wanted=wanted))


class _ReturnedDict(dict):
    def __init__(self, items: dict = (), function: str = "your function"):
        super().__init__(items)
        self._function = function

    def __missing__(self, key):
        raise _missing(self._function, self, key)


class _ReturnedList(list):
    def __init__(self, items: list = (), function: str = "your function"):
        super().__init__(items)
        self._function = function

    def __iter__(self):
        _check_unpacking(self, self._function, sys._getframe(1))
        return super().__iter__()

    def __getitem__(self, index):
        try:
            return super().__getitem__(index)
        except (IndexError, TypeError):
            raise _missing(self._function, self, index) from None


class _ReturnedTuple(tuple):
    def __new__(cls, items=(), function: str = "your function"):
        made = super().__new__(cls, items)
        made._function = function
        return made

    def __iter__(self):
        _check_unpacking(self, self._function, sys._getframe(1))
        return super().__iter__()

    def __getitem__(self, index):
        try:
            return super().__getitem__(index)
        except (IndexError, TypeError):
            raise _missing(self._function, self, index) from None


# The interpreter's ways of reading a value: unpacking, indexing, an attribute, iterating.
_READING = frozenset({"UNPACK_SEQUENCE", "UNPACK_EX", "BINARY_SUBSCR", "LOAD_ATTR", "LOAD_METHOD",
                      "GET_ITER", "FOR_ITER"})


def misread(exc: BaseException | None, bundle: Path) -> Feedback | None:
    """The student's mistake behind an error a hidden test ran into while it read what the
    student's code returned, or None where the error is the exercise's own.

    The error is the student's when the interpreter raised it (a TypeError, ValueError or
    AttributeError) at a line of the exercise's own code (a file of ``bundle``) that reads a
    value (unpacking ``g1, g2 = call.value`` of None or a tensor, ``value["loss"]`` of a
    float, ``value.grad`` of a number), after the test called the student's code: the
    exercise's tests pass on its reference solution, so what differs is what this code
    returned. An AttributeError must name a value the student's code returned (its
    ``.obj``): a misspelt ``torch.tensr`` stays the exercise's error.
    """
    calls = _this_test["calls"]
    if not calls or isinstance(exc, Feedback) or not isinstance(exc, (TypeError, ValueError, AttributeError)):
        return None
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None or not _under(tb.tb_frame.f_code.co_filename, bundle):
        return None
    ins = _instruction(tb.tb_frame.f_code, tb.tb_lasti)
    if ins is None or not (ins.opname in _READING or ins.opname == "BINARY_OP" and ins.argrepr == "[]"):
        return None
    if isinstance(exc, AttributeError) and not any(getattr(exc, "obj", object()) is part
                                                   for _name, call in calls for part in _parts(call)):
        return None
    function, call = calls[-1]
    return Feedback(_("{function}() returned {got}, which is not what the test reads from it ({error})").format(
        function=function, got=_described(call.value), error=f"{type(exc).__name__}: {exc}"[:300]))


def _under(path: str, root: Path) -> bool:
    try:
        return Path(path).resolve().is_relative_to(Path(root).resolve())
    except (OSError, ValueError):
        return False


def _parts(call: "Call"):
    """Everything a call handed back: its value and arguments, all they hold, and each
    tensor's .grad."""
    stack = [call.value, *call.args, *call.kwargs.values()]
    while stack:
        part = stack.pop()
        yield part
        if isinstance(part, dict):
            stack.extend(part.values())
        elif isinstance(part, (list, tuple)):
            stack.extend(part)
        elif isinstance(part, TensorState):
            stack.append(part.grad)


# A hidden test that names a value's type (type(value).__name__) tells the student "list",
# as it would have without these containers.
for _container, _name in ((_ReturnedDict, "dict"), (_ReturnedList, "list"), (_ReturnedTuple, "tuple")):
    _container.__name__ = _container.__qualname__ = _name


# ------------------------------------------------------------------ checks

def _as_tensor(value: Any) -> torch.Tensor | None:
    if isinstance(value, TensorState):
        return value.data
    if isinstance(value, torch.Tensor):
        return value.detach()
    return None


def describe(value: Any, limit: int = 6) -> str:
    """A compact description: shape, dtype and a few elements."""
    t = _as_tensor(value)
    if t is None:
        kind = next(t.__name__ for t in type(value).__mro__ if t.__module__ == "builtins")  # dict, not ours
        return "None" if value is None else f"a {kind} ({str(value)[:60]})"
    flat = t.flatten()
    shown = ", ".join(f"{v:.4g}" if isinstance(v, float) else str(v) for v in flat[:limit].tolist())
    more = ", ..." if flat.numel() > limit else ""
    return f"shape {tuple(t.shape)}, {str(t.dtype).replace('torch.', '')}, [{shown}{more}]"


def _described(value: Any) -> Text:
    """:func:`describe` in each language: a tensor's shape and a value's kind said in Korean
    too (the dtype and the values are code)."""
    en = describe(value)
    if en.startswith("shape "):
        return Text(en, "모양 " + en[len("shape "):])
    return Text(en, en[len("a "):] if en.startswith("a ") else en)


def expect_close(actual: Any, expected: Any, *, what: str | Text | tuple[str, str], rtol: float = 1e-5,
                 atol: float = 1e-6, mistakes: Iterable[Mistake] = (), hint: Text | None = None, check_dtype: bool = False,
                 equal_nan: bool = False) -> None:
    """Fail with a self-explaining message unless ``actual`` is a tensor close to ``expected``.

    torch.testing's semantics: the tolerance scales with the expected value only, an
    infinity equals only the same infinity, and NaN equals NaN only where ``equal_nan``
    asks for it. When ``actual`` matches one of ``mistakes``, that mistake's hint names the
    misconception. ``what`` names the value, in English or as an (English, Korean) pair.
    """
    what = Text.of(what)
    exp = _as_tensor(expected)
    if exp is None:
        exp = torch.as_tensor(expected)
    act = _as_tensor(actual)
    if act is None:
        if actual is None:
            raise Feedback(_("{what} is None; expected {expected}").format(what=what, expected=_described(exp)), hint)
        raise Feedback(_("{what} should be a tensor, got {got}").format(what=what, got=_described(actual)), hint)
    if tuple(act.shape) != tuple(exp.shape):
        raise Feedback(_("{what} has shape {shape}; expected {expected}").format(
            what=what, shape=tuple(act.shape), expected=tuple(exp.shape)), _first_match(act, mistakes, rtol, atol) or hint)
    if check_dtype and act.dtype != exp.dtype:
        changed = act.dtype == torch.float32 and exp.dtype == torch.float64
        raise Feedback(_("{what} has dtype {dtype}; expected {expected}").format(
            what=what, dtype=act.dtype, expected=exp.dtype), hint or (DTYPE_FLOAT32 if changed else None))
    if act.is_complex() or exp.is_complex() or not act.dtype.is_floating_point and act.dtype != torch.bool:
        a, e = act.to(torch.complex128 if act.is_complex() else torch.float64), exp.to(
            torch.complex128 if act.is_complex() else torch.float64)
    else:
        a, e = act.double(), exp.double()
    if torch.allclose(a, e, rtol=rtol, atol=atol, equal_nan=equal_nan):
        return
    diff = (a - e).abs()
    finite = diff[torch.isfinite(diff)]
    worst = f"{finite.max().item():.3g}" if finite.numel() else "inf"
    raise Feedback(_("{what}: expected {expected}\n  got {got}\n  max abs difference {worst}").format(
        what=what, expected=_described(exp), got=_described(act), worst=worst), _first_match(act, mistakes, rtol, atol) or hint)


def _first_match(actual: torch.Tensor, mistakes: Iterable[Mistake], rtol, atol) -> Hint | None:
    """The hint of the first mistake whose value ``actual`` is; where a general mistake
    gives the same value as one of the exercise's own, both, said as what they are: two
    mistakes the value cannot tell apart."""
    found = []
    for mistake in mistakes:
        try:
            if mistake.matches(actual, rtol, atol):
                found.append(mistake)
        except (RuntimeError, TypeError, ValueError):
            continue
    own = [m for m in found if not m.general]
    general = [m for m in found if m.general]
    if own and general:
        return _("This value fits more than one mistake, and the values here cannot tell which:") + \
            Text("\n- ") + own[0].hint + Text("\n- ") + general[0].hint
    return found[0].hint if found else None


def mean_for_sum(expected: Any, n: int, *, name: str = "x") -> Mistake:
    """The value a ``.mean()`` gives where the statement asks for a ``.sum()`` over the
    ``n`` elements of ``name``: exactly ``expected / n``. It matches only for n >= 2 and an
    ``expected`` that is not all zeros (else the ratio says nothing)."""
    exp = _as_tensor(expected)
    exp = torch.as_tensor(expected) if exp is None else exp
    scaled = exp.double() / n if n >= 2 and bool(exp.ne(0).any()) else None

    def is_mean(actual: torch.Tensor) -> bool:
        return scaled is not None and tuple(actual.shape) == tuple(scaled.shape) and bool(
            torch.allclose(actual.double(), scaled, rtol=1e-5, atol=1e-7))

    text = _("This is exactly 1/{n} of the expected value, and {n} is the number of elements of {name}: "
             ".mean() divides by the number of elements where the statement asks for .sum(). "
             "Add the elements up with .sum().").format(n=n, name=name)
    return Mistake(is_mean, text, general=True)


# The dtype of what was handed in is the dtype expected back; a float32 result from a float64
# input was converted on the way.
DTYPE_FLOAT32 = _("The result is float32 although the input was float64: somewhere a float32 tensor was made "
                  "(torch.zeros, torch.ones or torch.tensor without dtype=, or .float()) and the values were "
                  "converted to it. Make new tensors with the input's dtype (dtype=x.dtype, torch.zeros_like(x)) "
                  "and do not convert.")


def gradcheck_from_values(plus: Iterable, minus: Iterable, rows: Iterable, *, eps: float,
                          atol: float = 1e-5, rtol: float = 1e-3) -> str | None:
    """What ``torch.autograd.gradcheck`` decides, decided here from data the sandbox returned
    (a gradcheck run in the sandbox is a verdict the submission can forge).

    ``plus[j]`` and ``minus[j]`` are the function's outputs at ``x ± eps`` in input element j;
    ``rows[i]`` is the gradient for x when the upstream gradient is 1 in output element i and
    0 elsewhere (row i of the Jacobian, from backward). The central differences of the
    outputs must match the rows within gradcheck's own tolerances. Returns why not, or None.
    """
    def data(values, what):
        out = []
        for v in values:
            t = _as_tensor(v)
            if t is None or t.dtype != torch.float64:
                raise Feedback(_("{what} should be float64 tensors; got {got}").format(what=what, got=_described(v)))
            out.append(t.reshape(-1))
        return out

    plus, minus, rows = data(plus, "the outputs"), data(minus, "the outputs"), data(rows, "the gradients")
    if not plus or len(plus) != len(minus) or not rows or any(t.shape != plus[0].shape for t in plus + minus) \
            or any(r.shape[0] != len(plus) for r in rows) or len(rows) != plus[0].shape[0]:
        return "the outputs and gradients do not have the shapes of a Jacobian"
    numerical = torch.stack([(p - m) / (2 * eps) for p, m in zip(plus, minus)], dim=1)  # outputs x inputs
    analytical = torch.stack(rows)
    # isclose, as gradcheck itself: an infinite or NaN difference quotient (the function's own
    # outputs, so the student's data) matches nothing finite, whatever the tolerance.
    close = torch.isclose(analytical, numerical, rtol=rtol, atol=atol)
    if bool(close.all()):
        return None
    i, j = (int(k) for k in (~close).nonzero()[0])
    return (f"Jacobian mismatch for output {i} with respect to input {j}: numerical "
            f"{numerical[i, j].item():.6g}, analytical {analytical[i, j].item():.6g}")


@contextmanager
def hints_for_errors(hints: dict[str, Hint]):
    """Name the misconception behind a known error of the student's code::

        with hints_for_errors({"backward through the graph a second time": RETAIN_GRAPH}):
            student.call("backward_twice", x)

    The first key found in the exception's type or message picks the hint.
    """
    try:
        yield
    except StudentError as err:
        text = f"{err.exception.type}: {err.exception.message}" if err.exception else str(err.detail)
        for needle, hint in hints.items():
            if needle in text:
                err.hint = hint
                break
        raise


def expect_gradient(grad: Any, expected: Any, *, what: str | Text | tuple[str, str], rerun, x: torch.Tensor, fix: tuple[str, str],
                    value: Any = None, name: str = "x", mistakes: Iterable[Mistake] = (),
                    check_dtype: bool = False, rtol: float = 1e-5, atol: float = 1e-6,
                    hint: Hint | None = None) -> None:
    """Like :func:`expect_close` for a gradient autograd must have stored (``x.grad``).

    When it is None, the hint says which of the look-alike ways of leaving it empty the
    submission took (by hand, torch.autograd.grad, backward on a copy), from evidence:
    ``value`` (what the call returned) and ``rerun(x2)``, the same call with ``x2`` in
    place of ``x`` (see grader.testing.evidence). ``fix`` (en, ko) is the exercise's way to do it.
    ``hint`` is for a gradient that is there but wrong and matches none of ``mistakes``.
    """
    what = Text.of(what)
    if grad is None:
        hint = empty_grad_hint(why_grad_is_empty(rerun, x, value, source=_graded.get("source", "")), fix, name)
        raise Feedback(_("{what} is None; expected {expected}").format(what=what, expected=_described(expected)), hint)
    expect_close(grad, expected, what=what, mistakes=mistakes, check_dtype=check_dtype, rtol=rtol, atol=atol,
                 hint=hint)


def expect_no_hand_made_grad(student: Student, function: str, name: str = "x", *, call: Call | None = None) -> None:
    """Fail when ``function`` stores a gradient of its own making into a ``.grad``.

    Decided from what the student sandbox saw autograd do (``TensorState.grad_origin`` of
    each tensor argument of ``call``, by default the test's latest call of ``function``):
    a .grad written by anything but autograd (assigned anywhere, in a helper too, or
    written in place), or filled by a backward() handed a gradient worked out by hand
    (``x.backward(4 * x)``), fails. Where the sandbox saw nothing (no call, or a tensor that
    was not a leaf requiring grad when passed), the source is read instead (as text, never
    run): an assignment to a .grad, or a write into one, in ``function``'s body.
    """
    call = call if call is not None else student.last_calls.get(function)
    seen = [s.grad_origin for s in _tensor_states(call) if s.grad is not None] if call is not None else []
    if "written" in seen:
        raise _hand_written(function, name)
    if "upstream" in seen:
        raise Feedback(_("{function}() hands backward() a gradient it worked out itself; the gradient must "
                         "come from backpropagating through what the function computes").format(function=function),
                       _("{name}.grad was filled by a backward() that started from {name} itself, or from an "
                         "output given a gradient of your own making (backward(gradient=...)), so autograd only "
                         "copied that gradient. Compute the output from {name} and call backward() on it with "
                         "no gradient argument.").format(name=name))
    if seen and all(origin == "backward" for origin in seen):
        return  # autograd left every one: the source's wording does not matter
    if assigns_grad(student.source, function):
        raise _hand_written(function, name)


def _hand_written(function: str, name: str) -> Feedback:
    return Feedback(_("{function}() writes a value into a .grad itself; the gradient must be left there by "
                      "backward()").format(function=function),
                    _("{name}.grad was assigned by hand ({name}.grad = ..., or written in place with add_, "
                      "copy_ and the like), not left there by backward(). Let backward() fill {name}.grad."
                      ).format(name=name))


def _tensor_states(call: Call) -> list[TensorState]:
    return [s for s in list(call.args) + list(call.kwargs.values()) if isinstance(s, TensorState)]


def expect_leaf(state: TensorState, name: str = "x", *, hint: Text | None = None) -> None:
    """Fail unless the tensor the student was given came back a leaf that requires grad:
    not replaced, detached, or switched off (the check most exercises make of their x)."""
    expect_true(state.is_leaf and state.requires_grad,
                _("{name} is no longer a leaf that requires grad").format(name=name),
                hint=hint or _("Do not replace or detach {name}; differentiate with respect to the {name} "
                               "you were given.").format(name=name))


def expect_true(condition: bool, message: Text | str, *, hint: Text | str | None = None,
                message_ko: str | None = None):
    """Fail with ``message`` (and ``hint``) unless ``condition`` holds. A message or hint is a
    Text, an (English, Korean) pair, or a string (English only; ``message_ko`` beside it)."""
    if not condition:
        raise Feedback(Text.of(message, message_ko), hint)


# ------------------------------------------------------------------ plugin

def pytest_configure(config):
    config.addinivalue_line("markers", "points(n): points a test is worth")
    config.addinivalue_line("markers", "visible: the student sees this test's full message")
    config.addinivalue_line("markers", "hint(en, ko): hint shown when this test fails")


# The submission under test: one per grade (each grade is a process of its own), for the
# checks that read its source as evidence without every test passing it along.
_graded: dict[str, str] = {}
# The calls the test now running made, for telling its errors apart (misread).
_this_test: dict[str, list] = {"calls": []}


@pytest.fixture
def student(_grader_channel) -> Student:
    graded = Student(_grader_channel)
    _graded["source"] = graded.source
    return graded


@pytest.fixture(autouse=True)
def _seeded(request):
    """Same seed for the same test, every time: reports are reproducible."""
    seed = int.from_bytes(hashlib.sha256(request.node.nodeid.encode()).digest()[:4], "big")
    # Only the CPU generator: tests build their data on the CPU, and torch.manual_seed
    # would also queue a (slow, stack-capturing) seed for every accelerator backend.
    torch.default_generator.manual_seed(seed)
    random.seed(seed)
    _this_test["calls"] = []
    yield
