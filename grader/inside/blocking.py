"""Switching torch APIs off inside a call's child, before the submission is imported.

The trusted side sends each blocked path followed by its aliases (the other modules that
hold the same function, such as ``torch._functorch.eager_transforms.jacrev`` for
``torch.func.jacrev``). A blocked module is replaced in ``sys.modules`` and on its parent;
a blocked function is replaced in each module already loaded that holds it. An import
finder placed first refuses to load any of them afresh, so deleting a module from
``sys.modules`` and importing it again, or ``importlib.reload``, does not bring one back.

This is a speed bump, not a wall: it runs in the submission's own process, which can undo
it with code built at run time. The trusted side's reading of the source (and the
values the tests check) is what counts; this catches the plain use at run time.
"""

from __future__ import annotations

import importlib.abc
import sys
import types


def _message(path: str) -> str:
    return f"{path} is not available in this exercise: compute it yourself with autograd"


class _Blocked(types.ModuleType):
    def __getattr__(self, name):
        # RuntimeError, not AttributeError: `from torch.func import jacrev` must say why,
        # not report a name that is not there.
        raise RuntimeError(_message(self.__name__))


class _RefuseImport(importlib.abc.MetaPathFinder):
    """First on sys.meta_path: blocked modules, and modules holding a blocked function,
    are never loaded again (a reload asks the finders first)."""

    def __init__(self, packages: dict[str, str], holders: dict[str, str]):
        # module name -> the blocked path it would bring back: blocked modules with all
        # below them, and the modules that hold a blocked function (themselves only).
        self.packages, self.holders = packages, holders

    def find_spec(self, name, path=None, target=None):
        blocked = self.holders.get(name)
        for package, path_ in self.packages.items():
            if name == package or name.startswith(package + "."):
                blocked = path_
        if blocked is not None:
            raise RuntimeError(_message(blocked))
        return None


def _attribute_path(dotted: str):
    """What a dotted name reaches through attributes of a loaded module (torch.ops.aten)."""
    top, *rest = dotted.split(".")
    value = sys.modules.get(top)
    try:
        for part in rest:
            value = getattr(value, part, None) if value is not None else None
    except Exception:  # noqa: BLE001 - a blocked module refuses every attribute
        return None
    return value


def block(paths: list[str]) -> None:
    """Make each dotted path unavailable to the code imported after this."""
    packages: dict[str, str] = {}
    holders: dict[str, str] = {}
    for path in paths:
        if not isinstance(path, str) or not path:
            continue
        module_name, _, attr = path.rpartition(".")
        target = sys.modules.get(path)
        if target is None and (not module_name or _attribute_path(module_name) is None):
            # Not loaded (functorch, or the module holding a blocked function): loading it
            # is what is refused. Nothing is imported here: in every call that costs.
            if module_name:
                holders.setdefault(module_name, path)
            else:
                packages[path] = path
            continue
        if isinstance(target, _Blocked):
            continue
        if isinstance(target, types.ModuleType):
            below = path + "."
            loaded = [n for n in sys.modules if n.startswith(below)] if hasattr(target, "__path__") else []
            for name in loaded + [path]:
                sys.modules[name] = _Blocked(name)
            parent = sys.modules.get(module_name)
            if parent is not None and module_name:
                setattr(parent, attr, sys.modules[path])
            packages[path] = path
        elif module_name:
            holder = sys.modules.get(module_name) or _attribute_path(module_name)
            if isinstance(holder, _Blocked):
                continue

            def refuse(*_args, _path=path, **_kwargs):
                raise RuntimeError(_message(_path))

            setattr(holder, attr, refuse)
            holders.setdefault(module_name, path)
    if packages or holders:
        sys.meta_path.insert(0, _RefuseImport(packages, holders))
