"""The codec between sandbox and trusted side: faithful for data, hostile input refused."""

import math
import os
import time

import pytest
import torch

from grader.engine.inside import wire


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
    ({"tensor": {"dtype": "float32", "shape": [2], "offset": 4, "nbytes": 8}}, b"\0" * 8, "match"),
    ({"tensor": {"dtype": "float32", "shape": [-1], "offset": 0, "nbytes": 0}}, b"", "shape"),
    ({"tensor": {"dtype": "float32", "shape": [1 << 20, 1 << 20], "offset": 0, "nbytes": 0}}, b"", "too large"),
    ({"pickle": "cos\nsystem\n"}, b"", "unknown value tag"),
    ({"list": [1], "tuple": [2]}, b"", "malformed"),
    ([1, 2, 3], b"", "malformed"),
])
def test_malformed_data_from_the_sandbox_is_refused(tree, blob, words):
    with pytest.raises(wire.WireError, match=words):
        wire.decode(tree, blob)


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
