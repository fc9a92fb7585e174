"""What of a Korean text is still English: its ASCII words outside code.

Code is what a student types or reads in their code: a `span`, anything with a dot,
parenthesis, bracket, underscore, operator, quote or digit in it (``x.grad``, ``backward()``,
``dtype=x.dtype``, ``'None'``, ``float64``), a {placeholder}, and the names a Korean text may
use bare: Python's keywords and built-ins, the names of the exercise's own code, the
torch names below, and a signal's name (``SIGSEGV``, as the operating system and Python's
signal module spell it). Every other ASCII word of three letters or more is English left in.
"""

from __future__ import annotations

import ast
import builtins
import keyword
import re
from pathlib import Path

# torch's names that Korean texts use bare, and product names that are not translated.
API_NAMES = {
    "torch", "autograd", "dtype", "inf", "nan", "NaN", "grad", "gradient", "backward", "forward", "detach", "exp",
    "softplus", "softmax", "sigmoid", "autocast", "SGD", "Linear", "self", "cpu", "cuda", "PyTorch", "CUDA", "CPU", "GPU",
    "NumPy",
}
PYTHON_NAMES = set(keyword.kwlist) | set(dir(builtins))

_SPAN = re.compile(r"`[^`]*`|\{[^{}]*\}")
_SPLIT = re.compile(r"[\s\uac00-\ud7a3\u3131-\u318e·,:;!?…“”‘’]+")
_CODE = re.compile(r"[.()\[\]{}_=<>*/+\-'\"0-9@#%&|\\^~]")
_SIGNAL = re.compile(r"SIG[A-Z]+")


def code_names(folder: Path) -> set[str]:
    """The names of an exercise's own code (solution, starter, probes), without leading or
    trailing underscores (``unscale_`` is said "unscale")."""
    names: set[str] = set()
    for name in ("solution.py", "starter.py", "probes.py"):
        path = folder / name
        if not path.exists():
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            for found in (getattr(node, "id", None), getattr(node, "attr", None), getattr(node, "arg", None),
                          getattr(node, "name", None) if isinstance(node, (ast.FunctionDef, ast.ClassDef)) else None):
                if isinstance(found, str):
                    names.add(found.strip("_"))
    return names


def english_words(text: str, allowed: set[str] = frozenset()) -> list[str]:
    """The ASCII words of three letters or more in ``text`` that are neither code nor
    ``allowed``."""
    words = []
    for chunk in _SPLIT.split(_SPAN.sub(" ", text)):
        if not chunk or _CODE.search(chunk):
            continue
        words += [w for w in re.findall(r"[A-Za-z]{3,}", chunk)
                  if w not in allowed and w not in API_NAMES and w not in PYTHON_NAMES and not _SIGNAL.fullmatch(w)]
    return words
