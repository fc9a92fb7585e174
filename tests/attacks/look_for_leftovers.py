# Not an attack: the submission after one, looking for anything an earlier submission
# left behind -- files in /tmp and the System V shared memory segment that
# leave_shared_memory.py writes. Answers honestly.
import ctypes
import os

KEY = 0x6A77ACC


def _shared_memory():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    shmid = libc.shmget(KEY, 0, 0)
    if shmid < 0:
        return "none"
    address = libc.shmat(shmid, None, 0)
    return bytes((ctypes.c_char * 64).from_address(address)).rstrip(b"\0").decode()


def grad_2xtx(x):
    print("LEFTOVER tmp:", sorted(os.listdir("/tmp")))
    print("LEFTOVER shm:", _shared_memory())
    y = 2 * (x * x).sum()
    y.backward()
    return x.grad
