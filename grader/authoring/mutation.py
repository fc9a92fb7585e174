"""Mutation check: change the reference solution in small, typical ways and grade each change.

A mutant that still gets full marks is a hole in the hidden tests (or a change that is
really still correct, which the author says in mutants/equivalent.toml). The operators are
the mistakes the course warns about: a dropped ``zero_grad``/``retain_grad``/``detach``/``no_grad``,
``backward`` swapped for ``torch.autograd.grad``, a dropped ``.item()``, an in-place
update turned into a rebinding, a flipped comparison, a changed constant.
"""

from __future__ import annotations

import ast
import copy
import tomllib
from dataclasses import dataclass
from typing import Iterator

from grader.bundle import Bundle
from grader.engine import grade

_FLIPS = {ast.Lt: ast.GtE, ast.LtE: ast.Gt, ast.Gt: ast.LtE, ast.GtE: ast.Lt, ast.Eq: ast.NotEq,
          ast.NotEq: ast.Eq}
_DROPPED_CALLS = ("zero_grad", "zero_", "retain_grad")


@dataclass
class Mutant:
    name: str      # operator@line, e.g. "drop zero_grad()@12"
    source: str


def _method(node: ast.AST) -> str | None:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.attr
    return None


class _Sites(ast.NodeVisitor):
    """Every place an operator applies, as (description, path to the node)."""

    def __init__(self):
        self.sites: list[tuple[str, ast.AST]] = []

    def generic_visit(self, node):
        if isinstance(node, ast.Expr) and _method(node.value) in _DROPPED_CALLS:
            self.sites.append((f"drop {_method(node.value)}()", node))
        if isinstance(node, ast.Expr) and _method(node.value) == "backward":
            self.sites.append(("backward -> autograd.grad", node))
        if _method(node) in ("detach", "item", "clone") and not node.args:
            self.sites.append((f"drop .{_method(node)}()", node))
        if isinstance(node, ast.With) and any(
                _method(item.context_expr) == "no_grad" for item in node.items):
            self.sites.append(("drop no_grad", node))
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            self.sites.append(("in-place -> rebinding", node))
        if isinstance(node, ast.Compare) and type(node.ops[0]) in _FLIPS:
            self.sites.append(("flip comparison", node))
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) \
                and not isinstance(node.value, bool):
            self.sites.append((f"constant {node.value!r}", node))
        super().generic_visit(node)


class _Apply(ast.NodeTransformer):
    """Apply one operator to the one node at ``target`` (matched by identity in a copy)."""

    def __init__(self, target: ast.AST, kind: str):
        self.target, self.kind = target, kind

    def visit(self, node):
        if node is not self.target:
            return super().visit(node)
        kind = self.kind
        if kind.startswith("drop ") and kind.endswith("()") and isinstance(node, ast.Expr):
            return ast.Pass()
        if kind == "backward -> autograd.grad":
            call = node.value
            return ast.Expr(_autograd_grad(call))
        if kind.startswith("drop .") and isinstance(node, ast.Call):
            return node.func.value
        if kind == "drop no_grad":
            return node.body
        if kind == "in-place -> rebinding":
            return ast.Assign(targets=[ast.Name(node.target.id, ast.Store())],
                              value=ast.BinOp(ast.Name(node.target.id, ast.Load()), node.op, node.value))
        if kind == "flip comparison":
            node.ops = [_FLIPS[type(node.ops[0])]()] + node.ops[1:]
            return node
        if kind.startswith("constant "):
            value = node.value
            return ast.Constant(value + 1 if isinstance(value, int) else (value * 2 if value else 1.0))
        return node


def _autograd_grad(call: ast.Call) -> ast.Call:
    """y.backward(...) -> torch.autograd.grad(y, <every leaf requiring grad reachable from y>)."""
    helper = ast.parse("__import__('torch').autograd.grad(Y, _leaves(Y), allow_unused=True)").body[0].value
    helper.args[0] = call.func.value
    helper.args[1].args[0] = copy.deepcopy(call.func.value)
    return helper


_LEAVES = '''
def _leaves(y):
    """The leaves that require grad under y (for a backward() turned into autograd.grad)."""
    seen, found, todo = set(), [], [y.grad_fn]
    while todo:
        fn = todo.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        if hasattr(fn, "variable"):
            found.append(fn.variable)
        todo.extend(f for f, _ in fn.next_functions)
    return found
'''


def mutants(source: str) -> Iterator[Mutant]:
    """Every single-site mutant of ``source`` that still parses and differs from it."""
    tree = ast.parse(source)
    finder = _Sites()
    finder.visit(tree)
    seen = {ast.unparse(tree)}
    for index, (kind, _) in enumerate(finder.sites):
        copy_tree = copy.deepcopy(tree)
        sites = _Sites()
        sites.visit(copy_tree)
        _, node = sites.sites[index]
        line = getattr(node, "lineno", 0)
        mutated = ast.fix_missing_locations(_Apply(node, kind).visit(copy_tree))
        text = ast.unparse(mutated)
        if kind == "backward -> autograd.grad":
            text += "\n" + _LEAVES
        if text in seen:
            continue
        seen.add(text)
        yield Mutant(f"{kind}@{line}", text)


@dataclass
class MutationResult:
    exercise: str
    mutant: str
    score: float
    max_score: float
    status: str
    equivalent: str | None = None  # why this change is still a correct solution, if the author said so

    @property
    def survived(self) -> bool:
        return self.status == "graded" and self.score == self.max_score

    @property
    def hole(self) -> bool:
        """A survivor nobody has explained: the tests miss a wrong answer."""
        return self.survived and not self.equivalent


def equivalents(bundle: Bundle) -> dict[str, str]:
    """``mutants/equivalent.toml``: mutant name -> why it is still correct."""
    path = bundle.path / "mutants" / "equivalent.toml"
    return {k: str(v) for k, v in tomllib.loads(path.read_text(encoding="utf-8")).items()} if path.is_file() else {}


def run(bundle: Bundle, on_result=None) -> list[MutationResult]:
    """Grade every mutant of the bundle's solution; a survivor scores full marks."""
    results = []
    explained = equivalents(bundle)
    for mutant in mutants(bundle.read("solution.py")):
        report = grade(bundle, mutant.source)
        result = MutationResult(bundle.slug, mutant.name, report.score, report.max_score, report.status,
                                explained.get(mutant.name))
        results.append(result)
        if on_result:
            on_result(result)
    return results


def format_results(results: list[MutationResult]) -> str:
    lines = []
    by_exercise: dict[str, list[MutationResult]] = {}
    for r in results:
        by_exercise.setdefault(r.exercise, []).append(r)
    for slug, rows in by_exercise.items():
        survivors = [r for r in rows if r.survived]
        lines.append(f"{slug}: {len(rows)} mutants, {len(rows) - len(survivors)} killed, "
                     f"{len(survivors)} surviving ({sum(r.hole for r in survivors)} unexplained)")
        lines.extend(f"  SURVIVES {r.mutant}  ({r.score:g}/{r.max_score:g})" +
                     (f"  equivalent: {r.equivalent}" if r.equivalent else "") for r in survivors)
    return "\n".join(lines)
