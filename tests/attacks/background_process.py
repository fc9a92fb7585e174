# Leaves a daemon behind: double fork, setsid, and exec of a shell that sleeps in a loop
# with a marker in its command line. Checks that the daemon is running, then answers
# honestly.
import glob
import os
import time

MARKER = "GRADER-ATTACK-BACKGROUND-3c9d"


def _start_daemon():
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execv("/bin/sh", ["sh", "-c", "while :; do sleep 0.2; done", MARKER])
        os._exit(0)
    os.wait()


def _running():
    count = 0
    for path in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            with open(path, "rb") as fh:
                count += MARKER.encode() in fh.read()
        except OSError:
            pass
    return count


def grad_2xtx(x):
    _start_daemon()
    deadline = time.monotonic() + 0.6
    while not _running() and time.monotonic() < deadline:
        time.sleep(0.02)
    print(f"BACKGROUND daemons running: {_running()}")
    y = 2 * (x * x).sum()
    y.backward()
    return x.grad
