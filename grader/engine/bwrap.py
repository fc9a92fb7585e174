"""The bubblewrap command line of a sandbox's warm process, for either room.

Both rooms get the same walls (no network, a read-only system, a private /tmp, a clean
environment, an unprivileged uid); they differ in the code of ours mounted into them:

- the student room sees only ``inside/``, as the top-level package ``inside``, and any
  installed copy of ``grader`` is masked there;
- the exercise room sees the ``grader`` package (the hidden tests import
  ``grader.testing``), and nothing of the service's state: no instance folder, no
  database, no environment. Its bundle arrives as data, over its request pipe.
"""

from __future__ import annotations

import glob
import os
import sys
from dataclasses import dataclass
from pathlib import Path

ENGINE = Path(__file__).resolve().parent
INSIDE_PACKAGE = ENGINE.parent / "inside"
GRADER_PACKAGE = ENGINE.parent
MASK = ENGINE / "masked"
SANDBOX_CODE = "/opt/grader"
SANDBOX_VENV = "/opt/venv"


@dataclass(frozen=True)
class Room:
    """What of ours a sandbox sees, and which warm process it runs."""

    name: str
    package: Path        # mounted read-only at SANDBOX_CODE/<its name>
    boot_module: str     # whose main() is the warm process
    mask_installed: bool  # hide installed copies of ``grader`` (the student room)

    def boot(self, code_parent: str) -> str:
        return (f"import sys; sys.path.insert(0, {code_parent!r}); "
                f"from {self.boot_module} import main; main()")

    def binds(self) -> list[str]:
        args = ["--ro-bind", str(self.package), f"{SANDBOX_CODE}/{self.package.name}"]
        if self.mask_installed:
            for path in installed_copies():
                args += ["--ro-bind", str(MASK), path]  # `pip install .` put the grader where the sandbox sees it
        return args

    def unsandboxed_command(self, python: str) -> list[str]:
        return [python, "-I", "-B", "-c", self.boot(str(self.package.parent))]


STUDENT = Room("student", INSIDE_PACKAGE, "inside.warm", mask_installed=True)
EXERCISE = Room("exercise", GRADER_PACKAGE, "grader.testing.warm", mask_installed=False)


def sandbox_python() -> str:
    """The path of this process's Python as the sandbox sees it."""
    if sys.prefix == sys.base_prefix:
        return sys.executable
    return os.path.join(SANDBOX_VENV, os.path.relpath(sys.executable, sys.prefix))


def bwrap_command(*, cuda: bool, uid: int, tmp_bytes: int = 512 << 20, room: Room = STUDENT,
                  argv: list[str] | None = None, extra: list[str] = ()) -> list[str]:
    """The bubblewrap command line for one warm process.

    As root, bubblewrap runs privileged with three capabilities, which the warm process
    uses to mount a /tmp of ``tmp_bytes`` and to drop to the uids ``uid`` (itself) and
    ``uid + 1`` (its children) before it reads any request; it keeps none of them.
    ``argv`` replaces the warm process's arguments to Python (the benchmark's baseline
    runs pytest instead), ``extra`` adds bubblewrap options.
    """
    cmd = ["bwrap", "--die-with-parent", "--new-session", "--as-pid-1",
           "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
           "--hostname", "sandbox"]
    if os.geteuid() == 0:
        # Privileged bwrap without a user namespace, so that the warm process can
        # drop to a real unprivileged uid (RLIMIT_NPROC then holds) and nothing
        # owned by root outside looks like ours inside.
        cmd += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SYS_ADMIN"]
    else:
        cmd += ["--unshare-user", "--uid", "65534", "--gid", "65534"]
    for top in ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        path = f"/{top}"
        if os.path.islink(path):
            cmd += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            cmd += ["--ro-bind", path, path]
    for path in ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime"):
        cmd += ["--ro-bind-try", path, path]
    base = os.path.realpath(sys.base_prefix)
    if not base.startswith("/usr/"):
        cmd += ["--ro-bind", base, base]  # where the virtual environment says its Python is
    if sys.prefix != sys.base_prefix:
        # At a fixed place: the checkout may be anywhere, /tmp included, which the
        # sandbox replaces with its own.
        cmd += ["--ro-bind", os.path.realpath(sys.prefix), SANDBOX_VENV]
    cmd += room.binds()
    cmd = _with_open_parents(cmd)
    cmd += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--tmpfs", "/tmp",
            "--chdir", "/tmp", "--clearenv"]
    env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8", "PYTHONUNBUFFERED": "1",
           "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "GRADER_IN_SANDBOX": "1", "GRADER_SANDBOX_UID": str(uid), "GRADER_TMP_BYTES": str(tmp_bytes)}
    if cuda:
        for node in sorted(glob.glob("/dev/nvidia*")):
            cmd += ["--dev-bind", node, node]
        cmd += ["--ro-bind", "/sys", "/sys"]
        for path in ("/etc/nvidia",):  # /usr/local/{cuda,nvidia} come with /usr (binding a
            cmd += ["--ro-bind-try", path, path]  # symlink there onto itself fails)
        if os.environ.get("LD_LIBRARY_PATH"):
            env["LD_LIBRARY_PATH"] = os.environ["LD_LIBRARY_PATH"]
    for key, value in env.items():
        cmd += ["--setenv", key, value]
    argv = argv if argv is not None else ["-I", "-B", "-c", room.boot(SANDBOX_CODE)]
    return cmd + list(extra) + ["--", sandbox_python(), *argv]


def installed_copies(locations: list[str] | None = None) -> list[str]:
    """Where the sandbox would see the ``grader`` package: a non-editable install puts it
    into the virtual environment or /usr/local, both mounted. Over each goes ``masked/``,
    whose ``__init__`` refuses the import, so that only ``inside/`` is importable there."""
    if locations is None:
        import importlib.util

        spec = importlib.util.find_spec("grader")
        locations = list(spec.submodule_search_locations or []) if spec else []
    venv, base = os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix)
    hidden = []
    for location in locations:
        real = os.path.realpath(location)
        if sys.prefix != sys.base_prefix and _under(real, venv):
            hidden.append(os.path.join(SANDBOX_VENV, os.path.relpath(real, venv)))
        elif _under(real, base) or any(_under(real, f"/{top}") for top in ("usr", "lib", "lib64")):
            hidden.append(real)
    return hidden


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _with_open_parents(cmd: list[str]) -> list[str]:
    """bwrap makes missing parents of a mount point 0700; the sandbox user must pass them."""
    targets = [cmd[i + 2] for i, arg in enumerate(cmd)
               if arg in ("--ro-bind", "--ro-bind-try", "--symlink", "--dev-bind")]
    parents = sorted({str(p) for t in targets for p in Path(t).parents if str(p) != "/"},
                     key=lambda p: p.count("/"))
    opened = []
    for parent in parents:
        opened += ["--perms", "0755", "--dir", parent]
    split = cmd.index("--hostname") + 2
    return cmd[:split] + opened + cmd[split:]
