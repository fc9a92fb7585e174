# Searches its own memory, in the visible test's call, for the bytes of the hidden test's
# inputs: a child is a fork of the warm process, so anything the warm process once held
# (a hidden call's request, its result) and did not erase would be inherited here.
import ctypes
import struct

VALUES = [1.732050807, -0.5772156649, 2.718281828, 0.6931471806]  # HIDDEN_X, as float64


def _own(buffer):
    start = ctypes.addressof((ctypes.c_char * len(buffer)).from_buffer(buffer))
    return start, start + len(buffer)


def grad_2xtx(x):
    if x.numel() == 3:  # the visible call: the hidden one came before it
        pattern = bytearray(struct.pack("<4d", *VALUES))
        chunk = bytearray(1 << 22)
        skip = [_own(pattern), _own(chunk)]  # the search's own copies do not count
        found = 0
        with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", 0) as mem:
            for line in maps:
                fields = line.split()
                if "rw" not in fields[1] or (len(fields) > 5 and not fields[5].startswith("[heap")):
                    continue
                start, end = (int(v, 16) for v in fields[0].split("-"))
                for at in range(start, end, len(chunk)):
                    size = min(len(chunk), end - at)
                    try:
                        mem.seek(at)
                        got = mem.readinto(memoryview(chunk)[:size])
                    except (OSError, ValueError, OverflowError):
                        continue
                    view = chunk[:got]
                    index = view.find(pattern)
                    while index >= 0:
                        where = at + index
                        if not any(lo <= where < hi for lo, hi in skip):
                            found += 1
                        index = view.find(pattern, index + 1)
        print(f"SCAN-MEMORY found={found}")
    y = 2 * (x * x).sum()
    y.backward()
    return x.grad
