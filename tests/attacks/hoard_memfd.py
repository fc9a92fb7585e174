# Holds far more than the memory limit in memfd files that are never mapped: the address
# space limit does not see them. Each file stays under the file size limit. Then answers
# honestly, hoping to keep full marks.
import os

CHUNK = b"\xa5" * (1 << 20)
held = []


def grad_2xtx(x):
    total = 0
    try:
        while total < 720 << 20:  # the attack target allows 256 MiB
            fd = os.memfd_create("hoard")
            for _ in range(15):
                os.write(fd, CHUNK)
            held.append(fd)
            total += 15 << 20
    except OSError as exc:
        print(f"HOARD stopped: {exc}")
    print(f"HOARD held_mib={total >> 20}", flush=True)
    y = 2 * (x * x).sum()
    y.backward()
    return x.grad
