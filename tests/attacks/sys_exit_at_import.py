# Raises SystemExit(0) while being imported.
import sys

sys.exit(0)


def grad_2xtx(x):
    return x
