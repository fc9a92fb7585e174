# Tries to make every later call slow: nices its autogroup (the whole sandbox, if it
# shares the warm process's session) to 19, and sets SCHED_IDLE, nice 19 and a single
# CPU on every other process it can see, the children waiting for the next calls
# included. Prints what worked, then answers honestly.
import os


def grad_2xtx(x):
    done = []
    try:
        with open("/proc/self/autogroup", "w") as fh:
            fh.write("19")
        done.append("autogroup")
    except OSError:
        pass
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        pid = int(entry)
        for name, action in (("idle", lambda: os.sched_setscheduler(pid, os.SCHED_IDLE, os.sched_param(0))),
                             ("nice", lambda: os.setpriority(os.PRIO_PROCESS, pid, 19)),
                             ("affinity", lambda: os.sched_setaffinity(pid, {min(os.sched_getaffinity(0))}))):
            try:
                action()
                done.append(f"{name}:{pid}")
            except OSError:
                pass
    print("SLOWED", " ".join(done) or "nothing")
    y = 2 * (x * x).sum()
    y.backward()
    return x.grad
