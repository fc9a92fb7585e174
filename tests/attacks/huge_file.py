# Writes a 64 MiB file into /tmp (the exercise allows 16 MiB), reports how far it got,
# then answers honestly.
import os

PATH = "/tmp/huge-file-attack.bin"


def grad_2xtx(x):
    written, error = 0, None
    try:
        with open(PATH, "wb") as fh:
            for _ in range(64):
                written += fh.write(b"\0" * (1 << 20))
                fh.flush()
    except OSError as exc:
        error = exc.strerror
    print(f"HUGE-FILE written={written} size={os.path.getsize(PATH)} error={error}")
    y = 2 * (x * x).sum()
    y.backward()
    return x.grad
