"""One control group per sandbox: the kernel's bound on its memory, processes and CPU share.

Every process of a sandbox (bubblewrap, the warm process, its children and whatever
a submission starts) is in the sandbox's own cgroup from its first instruction:
the launcher joins it between fork and exec. The kernel then counts all their
memory together, memfd, tmpfs and shared memory included, with no swap to hide
in; caps their number; gives the sandbox one CPU weight however many processes it
runs; and closing the sandbox kills everything in the group, its PID 1 included.
All of a worker's sandboxes share the CPU weight of their common group: by default the
worker's own group's (v2 cpu.weight; v1 cpu.shares, converted), so that on a busy host the
sandboxes get as much as the worker itself; GRADER_SANDBOX_CPU_WEIGHT (1-10000, v2 units,
times 10.24 as v1 shares) sets it.

Both hierarchies are supported. cgroup v2 (most hosts today): the sandboxes live in
``grader-sandboxes/`` beside the worker's own cgroup, in a parent that delegates the
memory, pids and cpu controllers (or under ``GRADER_CGROUP``). cgroup v1: one
directory per controller under the worker's own group. ``python -m grader.engine.cgroup
delegate`` prepares a container's cgroup (v2) for this.
"""

from __future__ import annotations

import errno
import itertools
import os
import signal
import time
from pathlib import Path

CONTROLLERS = ("memory", "pids", "cpu")
V2_ROOT = Path("/sys/fs/cgroup")
SANDBOXES = "grader-sandboxes"
PIDS_MAX = 512            # tasks (threads count) per sandbox; RLIMIT_NPROC bounds each call
CPU_WEIGHT_V2, CPU_SHARES_V1 = 100, 1024   # every sandbox the same share, the default one
_counter = itertools.count()

FIX = ("Each sandbox needs a cgroup of its own with the memory, pids and cpu controllers. "
       "On cgroup v2, run the worker as root in a cgroup whose parent delegates them "
       "(systemd: Delegate=yes; a container: start it with `python -m grader.engine.cgroup delegate` "
       "before the worker, as docker-compose.yml does), or point GRADER_CGROUP at a cgroup "
       "directory with memory, pids and cpu in its cgroup.subtree_control. On cgroup v1, run the "
       "worker as root with the memory, pids and cpu hierarchies mounted (read-write).")


class CgroupUnavailable(RuntimeError):
    """No cgroup can be made for a sandbox here; the message says how to fix that."""


def _read(path: Path) -> str:
    with open(path) as fh:
        return fh.read()


def _write(path: Path, value: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def _counter_in(path: Path, key: str) -> int:
    """A ``key value`` line of a flat-keyed cgroup file (memory.events, memory.oom_control)."""
    try:
        for line in _read(path).splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    except OSError:
        pass
    return 0


def _own_cgroups() -> dict[str, str]:
    """controller (or "" for v2) -> this process's cgroup path, from /proc/self/cgroup."""
    own = {}
    for line in _read(Path("/proc/self/cgroup")).splitlines():
        _, names, path = line.split(":", 2)
        for name in names.split(",") if names else [""]:
            own[name] = path
    return own


def _v1_mounts() -> dict[str, tuple[Path, str]]:
    """controller -> (mount point, root of that mount inside the hierarchy)."""
    mounts = {}
    for line in _read(Path("/proc/self/mountinfo")).splitlines():
        left, _, right = line.partition(" - ")
        fields, (fstype, _source, options) = left.split(), right.split()[:3]
        if fstype != "cgroup":
            continue
        for name in options.split(","):
            if name in CONTROLLERS:
                mounts[name] = (Path(fields[4]), fields[3])
    return mounts


def _v2_own() -> Path:
    """This process's own cgroup directory (v2). /proc/self/cgroup names it from the root
    of the cgroup namespace, while /sys/fs/cgroup may be mounted lower in the tree: a
    container that shares the host's cgroup namespace sees its own group as the mount's
    root, as on v1."""
    own, root = _own_cgroups().get("", "/"), "/"
    for line in _read(Path("/proc/self/mountinfo")).splitlines():
        left, _, right = line.partition(" - ")
        fields = left.split()
        if right.split()[:1] == ["cgroup2"] and fields[4] == str(V2_ROOT):
            root = fields[3]
    if root != "/" and (own == root or own.startswith(root.rstrip("/") + "/")):
        own = own[len(root):]
    return V2_ROOT / own.strip("/")


def version() -> int:
    if (V2_ROOT / "cgroup.controllers").exists():
        return 2
    return 1


class SandboxCgroup:
    """The cgroup(s) of one sandbox: one directory on v2, one per controller on v1."""

    def __init__(self, v: int, dirs: dict[str, Path]):
        self.version = v
        self.dirs = dirs  # controller -> directory (all three the same on v2)
        self.memory_dir = dirs["memory"]
        self._procs_files = sorted({str(d / "cgroup.procs") for d in dirs.values()})

    # ------------------------------------------------------------ making

    @classmethod
    def create(cls, configured: str = "", *, cpu_weight: int | None = None) -> "SandboxCgroup":
        """A new sandbox's group, in the worker's sandboxes' group, which gets ``cpu_weight``
        (v2 units; None: the worker's own group's) for all of them together."""
        try:
            bases = _v2_base(configured) if version() == 2 else _v1_bases(configured)
            _share_of_all(bases, cpu_weight if cpu_weight is not None else own_cpu_weight())
        except OSError as exc:  # a user that may not write there, most often
            raise CgroupUnavailable(f"cannot prepare the sandboxes' cgroup ({exc}). " + FIX) from None
        _remove_stale(bases)
        name = f"sb-{os.getpid()}-{next(_counter)}"
        dirs = {c: base / name for c, base in bases.items()}
        group = cls(version(), dirs)
        try:
            for d in sorted(set(dirs.values())):
                os.makedirs(d, exist_ok=True)
            group._configure()
        except OSError as exc:
            group.remove()
            raise CgroupUnavailable(f"cannot set up the sandbox's cgroup {group.memory_dir} ({exc}). " + FIX) from None
        return group

    def _configure(self) -> None:
        if self.version == 2:
            d = self.memory_dir
            _write(d / "memory.swap.max", "0")
            _write(d / "pids.max", str(PIDS_MAX))
            _write(d / "cpu.weight", str(CPU_WEIGHT_V2))
        else:
            m = self.dirs["memory"]
            if (m / "memory.swappiness").exists():
                _write(m / "memory.swappiness", "0")
            _write(self.dirs["pids"] / "pids.max", str(PIDS_MAX))
            _write(self.dirs["cpu"] / "cpu.shares", str(CPU_SHARES_V1))

    def join(self) -> None:
        """Move the calling process into the sandbox's cgroup (between fork and exec).

        Also makes it (and so the warm process and the children it forks ahead) the
        last the OOM killer picks: a call child raises its own score, so an OOM in
        this group ends the call, not the warm process."""
        pid = str(os.getpid())
        for procs in self._procs_files:
            _write(Path(procs), pid)
        try:
            _write(Path("/proc/self/oom_score_adj"), "-1000")
        except OSError:
            pass

    # ------------------------------------------------------------ limits

    def memory_usage(self) -> int:
        name = "memory.current" if self.version == 2 else "memory.usage_in_bytes"
        return int(_read(self.memory_dir / name))

    def set_memory_max(self, limit: int) -> None:
        """What all the sandbox's processes may hold together, swap and page cache included."""
        limit = max(limit, 1 << 24)
        if self.version == 2:
            _write(self.memory_dir / "memory.max", str(limit))
            return
        memsw = self.memory_dir / "memory.memsw.limit_in_bytes"
        if not memsw.exists():  # no swap accounting: swappiness 0 is what is left
            _write(self.memory_dir / "memory.limit_in_bytes", str(limit))
            return
        # v1 keeps memory <= memory+swap at every moment: raise the outer bound first.
        try:
            _write(self.memory_dir / "memory.limit_in_bytes", str(limit))
            _write(memsw, str(limit))
        except OSError as exc:
            if exc.errno != errno.EINVAL:
                raise
            _write(memsw, str(limit))
            _write(self.memory_dir / "memory.limit_in_bytes", str(limit))

    def oom_kills(self) -> int:
        """Processes of this group the kernel killed for memory, so far: for the group's own
        limit or because the whole machine ran out (the victim's group counts either)."""
        if self.version == 2:
            return _counter_in(self.memory_dir / "memory.events", "oom_kill")
        return _counter_in(self.memory_dir / "memory.oom_control", "oom_kill")

    def memory_mark(self) -> tuple[int, int]:
        """Where this group's memory counters stand now, for :meth:`killed_for_memory` after
        a call. v1 keeps no count of limit hits that every kernel fills, so its peak is reset
        here instead, to be compared with the limit afterwards."""
        if self.version == 2:
            return self.oom_kills(), _counter_in(self.memory_dir / "memory.events", "oom")
        for name in ("memory.max_usage_in_bytes", "memory.memsw.max_usage_in_bytes"):
            try:
                _write(self.memory_dir / name, "0")
            except OSError:
                pass
        return self.oom_kills(), 0

    def killed_for_memory(self, mark: tuple[int, int]) -> str | None:
        """Since ``mark``: None if the kernel killed none of this group's processes for
        memory; "limit" if the group reached its own limit (v2's ``oom`` event; v1's peak
        at its limit); "host" if the whole machine ran out (the victim's group counts the
        kill either way). Each group reads its own counters, so sandboxes side by side on
        one host never take each other's kills for their own."""
        if self.oom_kills() <= mark[0]:
            return None
        if self.version == 2:
            return "limit" if _counter_in(self.memory_dir / "memory.events", "oom") > mark[1] else "host"
        for peak, limit in (("memory.max_usage_in_bytes", "memory.limit_in_bytes"),
                            ("memory.memsw.max_usage_in_bytes", "memory.memsw.limit_in_bytes")):
            try:
                if int(_read(self.memory_dir / peak)) + (1 << 20) >= int(_read(self.memory_dir / limit)):
                    return "limit"
            except (OSError, ValueError):
                continue
        return "host"

    def pids(self) -> set[int]:
        found: set[int] = set()
        for procs in self._procs_files:
            try:
                found |= {int(p) for p in _read(Path(procs)).split()}
            except OSError:
                pass
        return found

    # ------------------------------------------------------------ ending

    def kill(self, deadline: float = 5.0) -> bool:
        """SIGKILL everything in the group, its PID 1 included, until it is empty."""
        if self.version == 2 and (self.memory_dir / "cgroup.kill").exists():
            try:
                _write(self.memory_dir / "cgroup.kill", "1")
            except OSError:
                pass
        end = time.monotonic() + deadline
        while True:
            pids = self.pids()
            if not pids:
                return True
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            if time.monotonic() > end:
                return False
            time.sleep(0.01)

    def remove(self) -> None:
        """Kill what is left and remove the group's directories."""
        self.kill()
        for d in sorted(set(self.dirs.values())):
            _rmdir(d)


def _rmdir(d: Path) -> None:
    for _ in range(100):
        try:
            os.rmdir(d)
            return
        except FileNotFoundError:
            return
        except OSError as exc:
            if exc.errno != errno.EBUSY:
                return
            time.sleep(0.02)  # its last processes are still being torn down


def own_cpu_weight() -> int:
    """The CPU weight of the worker's own cgroup, in v2 units (v1's cpu.shares converted);
    the default where it has none (the root group)."""
    try:
        if version() == 2:
            return int(_read(_v2_own() / "cpu.weight"))
        mount, root = _v1_mounts()["cpu"]
        path = _own_cgroups().get("cpu", "/")
        rel = (path[len(root):] if path.startswith(root) and root != "/" else path).strip("/")
        return _weight_of_shares(int(_read(mount / rel / "cpu.shares")))
    except (OSError, KeyError, ValueError):
        return CPU_WEIGHT_V2


def _weight_of_shares(shares: int) -> int:
    return max(1, min(10_000, round(shares * CPU_WEIGHT_V2 / CPU_SHARES_V1)))


def _shares_of_weight(weight: int) -> int:
    return max(2, round(weight * CPU_SHARES_V1 / CPU_WEIGHT_V2))


def _share_of_all(bases: dict[str, Path], weight: int) -> None:
    """The sandboxes' group's CPU weight: what all of this worker's sandboxes get together
    against the worker and its siblings (each sandbox then has an equal part of it)."""
    if version() == 2:
        target, value = bases["cpu"] / "cpu.weight", str(weight)
    else:
        target, value = bases["cpu"] / "cpu.shares", str(_shares_of_weight(weight))
    if _read(target).strip() != value:
        _write(target, value)


def _v1_bases(configured: str) -> dict[str, Path]:
    mounts, own = _v1_mounts(), _own_cgroups()
    missing = [c for c in CONTROLLERS if c not in mounts]
    if missing:
        raise CgroupUnavailable(f"the cgroup v1 hierarchies {', '.join(missing)} are not mounted. " + FIX)
    bases = {}
    for name in CONTROLLERS:
        mount, root = mounts[name]
        if configured:
            rel = configured.strip("/")
        else:
            path = own.get(name, "/")
            rel = (path[len(root):] if path.startswith(root) and root != "/" else path).strip("/")
            rel = f"{rel}/{SANDBOXES}".strip("/")
        base = mount / rel
        os.makedirs(base, exist_ok=True)
        bases[name] = base
    return bases


def _v2_base(configured: str) -> dict[str, Path]:
    if configured:
        parent = Path(configured)
        base = parent if parent.is_absolute() else V2_ROOT / configured
    else:
        own = _v2_own()
        # A cgroup with processes cannot hand controllers to children (v2's "no internal
        # processes"), so sandboxes go beside the worker's group, not below it.
        parent = own if own == V2_ROOT else own.parent
        base = parent / SANDBOXES
    enabled = set(_read(base.parent / "cgroup.subtree_control").split())
    if not set(CONTROLLERS) <= enabled:
        try:
            _write(base.parent / "cgroup.subtree_control", " ".join(f"+{c}" for c in CONTROLLERS))
        except OSError as exc:
            raise CgroupUnavailable(
                f"{base.parent} does not delegate {', '.join(sorted(set(CONTROLLERS) - enabled))} "
                f"to the sandboxes and cannot be made to ({exc.strerror}). " + FIX) from None
    os.makedirs(base, exist_ok=True)
    if not set(CONTROLLERS) <= set(_read(base / "cgroup.subtree_control").split()):
        _write(base / "cgroup.subtree_control", " ".join(f"+{c}" for c in CONTROLLERS))
    return {c: base for c in CONTROLLERS}


def _remove_stale(bases: dict[str, Path]) -> None:
    """Groups a dead worker left behind (its sandboxes already ended with it, or end now)."""
    for base in set(bases.values()):
        for entry in base.glob("sb-*-*"):
            try:
                owner = int(entry.name.split("-")[1])
            except (IndexError, ValueError):
                continue
            if owner != os.getpid() and not os.path.exists(f"/proc/{owner}"):
                dirs = {c: b / entry.name for c, b in bases.items()}
                SandboxCgroup(version(), dirs).remove()


def _remount_writable() -> list[str]:
    """A container gets its cgroup mounts read-only; with CAP_SYS_ADMIN (which bubblewrap
    needs anyway) they can be made writable. Only this mount's flags change."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    done = []
    for line in _read(Path("/proc/self/mountinfo")).splitlines():
        left, _, right = line.partition(" - ")
        fields = left.split()
        if right.split()[0] in ("cgroup", "cgroup2") and "ro" in fields[5].split(","):
            # MS_REMOUNT | MS_BIND, without MS_RDONLY
            if libc.mount(None, fields[4].encode(), None, 0x20 | 0x1000, None) == 0:
                done.append(fields[4])
    return done


def delegate() -> str:
    """Prepare this process's cgroup (v2) to hold sandboxes: move every process in it
    to a leaf ``worker/`` and enable the controllers. For a container's entrypoint."""
    remounted = _remount_writable()
    if version() != 2:
        return f"cgroup v1: remounted {remounted or 'nothing'} read-write; nothing to delegate"
    own = _v2_own()
    leaf = own / "worker"
    os.makedirs(leaf, exist_ok=True)
    for _ in range(100):  # processes may fork while we move them
        pids = _read(own / "cgroup.procs").split()
        if not pids:
            break
        for pid in pids:
            try:
                _write(leaf / "cgroup.procs", pid)
            except OSError:
                pass
    _write(own / "cgroup.subtree_control", " ".join(f"+{c}" for c in CONTROLLERS))
    return f"{own}: processes moved to {leaf}; {' '.join(CONTROLLERS)} delegated"


if __name__ == "__main__":
    import sys

    if sys.argv[1:] != ["delegate"]:
        raise SystemExit("usage: python -m grader.engine.cgroup delegate")
    print(delegate())
