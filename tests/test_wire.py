"""The codec between sandbox and trusted side: faithful for data, hostile input refused."""

import json
import math
import os
import subprocess
import sys
import time

import numpy
import pytest
import torch

from grader.inside import wire


def roundtrip(value):
    tree, blob = wire.encode(value)
    return wire.decode(tree, blob)


@pytest.mark.parametrize("dtype", list(wire.DTYPES.values()))
def test_tensors_of_every_allowed_dtype_roundtrip(dtype):
    t = (torch.arange(6) % 2 == 0) if dtype == torch.bool else torch.arange(6).to(dtype)
    back = roundtrip(t.reshape(2, 3))
    assert back.dtype == dtype and back.shape == (2, 3)
    assert torch.equal(back.data, t.reshape(2, 3))


def test_autograd_facts_and_grad_travel_with_a_tensor():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    y.retain_grad()
    y.sum().backward()
    back_x, back_y = roundtrip([x, y])
    assert back_x.is_leaf and back_x.requires_grad and back_x.grad_fn is None
    assert torch.equal(back_x.grad.data, torch.tensor([3.0, 3.0]))
    assert not back_y.is_leaf and back_y.grad_fn == "MulBackward0" and back_y.retains_grad
    assert torch.equal(back_y.grad.data, torch.ones(2))


def test_containers_numbers_and_special_floats_roundtrip():
    value = {"a": [1, 2.5, None, True, "s"], "b": (float("inf"), -math.inf), 3: {"n": float("nan")}}
    back = roundtrip(value)
    assert back["a"] == [1, 2.5, None, True, "s"]
    assert back["b"] == (math.inf, -math.inf)
    assert math.isnan(back[3]["n"])


class Liar:
    def __eq__(self, other):
        return True


class LyingTensor(torch.Tensor):
    pass


@pytest.mark.parametrize("value, words", [
    (Liar(), "Liar"),
    (torch.ones(2).as_subclass(LyingTensor), "subclass"),
    ({(1, 2): 3}, "keys"),
    (2 ** 80, "too large"),
    (lambda: 0, "function"),
])
def test_values_that_cannot_be_graded_are_refused_with_a_reason(value, words):
    with pytest.raises(wire.WireError, match=words):
        wire.encode(value)


def test_decoded_tensors_are_plain_tensors_whatever_was_sent():
    tree, blob = wire.encode(torch.ones(3))
    back = wire.decode(tree, blob)
    assert type(back.data) is torch.Tensor


@pytest.mark.parametrize("tree, blob, words", [
    ({"tensor": {"dtype": "object", "shape": [1], "offset": 0, "nbytes": 8}}, b"\0" * 8, "dtype"),
    ({"tensor": {"dtype": "float32", "shape": [3], "offset": 0, "nbytes": 8}}, b"\0" * 8, "match"),
    ({"tensor": {"dtype": "float32", "shape": [2], "offset": 4, "nbytes": 8}}, b"\0" * 8, "outside"),
    ({"tensor": {"dtype": "float32", "shape": [-1], "offset": 0, "nbytes": 0}}, b"", "shape"),
    ({"tensor": {"dtype": "float32", "shape": [1 << 20, 1 << 20], "offset": 0, "nbytes": 0}}, b"", "too large"),
    ({"pickle": "cos\nsystem\n"}, b"", "unknown value tag"),
    ({"list": [1 << 63]}, b"", "too large"),
    ({"dict": [[-(1 << 64), 1]]}, b"", "malformed"),
    ({"list": [1], "tuple": [2]}, b"", "malformed"),
    ([1, 2, 3], b"", "malformed"),
])
@pytest.mark.parametrize("tensors", [True, False])
def test_malformed_data_from_the_sandbox_is_refused(tree, blob, words, tensors):
    with pytest.raises(wire.WireError, match=words):
        wire.decode(tree, blob, tensors=tensors)


def test_deep_nesting_is_refused():
    tree = 1
    for _ in range(100):
        tree = {"list": [tree]}
    with pytest.raises(wire.WireError, match="deep"):
        wire.decode(tree, b"")


def test_frames_roundtrip_over_a_pipe_and_oversized_frames_are_refused():
    r, w = os.pipe()
    wire.write_frame(w, {"ok": True}, b"xyz")
    assert wire.read_frame(r, deadline=time.monotonic() + 5) == ({"ok": True}, b"xyz")
    wire.write_frame(w, {"ok": True}, b"x" * 100)
    with pytest.raises(wire.WireError, match="too large"):
        wire.read_frame(r, max_blob=10)
    os.close(r)
    os.close(w)


def test_a_silent_peer_times_out():
    r, w = os.pipe()
    with pytest.raises(wire.FrameTimeout):
        wire.read_frame(r, deadline=time.monotonic() + 0.2)
    os.close(r)
    os.close(w)


# ------------------------------------------------------------------ bounded by construction

def tensor_node(offset, nbytes, shape=None, grad=None):
    shape = [nbytes // 4] if shape is None else shape
    return {"tensor": {"dtype": "float32", "shape": shape, "offset": offset, "nbytes": nbytes, "grad": grad}}


def test_tensors_naming_the_same_bytes_are_refused():
    # Each entry would be copied: 48 over one extent made the trusted side hold 48 times the blob.
    blob = bytes(1 << 20)
    tree = {"list": [tensor_node(0, len(blob)) for _ in range(48)]}
    with pytest.raises(wire.WireError, match="overlap"):
        wire.decode(tree, blob)


@pytest.mark.parametrize("extents", [[(0, 8), (4, 8)], [(8, 8), (0, 8)], [(0, 16), (0, 0), (0, 4)]])
@pytest.mark.parametrize("tensors", [True, False])
def test_extents_out_of_order_or_overlapping_are_refused(extents, tensors):
    tree = {"list": [tensor_node(o, n) for o, n in extents]}
    with pytest.raises(wire.WireError, match="overlap"):
        wire.decode(tree, bytes(16), tensors=tensors)


def test_what_decoding_copies_adds_up_to_at_most_the_blob():
    x = torch.ones(4, requires_grad=True)
    (3 * x).sum().backward()
    tree, blob = wire.encode({"a": [x, torch.arange(5.0)], "b": (x.detach() * 2,)})
    back = wire.decode(tree, blob)
    copied = back["a"][0].data.nbytes + back["a"][0].grad.data.nbytes + back["a"][1].data.nbytes \
        + back["b"][0].data.nbytes
    assert copied <= len(blob)  # the rest: gaps that align each extent


# ------------------------------------------------------------------ no copy where none is needed
# A call's tensor crosses three processes between the exercise's test and the student's
# function. Each writes it to its pipe from where it lies and reads it into one buffer of
# its own; the call child's clone is then the only copy any of them makes.

def address(buffer) -> int:
    return numpy.frombuffer(memoryview(buffer).cast("B"), "u1").ctypes.data


def within(pointer: int, buffer) -> bool:
    start = address(buffer)
    return start <= pointer < start + len(memoryview(buffer).cast("B"))


def test_a_tensor_is_written_from_its_own_memory():
    x = torch.arange(1 << 20, dtype=torch.float32)
    tree, parts = wire.encode_parts({"args": [torch.ones(3), x], "kwargs": {}})
    assert any(address(part) == x.data_ptr() and len(part) == x.nbytes for part in parts)


def test_many_small_tensors_make_few_parts_both_where_encoded_and_where_relayed():
    # A part each would be 100,000 buffers for the worker to write, one syscall per 64.
    tree, parts = wire.encode_parts([torch.ones(3)] * 50_000 + [torch.ones(1 << 16), torch.ones(2)])
    assert len(parts) == 3 and len(parts[1]) == 4 << 16
    relayed = wire.decode(tree, bytearray(b"".join(parts)), tensors=False)
    again, again_parts = wire.encode_parts(relayed, states=True)
    assert len(again_parts) == 3 and b"".join(again_parts) == b"".join(parts)


def test_a_frame_of_many_parts_is_written_whole_and_in_order():
    parts = [bytes([n % 251]) * (1 + n % 7) for n in range(20_000)]
    read, write = os.pipe()
    wire.widen(read, write)
    with os.fdopen(read, "rb") as reader:
        wire.write_frame(write, {"n": len(parts)}, *parts)
        os.close(write)
        header, blob = wire.read_frame(reader.fileno())
    assert header == {"n": 20_000} and blob == b"".join(parts)


def test_a_blob_read_into_a_buffer_of_its_own_is_decoded_in_place():
    x, g = torch.arange(1 << 20, dtype=torch.float64), torch.ones(3, dtype=torch.int8)
    tree, blob = wire.encode([g, x, torch.ones(5, dtype=torch.complex128)])
    frame = bytearray(blob)  # as read_frame gives it
    back = wire.decode(tree, frame)
    assert all(within(t.data.data_ptr(), frame) for t in back)
    assert torch.equal(back[1].data, x) and torch.equal(back[0].data, g)
    relayed = wire.decode(tree, frame, tensors=False)
    assert all(within(address(v.data.raw), frame) and v.data.raw.readonly for v in relayed)


def test_each_extent_is_aligned_for_its_dtype():
    values = [torch.ones(n, dtype=dtype) for n, dtype in ((1, torch.int8), (3, torch.float64), (1, torch.bool),
                                                          (2, torch.complex128), (5, torch.bfloat16))]
    tree, blob = wire.encode(values)
    assert all(node["tensor"]["offset"] % wire.ALIGN == 0 for node in tree["list"])
    assert all(t.data.data_ptr() % t.data.element_size() == 0 for t in wire.decode(tree, bytearray(blob)))


def test_a_read_only_or_misaligned_blob_is_copied_not_written():
    blob = bytes(range(16)) * 2
    tree = {"list": [tensor_node(0, 4), tensor_node(4, 8, shape=[1])]}
    tree["list"][1]["tensor"]["dtype"] = "float64"  # a hand-made blob: 8-byte elements at offset 4
    first, second = wire.decode(tree, blob)
    first.data.add_(1)  # the decoder's copy, not the immutable bytes
    assert blob == bytes(range(16)) * 2
    aligned = wire.decode(tree, bytearray(blob))[1].data
    assert aligned.data_ptr() % 8 == 0 and aligned.untyped_storage().nbytes() == 8
    assert aligned.view(torch.uint8).tolist() == list(range(4, 12))


def test_the_student_gets_tensors_of_their_own():
    x = torch.ones(4)
    tree, blob = wire.encode([x])
    frame = bytearray(blob)
    given = wire.to_sandbox(wire.decode(tree, frame))
    given[0].add_(1)
    assert torch.equal(wire.decode(tree, frame)[0].data, x) and not within(given[0].data_ptr(), frame)


@pytest.mark.parametrize("shape", [[0, 10 ** 30], [0, 1 << 63], [0, 1 << 62, 4]])
def test_empty_tensors_whose_shape_does_not_fit_int64_are_refused(shape):
    with pytest.raises(wire.WireError, match="64 bits"):
        wire.decode(tensor_node(0, 0, shape=shape), b"")


@pytest.mark.parametrize("depth", [30, 900, 10_000])
def test_a_grad_chain_counts_as_depth(depth):
    node = None
    for _ in range(depth):
        node = {"dtype": "float32", "shape": [0], "offset": 0, "nbytes": 0, "grad": node}
    with pytest.raises(wire.WireError, match="deeply"):
        wire.decode({"tensor": node}, b"")


def test_gradients_count_against_the_node_limit(monkeypatch):
    monkeypatch.setattr(wire, "MAX_NODES", 10)
    node = {"dtype": "float32", "shape": [0], "offset": 0, "nbytes": 0,
            "grad": {"dtype": "float32", "shape": [0], "offset": 0, "nbytes": 0}}
    with pytest.raises(wire.WireError, match="too many parts"):
        wire.decode({"list": [{"tensor": node}] * 6}, b"")


def test_a_grad_chain_is_refused_when_encoding_too():
    x = torch.zeros(1, requires_grad=True)
    for _ in range(40):
        g = torch.zeros(1, requires_grad=True)
        g.grad, x = x, g
    with pytest.raises(wire.WireError, match="deeply"):
        wire.encode(x)


def _mutations(rng):
    """Values of every kind a hostile encoder might put anywhere."""
    return [None, True, -1, 0, 1 << 70, -(1 << 70), 2.5, float("nan"), "", "float64", "x" * 50, [], [1, -2],
            [0, 10 ** 30], {}, {"tensor": 1}, {"list": 1}, {"dict": [[1]]}, {"float": []}, {"float": "inf"},
            {"a": 1, "b": 2}, [[[]]], {"dtype": ["float32"]}, rng.randbytes(3).decode("latin-1")]


def test_any_mutation_of_a_valid_value_decodes_or_raises_wire_error():
    import random

    rng = random.Random(7)
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    tree, blob = wire.encode({"v": [x, (torch.ones(2, 3, dtype=torch.float64), 3, "s")], "n": None})

    def paths(node, at=()):
        yield at
        if isinstance(node, dict):
            for k, v in node.items():
                yield from paths(v, at + (k,))
        elif isinstance(node, list):
            for i, v in enumerate(node):
                yield from paths(v, at + (i,))

    import copy
    spots = list(paths(tree))[1:]
    for _ in range(3000):
        mutated = copy.deepcopy(tree)
        for _ in range(rng.randint(1, 3)):
            at = rng.choice(spots)
            parent = mutated
            try:
                for key in at[:-1]:
                    parent = parent[key]
                parent[at[-1]] = copy.deepcopy(rng.choice(_mutations(rng)))
            except (KeyError, IndexError, TypeError):
                continue
        for tensors in (True, False):
            try:
                wire.decode(mutated, blob[: rng.choice([len(blob), 8, 0])], tensors=tensors)
            except wire.WireError:
                pass


def test_the_trusted_side_loads_torch_only_when_it_encodes_or_decodes():
    # So that `grader grade` starts its sandboxes while it imports torch itself (grader.engine).
    code = ("import sys, grader.engine.grading, grader.cli.grade\n"
            "before = 'torch' in sys.modules\n"
            "from grader.inside import wire\n"
            "framed = wire.unpack(wire.pack({'x': 1}), max_header=64, max_blob=0)\n"
            "framing = 'torch' in sys.modules\n"
            "value = wire.decode(*wire.encode([1.5]))\n"
            "print(before, framing, 'torch' in sys.modules, value, sorted(wire.DTYPES)[:2])")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.split() == ["False", "False", "True", "[1.5]", "['bfloat16',", "'bool']"]


RELAY = """
import json, sys
from grader.inside import wire
tree, blob = json.loads(sys.stdin.readline()), bytes.fromhex(sys.stdin.readline().strip())
values = wire.decode(tree, blob, tensors=False)
fresh = wire.to_sandbox(values)
state, state_blob = wire.encode(values, states=True)
sent, sent_blob = wire.encode(fresh, states=True)
print(json.dumps(["torch" in sys.modules, repr(values["a"][0]), state, state_blob.hex(), sent, sent_blob.hex()]))
"""


def test_the_worker_relays_tensors_as_their_bytes_without_loading_torch():
    """What the worker passes on (decoded as values, encoded again, and as fresh leaves for
    the student sandbox) is what the tensors themselves would give; it never imports torch."""
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    (x * x).sum().backward()
    payload = {"a": [x, torch.arange(3, dtype=torch.int64), torch.ones(0, dtype=torch.bfloat16)],
               "b": (torch.tensor([0.5], dtype=torch.bfloat16, requires_grad=True), 3, "s", None)}
    tree, blob = wire.encode(payload)
    run = subprocess.run([sys.executable, "-c", RELAY], input=json.dumps(tree) + "\n" + blob.hex() + "\n",
                         capture_output=True, text=True, check=True)
    loaded, shown, state, state_blob, sent, sent_blob = json.loads(run.stdout)
    assert loaded is False
    assert shown == "TensorState(shape=(2, 2), dtype=float32, requires_grad)"
    assert (state, bytes.fromhex(state_blob)) == (tree, blob)  # relayed as it came, facts and all
    fresh = wire.to_sandbox(wire.decode(tree, blob))
    assert (sent, bytes.fromhex(sent_blob)) == wire.encode(fresh)  # the leaves a student's call gets


def test_pipes_are_widened_where_the_kernel_lets_them_and_kept_where_it_does_not(tmp_path):
    import fcntl

    r, w = os.pipe()
    with open(tmp_path / "file", "wb") as not_a_pipe:
        wire.widen(w, not_a_pipe.fileno())  # a descriptor the kernel refuses is left as it is
    assert fcntl.fcntl(r, fcntl.F_GETPIPE_SZ) == wire.PIPE_BYTES
    os.close(r)
    os.close(w)
