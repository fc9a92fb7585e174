"""Where an input's ``.grad`` came from, as the call's own process saw it happen.

Some exercises ask for a gradient that ``backward()`` leaves in ``x.grad``, and a hidden
test wants to know that it was left there by autograd rather than written by the
submission. Neither the source (read as text) nor the value can say so: ``4 * x`` written
into ``x.grad`` from a helper function, through ``setattr`` or a patched ``Tensor.grad``
looks like autograd's ``4 * x`` in every digit. So the call's process watches autograd at
work. Before the submission is imported, each input that is a leaf requiring grad gets two
hooks of autograd's own: one that runs just before autograd adds a gradient into its
``.grad`` and one just after. Every ``backward()`` records, while it runs, where it started
(its roots) and the gradients it started from. The encoder then reports, for each watched
input whose ``.grad`` is not None, one of:

``backward``
    every value in ``.grad`` was added there by autograd, each time through a graph that
    computed something from the input, starting from the implicit gradient 1 (or ones
    given explicitly), and nothing wrote into ``.grad`` since, nor before, except clearing
    it (``None`` or zeros).
``upstream``
    autograd put it there, but from a gradient handed to ``backward()``: the input itself
    was a root (``x.backward(4 * x)`` only copies the gradient it is given), or a root's
    gradient was not ones (``y.backward(v)``), or a backward ran past
    ``torch.autograd.backward`` where this module could not see how it began.
``written``
    something other than autograd put values there: assigned, written in place (``add_``,
    ``copy_``, indexing, ``.data``), or autograd never accumulated into it at all.

Beside the origin, :func:`passes` tells which graph each backward pass whose gradient
``.grad`` now holds came through: ``(0, 0)`` for one graph backpropagated twice (one
``y``, ``retain_graph=True``), ``(0, 1)`` for two graphs (a ``y`` computed again), ``(0,)``
for a single pass. A graph is known by the node its backward() started from (the root's
``grad_fn``), marked in that node's own metadata when first seen: however many operations
built it, one ``y`` is one graph, and however it is backpropagated (``y.backward()``,
``torch.autograd.backward(y)``), a rebuilt ``y`` is another.

What this can and cannot establish. It establishes that the values came out of
autograd's accumulation, and that the gradient flowing into the input was produced by
backpropagating through operations on it, not handed to it. It does not establish which
function those operations computed: ``(x * c).sum().backward()`` with ``c`` worked out by
hand builds a real graph from ``x`` whose gradient is ``c``; only the operations
themselves could tell it from ``2 * x @ x``. The hidden tests' value checks are what hold
the function to the exercise. And the evidence is as strong as the rest of what the
sandbox sends: a submission that takes over its process (rewrites this module or the
encoder, or writes the result pipe itself) can forge any fact about a tensor, values
included. What it closes are the ways ordinary torch offers: a gradient assigned anywhere,
written in place, handed to ``backward()``, or answered by a patched ``Tensor.grad``
(reads here go through torch's C-level attributes, which no submission can replace).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.autograd
import torch.autograd.graph
import torch.utils.hooks

BACKWARD, UPSTREAM, WRITTEN = "backward", "upstream", "written"
ORIGINS = (BACKWARD, UPSTREAM, WRITTEN)

# torch's C-level attributes and methods, taken before any submission runs: a submission
# may replace what ``torch.Tensor`` and ``torch`` show (Tensor.grad as a property, say),
# never these (TensorBase is an immutable type).
_Base = torch._C.TensorBase
grad_of = _Base.grad.__get__
_version = _Base._version.__get__
_is_leaf = _Base.is_leaf.__get__
_grad_fn = _Base.grad_fn.__get__
_requires_grad = _Base.requires_grad.__get__
_shape, _dtype, _device = _Base.shape.__get__, _Base.dtype.__get__, _Base.device.__get__
_register_hook = torch.Tensor.register_hook
_register_after = torch.Tensor.register_post_accumulate_grad_hook
_NO_TORCH_FUNCTION = torch._C.DisableTorchFunction


class _Record:
    """What autograd did to one watched input's .grad."""

    __slots__ = ("tensor", "left", "version", "values", "taint", "pending", "expected", "broken", "passes",
                 "graph")

    def __init__(self, tensor: torch.Tensor) -> None:
        self.tensor = tensor
        self.left = None      # the .grad tensor as autograd last left it
        self.version = -1     # its version counter then
        self.values = None    # a copy of its values then
        self.taint = None     # UPSTREAM or WRITTEN, once seen
        self.pending = _UNSEEN  # what the hook before an accumulation found
        self.expected = None  # what .grad must hold after it: what was there plus the gradient
        self.broken = False   # our own hook failed: no evidence either way
        self.passes = []      # the graph of each pass whose gradient .grad now holds
        self.graph = None     # the graph of the pass under way (the hook before it found it)


_UNSEEN = object()
_GRAPH = "_witness_graph"  # the key in a root node's metadata: the number given to its graph
_graph_count = [0]
MAX_PASSES = 64
_watched: dict[int, _Record] = {}
# (roots, gradients) of each backward() under way; read by the hooks, from any thread
# (on a GPU autograd runs a leaf's accumulation on a thread of its own).
_running: list[tuple[Any, Any]] = []


def install() -> None:
    """Once, in the warm process: make every backward() record how it began.

    ``torch.autograd.backward`` (and so ``Tensor.backward``) and ``torch.autograd.grad``
    start the engine through ``_engine_run_backward``, looked up in both modules (torch
    patches it the same way for its own tracing)."""
    original = torch.autograd.graph._engine_run_backward
    if getattr(original, "_witnessed", False):
        return

    def _engine_run_backward(t_outputs, *args, **kwargs):
        accumulates = kwargs.get("accumulate_grad", True)
        entry = (t_outputs, args[0] if args else kwargs.get("grad_tensors"))
        if accumulates:
            _running.append(entry)
        try:
            return original(t_outputs, *args, **kwargs)
        finally:
            if accumulates:
                try:
                    _running.remove(entry)
                except ValueError:
                    pass

    _engine_run_backward._witnessed = True
    torch.autograd.graph._engine_run_backward = _engine_run_backward
    torch.autograd._engine_run_backward = _engine_run_backward


def watch(value: Any) -> None:
    """Watch every tensor in ``value`` (the call's arguments) that is a leaf requiring
    grad. Called before the submission is imported, so that nothing it does at import
    (replacing Tensor.register_hook, say) reaches the hooks."""
    if isinstance(value, torch.Tensor):
        if _is_leaf(value) and _requires_grad(value) and id(value) not in _watched:
            record = _watched[id(value)] = _Record(value)
            _register_hook(value, _before(record))
            _register_after(value, _after(record))
    elif isinstance(value, (list, tuple)):
        for item in value:
            watch(item)
    elif isinstance(value, dict):
        for item in value.values():
            watch(item)


def origin(tensor: torch.Tensor) -> str | None:
    """``backward``, ``upstream`` or ``written`` for a watched input whose .grad is not
    None; None for any other tensor, or where our own hook failed."""
    record = _watched.get(id(tensor))
    if record is None or record.tensor is not tensor or record.broken:
        return None
    grad = grad_of(tensor)
    if grad is None:
        return None
    try:
        if record.left is None or not _as_left(record, grad):
            return WRITTEN
    except Exception:  # noqa: BLE001 - a comparison we could not make: no evidence
        return None
    return record.taint or BACKWARD


def _as_left(record: _Record, grad: torch.Tensor) -> bool:
    """``grad`` is the tensor autograd left, unchanged: the same object, the same version
    (in-place writes count up), the same values (writes through .data or NumPy do not)."""
    return grad is record.left and _version(grad) == record.version and _same(grad, record.values)


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    with _NO_TORCH_FUNCTION():
        if _shape(a) != _shape(b) or _dtype(a) != _dtype(b) or _device(a) != _device(b):
            return False
        if _Base.equal(a, b):
            return True
        if not _Base.is_floating_point(a) and not _Base.is_complex(a):
            return False
        # NaN is not equal to itself; a gradient may hold NaN.
        return _Base.equal(_Base.isnan(a), _Base.isnan(b)) and _Base.equal(
            _Base.nan_to_num(a, 0.0, float("inf"), float("-inf")), _Base.nan_to_num(b, 0.0, float("inf"), float("-inf")))


def _cleared(grad: torch.Tensor) -> bool:
    with _NO_TORCH_FUNCTION():
        return not _Base.item(_Base.any(_Base.ne(grad, 0)))


def _ones(gradient: Any) -> bool:
    if gradient is None:
        return True
    if not isinstance(gradient, torch.Tensor):
        return False
    with _NO_TORCH_FUNCTION():
        return not _Base.item(_Base.any(_Base.ne(gradient, 1)))


def passes(tensor: torch.Tensor) -> tuple[int, ...] | None:
    """The graphs of the backward passes whose gradients a watched input's .grad holds, in
    order, numbered by first appearance (``(0, 0)``: one graph, twice); a graph not seen
    (the engine started past torch.autograd.backward) is -1. None where .grad is None, was
    written by anything but autograd, or our hook failed: no evidence."""
    record = _watched.get(id(tensor))
    if record is None or record.tensor is not tensor or record.broken or not record.passes:
        return None
    if origin(tensor) not in (BACKWARD, UPSTREAM):
        return None
    numbers: dict[int, int] = {}
    return tuple(-1 if g is None else numbers.setdefault(g, len(numbers)) for g in record.passes[:MAX_PASSES])


def _graph() -> int | None:
    """The graph of the backward() under way (the latest, where several are), by its first
    root's node; None where none was seen."""
    running = list(_running)
    if not running:
        return None
    roots = running[-1][0]
    roots = tuple(roots) if isinstance(roots, (tuple, list)) else (roots,)
    if not roots:
        return None
    root = roots[0]
    if isinstance(root, torch.autograd.graph.GradientEdge):
        node = root.node
    elif isinstance(root, torch.Tensor):
        node = _grad_fn(root)
    else:
        node = None
    if node is None:
        return None
    metadata = node.metadata
    number = metadata.get(_GRAPH)
    if type(number) is not int:
        number = metadata[_GRAPH] = _graph_count[0]
        _graph_count[0] += 1
    return number


def _is_root(tensor: torch.Tensor, root: Any) -> bool:
    """``root`` is ``tensor`` itself or the edge into a leaf's accumulator: the gradient
    given for it goes straight into a .grad."""
    if root is tensor:
        return True
    node = getattr(root, "node", None) if isinstance(root, torch.autograd.graph.GradientEdge) else None
    return node is not None and "AccumulateGrad" in node.name()


def _upstream(tensor: torch.Tensor) -> bool:
    """Whether the accumulation under way may carry a gradient handed to backward()."""
    running = list(_running)
    if not running:
        return True  # the engine was started past torch.autograd.backward: how, we did not see
    for roots, gradients in running:
        roots = tuple(roots) if isinstance(roots, (tuple, list)) else (roots,)
        gradients = tuple(gradients) if isinstance(gradients, (tuple, list)) else (gradients,) * len(roots)
        for i, root in enumerate(roots):
            if _is_root(tensor, root) or not _ones(gradients[i] if i < len(gradients) else None):
                return True
    return False


def _before(record: _Record):
    @torch.utils.hooks.unserializable_hook
    def before_accumulating(gradient):
        # Runs before autograd adds ``gradient`` into .grad (and also for
        # torch.autograd.grad, which adds nothing: then no hook after follows, and the next
        # accumulation finds afresh), and before any hook the submission registered. What
        # is in .grad now must be autograd's own, or cleared; and what .grad holds after
        # must be that plus this gradient (a hook of the submission's that replaced or
        # changed it in between put a gradient of its own making there).
        try:
            current = grad_of(record.tensor)
            clean = current is None or (record.left is not None and _as_left(record, current)) or _cleared(current)
            record.pending = WRITTEN if not clean else UPSTREAM if _upstream(record.tensor) else None
            if current is None or (clean and not (record.left is not None and _as_left(record, current))):
                record.passes = []  # cleared: what .grad will hold starts with this pass
            record.graph = _graph()
            with _NO_TORCH_FUNCTION():
                gradient = _Base.detach(gradient)
                record.expected = _Base.clone(gradient) if current is None else _Base.add(_Base.detach(current), gradient)
        except Exception:  # noqa: BLE001 - never break the student's backward(); no evidence
            record.broken = True
        return None

    return before_accumulating


def _after(record: _Record):
    @torch.utils.hooks.unserializable_hook
    def after_accumulating(tensor):
        try:
            found, record.pending = record.pending, _UNSEEN
            expected, record.expected = record.expected, None
            grad = grad_of(record.tensor)
            # No hook before it (removed by the submission): what was there is unknown.
            if found is _UNSEEN or expected is None or not _same(grad, expected):
                found = WRITTEN
            if found == WRITTEN or found == UPSTREAM and record.taint is None:
                record.taint = found
            graph, record.graph = record.graph, None
            if len(record.passes) < MAX_PASSES:
                record.passes.append(graph)
            with _NO_TORCH_FUNCTION():
                record.left, record.version = grad, _version(grad)
                record.values = _Base.clone(_Base.detach(grad))
        except Exception:  # noqa: BLE001 - never break the student's backward(); no evidence
            record.broken = True

    return after_accumulating
