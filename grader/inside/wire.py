"""The data that crosses the sandbox wall, and how it is framed.

A frame is two big-endian u32 lengths, a UTF-8 JSON header and a binary blob.
Values are JSON trees with tagged containers; tensor bytes live in the blob.
Decoding never executes anything: no pickle, only JSON and ``torch.frombuffer``
on a dtype from a fixed list, with every length and shape checked first.

Both sides import this module. The sandbox side is the student's to tamper
with, so everything the trusted side reads is validated here as if hostile.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import select
import struct
import sys
import time
from dataclasses import dataclass, field
from typing import Any

_PREFIX = struct.Struct(">II")
# An empty frame (no header, no blob): a process's word that it has sent its last frame.
END = _PREFIX.pack(0, 0)

# Each dtype the wire carries, and the bytes of one element of it.
_SIZES = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4, "int16": 2, "int8": 1,
          "uint8": 1, "bool": 1, "complex64": 8, "complex128": 16}
_DTYPES = tuple(_SIZES)

MAX_DEPTH = 24
MAX_NODES = 100_000
MAX_STRING = 1 << 20

# How a tensor's .grad came to be, where the student sandbox saw it (see witness.py).
GRAD_ORIGINS = ("backward", "upstream", "written")
MAX_PASSES = 64  # backward passes told apart per tensor (witness.passes)

_TORCH_NAMES = ("torch", "DTYPES", "_DTYPE_NAMES", "_Base", "_FACTS")


def load() -> None:
    """Import torch and make the tables that need it. Framing needs neither, and nor does
    the worker's relay (``decode(..., tensors=False)``, ``encode`` of :class:`Values`): it
    grades without torch. Decoding into tensors, and encoding where torch is imported,
    call this first."""
    global torch, DTYPES, _DTYPE_NAMES, _Base, _FACTS
    if "torch" in globals():
        return
    import torch as loaded

    DTYPES = {name: getattr(loaded, name) for name in _DTYPES}
    _DTYPE_NAMES = {dtype: name for name, dtype in DTYPES.items()}
    # A tensor's facts, read through torch's C-level attributes: a submission can replace what
    # ``torch.Tensor`` shows (Tensor.grad as a property answering a gradient of its own), never
    # these (TensorBase is an immutable type).
    _Base = loaded._C.TensorBase
    _FACTS = {name: getattr(_Base, name).__get__ for name in (
        "grad", "requires_grad", "is_leaf", "retains_grad", "grad_fn", "dtype", "shape", "device",
        "is_sparse", "layout")}
    torch = loaded  # last: whoever finds it here finds the tables made


def __getattr__(name: str) -> Any:
    if name in _TORCH_NAMES:
        load()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class WireError(Exception):
    """Data from the other side is malformed, too large or of a forbidden kind."""


@dataclass(frozen=True)
class Values:
    """A tensor's values as the worker holds them: its dtype's name, its shape, and its
    bytes as the wire lays them out. The worker checks and relays tensors it never computes
    with, so it decodes them to these (``decode(..., tensors=False)``) and imports no torch.
    ``raw`` is a read-only view of the frame they came in: relayed, they are never copied."""

    dtype: str
    shape: tuple[int, ...]
    raw: bytes | memoryview


@dataclass
class TensorState:
    """A tensor as the student's code left it: values (a torch.Tensor; :class:`Values` where
    the worker relays it) plus autograd facts."""

    data: "torch.Tensor | Values"
    requires_grad: bool = False
    is_leaf: bool = True
    grad_fn: str | None = None
    grad: "TensorState | None" = None
    device: str = "cpu"
    retains_grad: bool = False
    # For an argument of the call that was a leaf requiring grad, how its .grad came to be,
    # as the student sandbox saw it: "backward" (added by autograd, through a graph, from
    # an implicit gradient), "upstream" (by autograd, from a gradient handed to backward()),
    # "written" (by anything else); None where nothing was seen (no .grad, other tensors).
    grad_origin: str | None = None
    # For the same arguments, the graph each backward pass whose gradient .grad holds came
    # through, numbered by first appearance: (0, 0) one graph backpropagated twice, (0, 1)
    # two graphs, -1 a graph not seen; None where nothing was seen (see witness.passes).
    grad_passes: tuple[int, ...] | None = None

    @property
    def shape(self):
        return self.data.shape

    @property
    def dtype(self):
        return self.data.dtype

    def __repr__(self) -> str:
        if type(self.data) is Values:
            facts = [f"shape={self.data.shape}", f"dtype={self.data.dtype}"]
        else:
            load()
            facts = [f"shape={tuple(self.data.shape)}", f"dtype={_DTYPE_NAMES.get(self.data.dtype)}"]
        if self.requires_grad:
            facts.append("requires_grad")
        if self.grad_fn:
            facts.append(f"grad_fn={self.grad_fn}")
        return f"TensorState({', '.join(facts)})"


@dataclass
class StudentException:
    """An exception raised by student code, with only the student's frames."""

    type: str
    message: str
    traceback: list[tuple[int, str, str]] = field(default_factory=list)  # (line, function, text)

    def format(self, with_message: bool = True, head: str = "Traceback (your code only):") -> str:
        """As Python prints it; ``head``, the line above the frames, is the reader's language's."""
        lines = [f'  File "submission.py", line {ln}, in {fn}' + (f"\n    {text}" if text else "")
                 for ln, fn, text in self.traceback]
        head = head + "\n" if lines else ""
        last = f"{self.type}: {self.message}" if with_message and self.message else self.type
        return head + "\n".join(lines) + ("\n" if lines else "") + last


# ---------------------------------------------------------------- encoding

# Each tensor's extent of a blob starts at a multiple of this (the gap before it zeros), so
# that a decoder reading the blob into a buffer of its own can use the tensor in place:
# 16 bytes, the widest dtype's element, and what malloc aligns a buffer to.
ALIGN = 16
# A blob's pieces shorter than this are joined as they come: a value may hold 100,000 tensors,
# and a part each would make as many buffers to write. Longer ones are parts of their own.
JOIN_BELOW = 1 << 16


def encode(value: Any, *, states: bool = False, grad_origin=None, grad_passes=None) -> tuple[Any, bytes]:
    """Turn a value into (JSON-able tree, blob): :func:`encode_parts`, its parts joined."""
    tree, parts = encode_parts(value, states=states, grad_origin=grad_origin, grad_passes=grad_passes)
    return tree, b"".join(parts)


def encode_parts(value: Any, *, states: bool = False, grad_origin=None, grad_passes=None) -> tuple[Any, list]:
    """Turn a value into (JSON-able tree, blob as a list of buffers, to write unjoined: a
    contiguous CPU tensor of :data:`JOIN_BELOW` bytes or more is a view of its own memory, a
    relayed value's a view of the frame it came in; smaller pieces are joined). Raises
    WireError on the unencodable.

    ``states``: a :class:`TensorState` (a tensor as decoded, with its autograd facts) is
    encoded as it stands, so that the facts survive being passed on (the worker relays
    what the student sandbox returned to the exercise sandbox). Off where the value
    comes from student code, which has no business making one.
    ``grad_origin(tensor)``: the student sandbox's witness of how a tensor's .grad came to be;
    ``grad_passes(tensor)``: of the graphs its backward passes came through.

    Where this process has not imported torch, no value can be a tensor, and none is loaded
    here (a TensorState of :class:`Values`, relayed, needs none)."""
    loaded = "torch" in sys.modules
    if loaded:
        load()
    fact = _FACTS if loaded else None
    parts: list = []
    small = bytearray()  # the pieces since the last part of its own (JOIN_BELOW)
    offset = [0]

    def add(piece) -> None:
        nonlocal small
        if len(piece) < JOIN_BELOW:
            small += piece
            return
        if small:
            parts.append(small)
            small = bytearray()
        parts.append(piece)

    count = [0]

    def raw_bytes(values: torch.Tensor) -> memoryview:
        # A view of the tensor's own memory, not a copy: it is written to the pipe from there.
        # TensorBase's own methods, with no torch-function mode or override in the way:
        # what torch.Tensor shows (detach, say) is the submission's to replace.
        with torch._C.DisableTorchFunction():
            values = _Base.contiguous(_Base.to(_Base.detach(values), "cpu"))
            if fact["dtype"](values) == torch.bfloat16:
                values = _Base.view(values, torch.int16)
            return memoryview(_Base.numpy(values).reshape(-1).view("u1"))

    def node(raw: bytes, data: torch.Tensor | Values, facts: dict, grad) -> dict:
        if type(data) is Values:
            dtype, shape = data.dtype, list(data.shape)
        else:
            dtype, shape = _DTYPE_NAMES[fact["dtype"](data)], list(fact["shape"](data))
        gap = -offset[0] % ALIGN if len(raw) else 0
        if gap:
            add(bytes(gap))
            offset[0] += gap
        out = {"dtype": dtype, "shape": shape, "offset": offset[0], "nbytes": len(raw), **facts, "grad": grad}
        add(raw)
        offset[0] += len(raw)
        return {"tensor": out}

    def state(s: TensorState, depth: int):
        count[0] += 1
        if depth > MAX_DEPTH or count[0] > MAX_NODES:
            raise WireError("value is nested too deeply or has too many parts (a .grad counts as one)")
        grad = state(s.grad, depth + 1)["tensor"] if s.grad is not None else None
        facts = {"requires_grad": s.requires_grad, "is_leaf": s.is_leaf, "retains_grad": s.retains_grad,
                 "grad_fn": s.grad_fn, "device": s.device}
        if s.grad_origin is not None:
            facts["grad_origin"] = s.grad_origin
        if s.grad_passes is not None:
            facts["grad_passes"] = list(s.grad_passes)
        return node(s.data.raw if type(s.data) is Values else raw_bytes(s.data), s.data, facts, grad)

    def tensor(t: torch.Tensor, depth: int):
        count[0] += 1
        if depth > MAX_DEPTH or count[0] > MAX_NODES:
            raise WireError("value is nested too deeply or has too many parts (a .grad counts as one)")
        if type(t) not in (torch.Tensor, torch.nn.Parameter):
            raise WireError(f"a {type(t).__name__} (a torch.Tensor subclass) cannot be graded; "
                            "return a plain tensor")
        if fact["dtype"](t) not in _DTYPE_NAMES:
            raise WireError(f"tensors of dtype {fact['dtype'](t)} cannot be graded")
        if fact["is_sparse"](t) or fact["layout"](t) != torch.strided:
            raise WireError("sparse tensors cannot be graded; return a dense tensor")
        raw = raw_bytes(t)
        grad = None
        if fact["is_leaf"](t) or fact["retains_grad"](t):
            g = fact["grad"](t)
            if g is not None:
                grad = tensor(g, depth + 1)["tensor"]
        grad_fn = fact["grad_fn"](t)
        facts = {"requires_grad": bool(fact["requires_grad"](t)), "is_leaf": bool(fact["is_leaf"](t)),
                 "retains_grad": bool(fact["retains_grad"](t)),
                 "grad_fn": type(grad_fn).__name__ if grad_fn is not None else None,
                 "device": str(fact["device"](t))}
        seen = grad_origin(t) if grad_origin is not None and grad is not None else None
        if seen is not None:
            facts["grad_origin"] = seen
        passes = grad_passes(t) if grad_passes is not None and grad is not None else None
        if passes is not None:
            facts["grad_passes"] = [int(n) for n in passes][:MAX_PASSES]
        return node(raw, t, facts, grad)

    def walk(v: Any, depth: int):
        if loaded and isinstance(v, torch.Tensor):
            return tensor(v, depth)
        if states and type(v) is TensorState:
            return state(v, depth)
        count[0] += 1
        if depth > MAX_DEPTH or count[0] > MAX_NODES:
            raise WireError("value is nested too deeply or has too many parts")
        if v is None or type(v) in (bool, str):
            return v
        if type(v) is int:
            if not -(1 << 63) <= v < 1 << 63:  # int64, as decode accepts
                raise WireError("integer is too large")
            return v
        if type(v) is float:
            if math.isfinite(v):
                return v
            return {"float": repr(v)}  # inf, -inf, nan
        if type(v).__module__ == "numpy" and hasattr(v, "item") and getattr(v, "shape", None) == ():
            return walk(v.item(), depth)  # a NumPy scalar, e.g. from np.mean
        if type(v) is list:
            return {"list": [walk(x, depth + 1) for x in v]}
        if type(v) is tuple:
            return {"tuple": [walk(x, depth + 1) for x in v]}
        if type(v) is dict:
            items = []
            for k, x in v.items():
                if type(k) not in (str, int):
                    raise WireError("dictionary keys must be strings or integers")
                items.append([k, walk(x, depth + 1)])
            return {"dict": items}
        if loaded and type(v) in (torch.dtype, torch.device, torch.Size):
            return walk(str(v) if type(v) is not torch.Size else tuple(v), depth)
        raise WireError(f"a value of type {type(v).__name__} cannot be graded; return tensors, "
                        "numbers, strings, None, or lists, tuples and dicts of them")

    tree = walk(value, 0)
    if small:
        parts.append(small)
    return tree, parts


# ---------------------------------------------------------------- decoding

_INT64_MAX = (1 << 63) - 1


def decode(tree: Any, blob: bytes, *, max_elements: int = 1 << 28, tensors: bool = True) -> Any:
    """Rebuild a value from (tree, blob) made by :func:`encode`, validating everything.

    Bounded by construction, whatever the other side sends: the tensors' extents of
    the blob must be disjoint and in the order :func:`encode` writes them (a gradient's
    before its tensor's), so all the bytes copied add up to at most ``len(blob)``; a
    gradient is a node of the tree like any other, counted and at a depth; every shape
    fits int64. Any malformed input raises :class:`WireError`, never anything else.

    ``tensors=False``: each tensor's values are :class:`Values` (its bytes, checked the
    same), not a torch.Tensor, and torch is not loaded.

    Nothing is copied where it need not be: a tensor or :class:`Values` is a view of its
    extent of ``blob`` (read-only for Values), and so holds ``blob`` alive. A blob that is not
    writable, or an extent not aligned to its dtype, is copied.
    """
    if tensors:
        load()
    count = [0]
    cursor = [0]  # where the next extent may start
    view = memoryview(blob)

    def visit(depth: int) -> None:
        count[0] += 1
        if depth > MAX_DEPTH or count[0] > MAX_NODES:
            raise WireError("value is nested too deeply or has too many parts")

    def tensor(node: Any, depth: int) -> TensorState:
        visit(depth)
        if type(node) is not dict:
            raise WireError("malformed tensor")
        name, shape = node.get("dtype"), node.get("shape")
        offset, nbytes = node.get("offset"), node.get("nbytes")
        if type(name) is not str or name not in _SIZES:
            raise WireError("unknown tensor dtype")
        if type(shape) is not list or len(shape) > 16 or any(type(n) is not int or n < 0 for n in shape):
            raise WireError("malformed tensor shape")
        if math.prod(max(n, 1) for n in shape) > _INT64_MAX:
            raise WireError("tensor shape does not fit in 64 bits")
        if type(offset) is not int or type(nbytes) is not int or offset < 0 or nbytes < 0:
            raise WireError("malformed tensor extent")
        grad_fn, device = node.get("grad_fn"), node.get("device", "cpu")
        if grad_fn is not None and (type(grad_fn) is not str or len(grad_fn) > 200):
            raise WireError("malformed grad_fn")
        grad_origin = node.get("grad_origin")
        if grad_origin is not None and grad_origin not in GRAD_ORIGINS:
            raise WireError("malformed grad_origin")
        if type(device) is not str or len(device) > 32:
            raise WireError("malformed device")
        grad_passes = node.get("grad_passes")
        if grad_passes is not None:
            if type(grad_passes) is not list or len(grad_passes) > MAX_PASSES or any(
                    type(n) is not int or not -1 <= n < MAX_PASSES for n in grad_passes):
                raise WireError("malformed grad_passes")
            grad_passes = tuple(grad_passes)
        grad_node = node.get("grad")
        grad = tensor(grad_node, depth + 1) if grad_node is not None else None
        numel = math.prod(shape)
        if numel > max_elements:
            raise WireError("tensor is too large")
        if numel * _SIZES[name] != nbytes:
            raise WireError("tensor bytes do not match its shape")
        if offset < cursor[0] or offset + nbytes > len(blob):
            raise WireError("tensor bytes overlap another tensor's or lie outside the data")
        cursor[0] = offset + nbytes
        if not tensors:
            data = Values(name, tuple(shape), view[offset:offset + nbytes].toreadonly())
        elif nbytes:
            dtype = DTYPES[name]
            raw = view[offset:offset + nbytes]
            if raw.readonly:
                raw = bytearray(raw)  # torch would write where it must not
            data = (torch.frombuffer(raw, dtype=torch.int16).view(torch.bfloat16)
                    if dtype == torch.bfloat16 else torch.frombuffer(raw, dtype=dtype))
            if data.data_ptr() % _SIZES[name]:
                data = data.clone()  # a hand-made blob's odd offset: torch's kernels expect aligned elements
        else:
            data = torch.empty(0, dtype=DTYPES[name])
        return TensorState(
            data=data if not tensors else data.reshape(shape),
            requires_grad=node.get("requires_grad") is True,
            is_leaf=node.get("is_leaf") is not False,
            retains_grad=node.get("retains_grad") is True,
            grad_fn=grad_fn,
            grad=grad,
            device=device,
            grad_origin=grad_origin,
            grad_passes=grad_passes,
        )

    def walk(node: Any, depth: int) -> Any:
        if node is None or type(node) in (bool, int, float):
            visit(depth)
            if type(node) is int and not -_INT64_MAX - 1 <= node <= _INT64_MAX:
                raise WireError("integer is too large")
            return node
        if type(node) is str:
            visit(depth)
            if len(node) > MAX_STRING:
                raise WireError("string is too long")
            return node
        if type(node) is not dict or len(node) != 1:
            raise WireError("malformed value")
        (tag, body), = node.items()
        if tag == "tensor":
            return tensor(body, depth)
        visit(depth)
        if tag == "float" and type(body) is str and body in ("inf", "-inf", "nan"):
            return float(body)
        if tag in ("list", "tuple") and type(body) is list:
            items = [walk(x, depth + 1) for x in body]
            return items if tag == "list" else tuple(items)
        if tag == "dict" and type(body) is list:
            out = {}
            for item in body:
                if type(item) is not list or len(item) != 2 or type(item[0]) not in (str, int) \
                        or (type(item[0]) is int and not -_INT64_MAX - 1 <= item[0] <= _INT64_MAX) \
                        or (type(item[0]) is str and len(item[0]) > MAX_STRING):
                    raise WireError("malformed dictionary")
                out[item[0]] = walk(item[1], depth + 1)
            return out
        raise WireError(f"unknown value tag {tag!r}"[:80])

    return walk(tree, 0)


def to_sandbox(value: Any) -> Any:
    """Inverse of decode: each TensorState becomes a tensor again (other values stay); one
    of :class:`Values`, a fresh leaf of those values, to encode with ``states=True``."""
    if isinstance(value, TensorState) and type(value.data) is Values:
        return TensorState(data=value.data, requires_grad=value.requires_grad)
    if isinstance(value, TensorState):
        t = value.data.clone()
        if value.requires_grad:
            t.requires_grad_(True)
        return t
    if isinstance(value, list):
        return [to_sandbox(v) for v in value]
    if isinstance(value, tuple):
        return tuple(to_sandbox(v) for v in value)
    if isinstance(value, dict):
        return {k: to_sandbox(v) for k, v in value.items()}
    return value


# ---------------------------------------------------------------- framing

# What a pipe holds at once: the most an unprivileged process may ask (fs.pipe-max-size's
# default), not the kernel's 64 KiB. A tensor of 4 MiB then crosses a pipe in 4 handoffs
# between writer and reader rather than 64, each a wakeup of the other side.
PIPE_BYTES = 1 << 20


def widen(*fds: int) -> None:
    """Give each pipe ``PIPE_BYTES``; where the kernel refuses (a user past its pipes'
    share, say), it keeps its size and only the frames' speed differs."""
    for fd in fds:
        try:
            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        except OSError:
            pass


def frame_parts(header: dict, *parts) -> list:
    """A frame as a list of buffers (its blob is ``parts``, not joined), to write as it is
    or to carry, whole and unread, inside another frame's blob."""
    head = json.dumps(header, separators=(",", ":")).encode()
    return [_PREFIX.pack(len(head), sum(len(p) for p in parts)) + head, *parts]


def pack(header: dict, *parts) -> bytes:
    return b"".join(frame_parts(header, *parts))


def write_frame(fd: int, header: dict, *parts, deadline: float | None = None) -> None:
    """One frame whose blob is ``parts`` in order, written without joining them."""
    head = json.dumps(header, separators=(",", ":")).encode()
    write_all(fd, _PREFIX.pack(len(head), sum(len(p) for p in parts)), head, *parts, deadline=deadline)


def read_raw_frame(fd: int, *, max_header: int, max_blob: int, deadline: float | None = None) -> bytearray:
    """One whole frame, prefix included, as bytes never parsed (to pass on, then wipe)."""
    prefix = _read_exact(fd, _PREFIX.size, deadline)
    head_len, blob_len = _lengths(prefix, max_header, max_blob)
    frame = bytearray(_PREFIX.size + head_len + blob_len)
    frame[:_PREFIX.size] = prefix
    try:
        _fill(fd, memoryview(frame)[_PREFIX.size:], deadline)
    except BaseException:
        wipe(frame)  # what did arrive of a frame never finished is a grade's all the same
        raise
    return frame


class FrameTimeout(WireError):
    pass


class Closed(WireError):
    pass


def _read_exact(fd: int, n: int, deadline: float | None) -> bytearray:
    # Into one buffer, in place: chunks joined at the end would hold the data twice.
    buf = bytearray(n)
    _fill(fd, memoryview(buf), deadline)
    return buf


def _fill(fd: int, view: memoryview, deadline: float | None) -> None:
    got = 0
    while got < len(view):
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise FrameTimeout("no answer in time")
        read = os.readv(fd, [view[got:got + (1 << 20)]])
        if not read:
            raise Closed("the other side closed the channel")
        got += read


def _lengths(prefix, max_header: int, max_blob: int) -> tuple[int, int]:
    head_len, blob_len = _PREFIX.unpack_from(prefix)
    if head_len > max_header or blob_len > max_blob:
        raise WireError(f"frame too large ({head_len} + {blob_len} bytes)")
    return head_len, blob_len


def _header(raw) -> dict:
    try:
        header = json.loads(raw)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise WireError("frame header is not JSON (or nested too deeply)") from None
    if type(header) is not dict:
        raise WireError("frame header is not an object")
    return header


def read_frame(fd: int, *, max_header: int = 8 << 20, max_blob: int = 256 << 20,
               deadline: float | None = None) -> tuple[dict, bytearray]:
    head_len, blob_len = _lengths(_read_exact(fd, _PREFIX.size, deadline), max_header, max_blob)
    header = _header(_read_exact(fd, head_len, deadline))
    return header, _read_exact(fd, blob_len, deadline)


def _readinto(fd: int, buf: bytearray) -> None:
    view = memoryview(buf)
    while view:
        n = os.readv(fd, [view])
        if n == 0:
            raise Closed("the other side closed the channel")
        view = view[n:]


def read_frame_into(fd: int, *, max_header: int = 1 << 20, max_blob: int = 512 << 20) -> tuple[dict, bytearray]:
    """Like read_frame, for the warm process: the blob is read in place into one
    bytearray and no other copy of it is made, so that :func:`wipe` can erase it."""
    prefix = bytearray(_PREFIX.size)
    _readinto(fd, prefix)
    head_len, blob_len = _lengths(prefix, max_header, max_blob)
    head = bytearray(head_len)
    _readinto(fd, head)
    header = _header(head)
    blob = bytearray(blob_len)
    _readinto(fd, blob)
    return header, blob


def write_all(fd: int, *parts, deadline: float | None = None) -> None:
    """Write buffers in order without joining them (no extra copy). With a ``deadline``
    (``fd`` must then be non-blocking), a reader that stops reading is a FrameTimeout."""
    views = [memoryview(p).cast("B") for p in parts if len(p)]
    first = 0  # the first view not yet written whole
    while first < len(views):
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([], [fd], [], left)[1]:
                raise FrameTimeout("the other side does not read")
        try:
            n = os.writev(fd, views[first:first + 64])
        except BlockingIOError:
            if deadline is None:
                select.select([], [fd], [])
            continue
        while n:
            if n >= len(views[first]):
                n -= len(views[first])
                first += 1
            else:
                views[first] = views[first][n:]
                n = 0


def wipe(*buffers: bytearray) -> None:
    """Overwrite buffers in place: freed memory keeps its bytes, and later forks inherit it."""
    for buf in buffers:
        buf[:] = bytes(len(buf))


def unpack(data: bytes, *, max_header: int, max_blob: int) -> tuple[dict, bytes]:
    """Parse one frame from bytes already read (the zygote's result pipe). The blob
    returned is a view of ``data``, not a copy."""
    if len(data) < _PREFIX.size:
        raise WireError("truncated frame")
    head_len, blob_len = _lengths(data, max_header, max_blob)
    if len(data) != _PREFIX.size + head_len + blob_len:
        raise WireError("frame length does not match its contents")
    view = memoryview(data)
    return _header(bytes(view[_PREFIX.size:_PREFIX.size + head_len])), view[_PREFIX.size + head_len:]
