"""APIs an exercise switches off, found in a submission's source before it runs.

The sandbox also blocks them while the submission runs, but that block lives in the
submission's own process, where code can undo it. So the trusted side reads the source
too, with the ast module (executing nothing), for every name under which a blocked API
can be reached: the dotted path itself and its aliases, the other modules that hold the
very same object (``torch._functorch.eager_transforms.jacrev`` is ``torch.func.jacrev``).

It follows imports (``import torch.func as tf``, ``from torch import func``), attribute
chains on imported names and on names assigned from them, ``getattr`` with a literal
name, and strings that spell a blocked path (``importlib.import_module("torch.func")``).
Names built at run time it cannot see; see the README.
"""

from __future__ import annotations

import ast
import functools
import importlib
import sys
import types
from dataclasses import dataclass

from grader.protocol.text import Text, _

# Modules whose attributes are not where an API lives for a submission.
_SKIP_MODULES = ("__main__", "__mp_main__", "submission", "probes")


@dataclass(frozen=True)
class BlockedUse:
    blocked: str   # the path the exercise blocks, as its exercise.toml says
    used: str      # the dotted name the source reaches it by
    alias_of: str  # the public name of what `used` names (itself, or e.g. torch.func.jacrev)
    line: int
    text: str      # that line of the source

    def message(self) -> str:
        return self.said().en

    def said(self) -> Text:
        """What the report says of this use, in each language (the line of code as it is)."""
        same = "" if self.used == self.alias_of or self.used.startswith(self.alias_of + ".") \
            else _SAME.format(alias_of=self.alias_of)
        return _NOT_AVAILABLE.format(blocked=self.blocked, line=self.line, used=self.used, same=same,
                                     text=self.text.strip()[:120])


_NOT_AVAILABLE = _("{blocked} is not available in this exercise: line {line} of submission.py uses {used}{same} "
                   "({text}). Compute it yourself with autograd.")
_SAME = _(", which is {alias_of} under another name")


def _resolve(path: str):
    """The module or object a dotted path names, or None."""
    try:
        return importlib.import_module(path)
    except ImportError:
        pass
    parent, _, attr = path.rpartition(".")
    if not parent:
        return None
    try:
        return getattr(importlib.import_module(parent), attr, None)
    except ImportError:
        return None


# Names that hold wrappers rather than the same objects: functorch is torch.func's old name.
_FORMER_NAMES = {"torch.func": ("functorch",)}


def _holders(objects: dict[int, str]) -> dict[str, str]:
    """Every ``module.attribute`` of the loaded modules that is one of ``objects`` (by id),
    mapped to that object's canonical name."""
    found = {}
    for name, module in list(sys.modules.items()):
        if not isinstance(module, types.ModuleType) or name.split(".")[0] in _SKIP_MODULES:
            continue
        try:
            items = list(vars(module).items())
        except TypeError:
            continue
        for attr, value in items:
            canonical = objects.get(id(value))
            if canonical is not None:
                found[f"{name}.{attr}"] = canonical
    return found


@functools.cache
def aliases(path: str) -> dict[str, str]:
    """The names a blocked ``path`` can be reached by, each mapped to what it is (itself,
    or the public name it is an alias of): for a module, the module and everything under
    it, and the other names of each of its public functions and classes; for a function,
    the other names of it."""
    target = _resolve(path)
    objects: dict[int, str] = {}
    if isinstance(target, types.ModuleType):
        for attr, value in list(vars(target).items()):
            if not attr.startswith("_") and callable(value) and not isinstance(value, types.ModuleType):
                objects[id(value)] = f"{path}.{attr}"
    elif target is not None and callable(target):
        objects[id(target)] = path
    names = _holders(objects) if objects else {}
    if isinstance(target, types.BuiltinFunctionType) and _is_aten_op(target.__name__):
        # A binding of torch's C library: the operator it calls is the same thing again.
        names[f"torch.ops.aten.{target.__name__}"] = path
    names[path] = path
    names.update({former: path for former in _FORMER_NAMES.get(path, ())})
    return names


def _is_aten_op(name: str) -> bool:
    import torch

    try:
        return isinstance(getattr(torch.ops.aten, name), torch._ops.OpOverloadPacket)
    except (AttributeError, RuntimeError):
        return False


def expanded(block: tuple[str, ...]) -> tuple[str, ...]:
    """The exercise's blocked paths followed by all their aliases, for the sandbox's block."""
    extra = sorted({name for path in block for name in aliases(path)} - set(block))
    return tuple(block) + tuple(extra)


def find_uses(source: str, block: tuple[str, ...]) -> list[BlockedUse]:
    """Where ``source`` names a blocked API, in order of lines. Parsing executes nothing."""
    if not block:
        return []
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []  # the source check reports it
    table = {path: aliases(path) for path in block}
    lines = source.splitlines()
    bindings = _bindings(tree)
    uses: dict[int, BlockedUse] = {}

    def check(dotted: str | None, node: ast.AST) -> None:
        if not dotted or node.lineno in uses:
            return
        for path, names in table.items():
            hit = next((n for n in names if dotted == n or dotted.startswith(n + ".")), None)
            if hit is not None:
                text = lines[node.lineno - 1] if 0 < node.lineno <= len(lines) else ""
                uses[node.lineno] = BlockedUse(path, dotted, names[hit], node.lineno, text)
                return

    def star(module: str, node: ast.AST) -> None:
        # `from m import *` brings in every blocked name that lives in m.
        for path, names in table.items():
            hit = next((n for n in sorted(names) if n.startswith(module + ".") or n == module), None)
            if hit:
                check(hit, node)

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                check(alias.name, node)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:  # the names first: the report names what was taken
                if alias.name == "*":
                    star(node.module, node)
                else:
                    check(f"{node.module}.{alias.name}", node)
            check(node.module, node)
        elif isinstance(node, ast.Attribute):
            for dotted in _dotted(node, bindings):
                check(dotted, node)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" \
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) \
                and isinstance(node.args[1].value, str):
            for base in _dotted(node.args[0], bindings):
                check(f"{base}.{node.args[1].value}", node)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) < 200:
            check(node.value, node)
    return [uses[line] for line in sorted(uses)]


def _bindings(tree: ast.AST) -> dict[str, set[str]]:
    """Names bound to modules or objects anywhere in the source: imports, and plain
    assignments from those (``F = torch.nn.functional``), in every scope alike."""
    bound: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    bound.setdefault(alias.asname, set()).add(alias.name)
                else:
                    top = alias.name.split(".")[0]
                    bound.setdefault(top, set()).add(top)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                if alias.name != "*":
                    bound.setdefault(alias.asname or alias.name, set()).add(f"{node.module}.{alias.name}")
    for _ in range(3):  # assignments of assignments, a few deep
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                for dotted in _dotted(node.value, bound):
                    bound.setdefault(node.targets[0].id, set()).add(dotted)
    return bound


def _dotted(node: ast.AST, bound: dict[str, set[str]]) -> set[str]:
    """The dotted names an expression such as ``tf.jacrev`` can stand for."""
    attrs = []
    while isinstance(node, ast.Attribute):
        attrs.append(node.attr)
        node = node.value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" \
            and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
        bases = {f"{b}.{node.args[1].value}" for b in _dotted(node.args[0], bound)}
    elif isinstance(node, ast.Name):
        bases = bound.get(node.id, set())
    else:
        return set()
    suffix = "".join(f".{a}" for a in reversed(attrs))
    return {b + suffix for b in bases}
