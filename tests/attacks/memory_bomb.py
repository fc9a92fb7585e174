# Allocates memory until something stops it: 64 MiB at a time, touched so that it is real.
def grad_2xtx(x):
    hog = []
    while True:
        block = bytearray(64 << 20)
        block[::4096] = b"\1" * len(block[::4096])
        hog.append(block)
