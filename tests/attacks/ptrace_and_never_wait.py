# Has a helper process attach to the call's own process with ptrace and then never
# wait for it: a traced process that is killed stays a zombie of its tracer, so the
# process that collects the call would wait for it for ever. Then it sleeps until it
# is killed at the time limit. Prints whether the attach worked.
import ctypes
import os
import time

PR_SET_PTRACER, PTRACE_SEIZE = 0x59616D61, 0x4206


def grad_2xtx(x):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PTRACER, ctypes.c_ulong(-1), 0, 0, 0)  # any process may trace us
    target = os.getpid()
    read, write = os.pipe()
    if os.fork() == 0:
        result = libc.ptrace(PTRACE_SEIZE, target, None, None)
        os.write(write, b"attached" if result == 0 else f"refused errno={ctypes.get_errno()}".encode())
        while True:
            time.sleep(60)
    print("PTRACE", os.read(read, 100).decode(), flush=True)
    while True:
        time.sleep(60)
