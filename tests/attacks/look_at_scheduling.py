# Not an attack: prints how the call's own process is scheduled (and the warm process's
# autogroup), for a test to compare after an attack. Answers honestly.
import os


def grad_2xtx(x):
    with open("/proc/self/autogroup") as fh:
        own = fh.read().split()[-1]
    try:
        with open("/proc/1/autogroup") as fh:
            warm = fh.read().split()[-1]
    except OSError:
        warm = "?"
    print(f"SCHEDULING policy={os.sched_getscheduler(0)} nice={os.getpriority(os.PRIO_PROCESS, 0)} "
          f"cpus={len(os.sched_getaffinity(0))} autogroup_nice={own} warm_autogroup_nice={warm}")
    y = 2 * (x * x).sum()
    y.backward()
    return x.grad
