"""Evidence that tells look-alike mistakes apart, for hints that name the right one.

Hidden tests import these through ``grader.testing``. Every fact here is computed in
the exercise sandbox, outside the student's, from data: the values and autograd facts a call sent back, the
outcome of a diagnostic call with a changed input, or the submission's source as text
(parsed, never run). None of it is a fact the student sandbox computed about itself.

The ``x.grad is None but the values are right`` family has four members that leave the
same x.grad behind; they differ in what else they leave::

    what the student did                    returned value      x without grad   integer x
    formula applied to x (4 * x)            carries grad_fn     -                -
    torch.autograd.grad(y, x)               plain               raises *         -
    backward() on a detached copy / leaf    plain               runs             raises **
    formula on detached values              plain               runs             runs

    *  "does not require grad"          ** "can require gradients" (only float tensors can)

Where the evidence does not separate them, the hint says which ones it may be.
"""

from __future__ import annotations

import ast
from typing import Any, Callable

import torch

from grader.inside.wire import TensorState
from grader.testing.feedback import StudentError, Text, _

BY_HAND, AUTOGRAD_GRAD, COPY, HAND_OR_COPY, UNKNOWN, LIBRARY = (
    "by_hand", "autograd_grad", "copy", "by_hand_or_copy", "unknown", "library")


def _carries_graph(value: Any) -> bool:
    if isinstance(value, TensorState):
        return bool(value.grad_fn)
    if isinstance(value, (list, tuple)):
        return any(_carries_graph(v) for v in value)
    if isinstance(value, dict):
        return any(_carries_graph(v) for v in value.values())
    return False


def _error_text(err) -> str:
    exc = getattr(err, "exception", None)
    return f"{exc.type}: {exc.message}" if exc is not None else str(getattr(err, "detail", ""))


def why_grad_is_empty(rerun: Callable[[torch.Tensor], Any], x: torch.Tensor, value: Any = None,
                      source: str = "") -> str:
    """Which member of the empty-gradient family the submission is, from evidence.

    ``rerun(x2)`` calls the student's code again as the test did, with ``x2`` in place of
    ``x``, and returns the Call (or raises the StudentError). ``value`` is what the
    original call returned. Costs at most two calls, made only when a test already fails.
    ``source`` (the submission's text, parsed, never run) tells a copy made by
    torch.autograd.functional or torch.func from one the student made.
    """
    if _carries_graph(value):
        return BY_HAND
    try:
        again = rerun(x.detach().clone())
    except StudentError as err:
        return AUTOGRAD_GRAD if "does not require grad" in _error_text(err) else UNKNOWN
    if _switched_on(again):
        # The code made the x it was given require grad (x.requires_grad_()) and still left
        # its .grad empty: no copy was needed for that, so a copy is not what the evidence
        # shows. torch.autograd.grad, where the source calls it; else any of the family.
        return AUTOGRAD_GRAD if calls_autograd_grad(source) else UNKNOWN
    try:
        rerun(x.detach().round().to(torch.int64))
    except StudentError as err:
        kind = COPY if "can require gradients" in _error_text(err) else HAND_OR_COPY
        return LIBRARY if uses_derivative_library(source) else kind
    return BY_HAND


def _switched_on(call: Any) -> bool:
    """Whether a call given an x that does not require grad handed it back as a leaf that
    does, with no .grad: the code switched requires_grad on in the x itself."""
    args = list(getattr(call, "args", []) or []) + list((getattr(call, "kwargs", {}) or {}).values())
    return any(isinstance(a, TensorState) and a.requires_grad and a.is_leaf and a.grad is None for a in args)


def calls_autograd_grad(source: str) -> bool:
    """Whether the source, read as text, calls torch.autograd.grad (by that name, as
    autograd.grad, or imported: ``from torch.autograd import grad``)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return False
    imported = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                and n.module == "torch.autograd" for a in n.names if a.name == "grad"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = _dotted(node.func)
            if name in ("torch.autograd.grad", "autograd.grad") or name in imported:
                return True
    return False


_SENTENCES = {
    BY_HAND: _("{x}.grad is empty: the gradient was worked out by hand "
               "(a formula), so autograd never stored it."),
    AUTOGRAD_GRAD: _("{x}.grad is empty: torch.autograd.grad returns the "
                     "gradients without storing them in {x}.grad."),
    COPY: _("{x}.grad is empty: backward() ran on a copy of {x} (a "
            "detached copy or a fresh leaf made from its values), so the gradient landed in the copy's "
            ".grad, not in the {x} you were given."),
    HAND_OR_COPY: _("{x}.grad is empty: either the gradient was worked out "
                    "by hand, or backward() ran on a copy of {x} (a detached copy or a fresh leaf) instead "
                    "of the {x} you were given."),
    LIBRARY: _("{x}.grad is empty: torch.autograd.functional (or torch.func) differentiates its own copy "
               "of {x} and returns the result; it never stores a gradient in {x}.grad."),
    UNKNOWN: _("{x}.grad is empty: the gradient was worked out by hand, "
               "taken with torch.autograd.grad (which does not store it), or backward() ran on a copy of "
               "{x} instead of the {x} you were given."),
}


def empty_grad_hint(kind: str, fix, name: str = "x") -> Text:
    """The one wording of the family's hints: what happened, then the exercise's fix (a
    Text or an (English, Korean) pair)."""
    return _SENTENCES[kind].format(x=name) + " " + Text.of(fix)


# ------------------------------------------------------------------ the source, as text

def _function(source: str, name: str) -> ast.FunctionDef | None:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return None
    found = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name]
    return found[0] if found else None


_LIBRARIES = ("torch.autograd.functional", "torch.func", "functorch")


def uses_derivative_library(source: str) -> bool:
    """Whether the source reaches for torch's ready-made derivatives (jacobian, vjp, jacrev...)
    by name: ``torch.autograd.functional.jacobian``, ``from torch.func import vjp`` and the like."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            named = [f"{node.module}.{a.name}" for a in node.names] + [node.module or ""]
        elif isinstance(node, ast.Import):
            named = [a.name for a in node.names]
        elif isinstance(node, ast.Attribute):
            named = [_dotted(node)]
        else:
            continue
        if any(n == lib or n.startswith(lib + ".") for n in named for lib in _LIBRARIES):
            return True
    return False


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def assigns_grad(source: str, function: str) -> bool:
    """Whether ``function`` stores a value of its own into some ``.grad``: by assignment
    (``x.grad = 6 * x ** 2``, ``setattr(x, "grad", ...)``, ``x.grad += ...``, ``x.grad[0] = ...``)
    or in place (``x.grad.add_(...)``, ``.copy_``, ``.mul_`` and every other method whose
    name ends in ``_``), directly or through a name bound to it (``g = x.grad; g.copy_(...)``).

    Clearing (``= None``) and resetting to zeros (``torch.zeros_like``, ``.zero_()``,
    ``.fill_(0)``) are not gradients made by hand, so they do not count.
    """
    fn = _function(source, function)
    if fn is None:
        return False
    # Names bound to a .grad and to nothing else (g = x.grad): what is written through them
    # is written into it. A name bound to something else too may no longer be the gradient.
    bound: dict[str, bool] = {}
    for node in ast.walk(fn):
        for target, value in _bindings(node):
            for name, whole in _bound_names(target):
                bound[name] = bound.get(name, True) and whole and _is_grad(value)
    aliases = {name for name, only_grad in bound.items() if only_grad}

    def grad_like(node) -> bool:
        if isinstance(node, ast.Attribute) and node.attr == "data":
            node = node.value  # x.grad.data is the same storage
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr.endswith("_"):
            return grad_like(node.func.value)  # x.grad.mul_(0).add_(...): an in-place method returns its tensor
        return _is_grad(node) or isinstance(node, ast.Name) and node.id in aliases

    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and _called_name(node) == "setattr" and len(node.args) == 3 \
                and isinstance(node.args[1], ast.Constant) and node.args[1].value == "grad":
            return True  # setattr(x, "grad", ...): the same assignment, spelled out
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and grad_like(node.func.value) \
                and node.func.attr.endswith("_") and not _resets(node):
            return True  # x.grad.add_(...): written in place
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, (ast.AugAssign, ast.AnnAssign)) else []
        value = getattr(node, "value", None)
        for target in targets:
            if isinstance(target, ast.Subscript) and grad_like(target.value):
                return True  # x.grad[0] = ...
            if isinstance(node, ast.AugAssign) and isinstance(target, ast.Name) and target.id in aliases:
                return True  # g += ...: in place, into the gradient
            if not (isinstance(target, ast.Attribute) and (target.attr == "grad" or target.attr == "data"
                                                            and _is_grad(target.value))):
                continue
            if isinstance(value, ast.Constant) and value.value is None:
                continue
            if isinstance(value, ast.Call) and _called_name(value) in ("zeros_like", "zeros"):
                continue
            return True
    return False


def _bindings(node) -> list[tuple[ast.expr, ast.expr | None]]:
    """(target, value) for each name-binding a node makes; the value None where the target
    takes something other than one expression's value (a loop's items, a with's resource)."""
    if isinstance(node, ast.Assign):
        return [(target, node.value) for target in node.targets]
    if isinstance(node, (ast.AnnAssign, ast.NamedExpr)):
        return [(node.target, node.value)]
    if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
        return [(node.target, None)]
    if isinstance(node, (ast.With, ast.AsyncWith)):
        return [(item.optional_vars, None) for item in node.items if item.optional_vars is not None]
    return []


def _bound_names(target, whole: bool = True):
    """The names an assignment target binds, each with whether it takes the whole value
    (``g = ...``) or a part of it (``g, h = ...``). ``g[0] = ...`` binds nothing."""
    if isinstance(target, ast.Name):
        yield target.id, whole
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _bound_names(element, False)
    elif isinstance(target, ast.Starred):
        yield from _bound_names(target.value, False)


def _is_grad(node) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "grad"


def _resets(call: ast.Call) -> bool:
    """x.grad.zero_(), x.grad.fill_(0) or x.grad.mul_(0): clearing, not a gradient."""
    if call.func.attr == "zero_":
        return True
    return call.func.attr in ("fill_", "mul_") and len(call.args) == 1 and not call.keywords \
        and isinstance(call.args[0], ast.Constant) and call.args[0].value == 0


def _called_name(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def calls_method(source: str, function: str | None, method: str) -> bool:
    """Whether ``function`` (None: any code of the source), read as text, calls a method
    named ``method`` (``y.detach_()``)."""
    if function is None:
        try:
            fn = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError):
            return False
    else:
        fn = _function(source, function)
    return fn is not None and any(
        isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == method
        for node in ast.walk(fn))


def rebuilds_graph(source: str, function: str) -> bool:
    """Whether ``function``, read as text, builds the output it backpropagates again.

    The fallback where the student sandbox saw no backward pass (``TensorState.grad_passes``
    is the evidence that decides; this reads what the code says). True when a name that
    ``backward()`` is called on (``y.backward()``, ``torch.autograd.backward(y)``,
    ``backward([y])``) is assigned again after such a call, or is both assigned and
    backpropagated inside one loop; or when ``backward()`` is called, twice or in a loop, on
    an expression computed in place (``(x ** 3).sum().backward()``). A ``y`` built by several
    assignments before its first backward() (``y = y + x[i] ** 3`` in a loop) is built once.
    """
    fn = _function(source, function)
    if fn is None:
        return False
    loops = [loop for loop in ast.walk(fn) if isinstance(loop, (ast.For, ast.While, ast.AsyncFor, ast.comprehension))]
    inside = [set(ast.walk(loop)) for loop in loops]

    def where(node) -> tuple[int, int]:
        return getattr(node, "lineno", 0), getattr(node, "col_offset", 0)

    calls: dict[str, list] = {}  # name -> the backward() calls on it
    inline = 0
    for node in ast.walk(fn):
        if not (isinstance(node, ast.Call) and _called_name(node) == "backward"):
            continue
        if isinstance(node.func, ast.Attribute) and _dotted(node.func.value) not in ("torch", "autograd",
                                                                                       "torch.autograd"):
            targets = [node.func.value]  # y.backward()
        else:  # torch.autograd.backward(y), backward([y1, y2]), backward(tensors=y)
            first = node.args[0] if node.args else next(
                (k.value for k in node.keywords if k.arg == "tensors"), None)
            targets = list(first.elts) if isinstance(first, (ast.List, ast.Tuple)) else [first] if first else []
        for target in targets:
            if isinstance(target, ast.Name):
                calls.setdefault(target.id, []).append(node)
            else:
                inline += 2 if any(node in nodes for nodes in inside) else 1
    if inline >= 2:
        return True
    for name, backwards in calls.items():
        stores = [n for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)]
        first = min(where(b) for b in backwards)
        if any(where(s) > first for s in stores):
            return True
        if any(any(s in nodes for s in stores) and any(b in nodes for b in backwards) for nodes in inside):
            return True
    return False
