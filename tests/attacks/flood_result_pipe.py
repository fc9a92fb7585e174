# Skips the sandbox's encoder and pours 100 MiB into the result pipe (the limit on
# returned data is 64 MiB), then exits as if all was well.
import os


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
    fd = _result_pipe()
    chunk = b"\0" * (1 << 20)
    try:
        for _ in range(100):
            os.write(fd, chunk)
    except OSError:
        pass
    os._exit(0)
