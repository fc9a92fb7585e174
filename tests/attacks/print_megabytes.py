# Prints 8 MiB on stdout and 1 MiB on stderr in every call, then answers honestly.
import sys


def grad_2xtx(x):
    line = "flood " * 20 + "\n"
    sys.stdout.write(line * ((8 << 20) // len(line)))
    sys.stderr.write(line * ((1 << 20) // len(line)))
    y = 2 * (x * x).sum()
    y.backward()
    return x.grad
