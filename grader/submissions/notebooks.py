"""Notebooks (.ipynb) as submissions: the plain Python that is graded, and a map from
its lines back to the notebook's cells.

Reads and rewrites text only; nothing here runs a cell. The rules, which the README
tells students:

- the notebook is read with nbformat and must validate as nbformat 4, with at most
  ``MAX_NOTEBOOK_CELLS`` cells in at most ``MAX_NOTEBOOK_BYTES`` of JSON;
- its code cells are taken in order; markdown and raw cells are left out, and so is a
  cell tagged ``skip-grading`` (the cell's metadata ``tags``);
- IPython's own syntax becomes comments, so that what is graded is plain Python: a cell
  whose first line starts with ``%%`` (a cell magic) is commented whole, and so is a line
  that starts a statement with ``%`` or ``!`` (``%matplotlib inline``, ``!pip install``)
  or assigns one (``files = !ls``, ``t = %timeit f(x)``); indented, such a line becomes
  ``pass  # ...`` so that its block stays valid;
- each cell begins with a marker line ``# %% cell N``, N counting every cell of the
  notebook from 1, markdown cells included.

The graded source passes grader.source's rules like any other (``MAX_SOURCE_BYTES``).
Refusals are SourceErrors with the codes ``notebook_invalid`` and ``notebook_too_large``,
and ``syntax_error`` naming the cell and the line within it (with ``cell``/``cell_line``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import nbformat

from grader import source as source_rules
from grader.refusals import _
from grader.settings import MAX_NOTEBOOK_BYTES, MAX_NOTEBOOK_CELLS
from grader.source import SourceError, is_notebook_name  # noqa: F401  (the pages ask it here)

SKIP_TAG = "skip-grading"
MARKER = "# %% cell {cell}"
# "cell 3, line 2" beside a line number of the graded source, in each language a report speaks.
LOCATION = {"en": "cell {cell}, line {line}", "ko": "셀 {cell}, {line}행"}

# A statement that assigns the output of a magic or a shell command: `x = !ls`, `a, b = %who_ls`.
_ASSIGNED_MAGIC = re.compile(r"(?:[A-Za-z_][\w.]*\s*,\s*)*[A-Za-z_][\w.]*\s*=\s*[%!]")
# A line number of the graded source, as tracebacks, syntax errors and blocked APIs name it
# (in Korean, `submission.py 12행`).
_LINE_OF_SOURCE = re.compile(r'submission\.py"?, line (\d+)|line (\d+) of submission\.py|submission\.py (\d+)행')
# A line number in the parser's words: "expected an indented block after 'if' statement on line 4".
_LINE_IN_REASON = re.compile(r"\bline (\d{1,9})\b")


@dataclass(frozen=True)
class Converted:
    """A notebook as graded: its source, and for each cell taken (number, the source line
    its first line became, how many lines it has)."""

    source: str
    cells: tuple[tuple[int, int, int], ...]

    def cell_map(self) -> dict:
        """What is stored with the submission (Submission.notebook)."""
        return {"cells": [list(cell) for cell in self.cells]}


class Notebook:
    """A notebook as submitted (a file's bytes, or the API's JSON object), read when first
    asked: every way in hands it to grader.submissions in place of a source."""

    def __init__(self, raw: bytes | str | dict):
        self.raw = raw
        self._converted: Converted | None = None

    def converted(self) -> Converted:
        if self._converted is None:
            self._converted = convert(self.raw)
        return self._converted


def _invalid(words: str, **values) -> SourceError:
    """A notebook refused: ``words`` in English with ``values``, the message API clients
    read; the pages say ``words`` in the reader's language (``why``, grader.web.render)."""
    return SourceError("notebook_invalid", words % values, why=words, why_values=values)


# ------------------------------------------------------------------ reading

def read(raw: bytes | str | dict) -> dict:
    """The notebook as a validated nbformat 4 dict, or SourceError saying what is wrong."""
    if isinstance(raw, dict):
        try:
            size = len(json.dumps(raw, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
        except (ValueError, TypeError, RecursionError, UnicodeEncodeError):
            raise _invalid(_("the notebook is not JSON that can be read")) from None
        _check_size(size)
        data = raw
    else:
        if isinstance(raw, str):
            raw = raw.encode("utf-8", "surrogatepass")
        _check_size(len(raw))
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise _invalid(_("the file is not UTF-8 text (byte %(byte)d); a notebook is JSON in UTF-8"),
                           byte=exc.start) from None
        try:
            data = json.loads(text)
        except RecursionError:
            raise _invalid(_("the file is not a notebook: its JSON is nested too deep")) from None
        except ValueError as exc:
            raise _invalid(_("the file is not a notebook: it is not JSON (%(error)s)"), error=str(exc)[:120]) from None
    if not isinstance(data, dict) or "cells" not in data or "nbformat" not in data:
        raise _invalid(_("the file is not a Jupyter notebook: it has no 'nbformat' and 'cells'"))
    version, minor, cells = data.get("nbformat"), data.get("nbformat_minor"), data.get("cells")
    if type(version) is not int or version != 4:
        raise _invalid(_("the notebook is in nbformat %(version)s; only version 4 is read (open and save it in a "
                         "current Jupyter)"), version=str(version)[:20])
    if type(minor) is not int or minor < 0 or not isinstance(cells, list):
        raise _invalid(_("the notebook does not follow nbformat 4: 'nbformat_minor' must be a number and 'cells' "
                         "a list"))
    if len(cells) > MAX_NOTEBOOK_CELLS:
        raise SourceError("notebook_too_large", f"the notebook has {len(cells)} cells; "
                                                f"the limit is {MAX_NOTEBOOK_CELLS}")
    for number, cell in enumerate(cells, 1):
        if not isinstance(cell, dict):
            raise _invalid(_("cell %(number)d is not a notebook cell (not a JSON object)"), number=number)
    data = {**data, "cells": _with_ids(cells, minor)}
    try:
        nbformat.validate(data)
    except nbformat.ValidationError as exc:
        raise _not_nbformat(exc) from None
    except (AssertionError, TypeError, ValueError, KeyError, AttributeError):
        raise _invalid(_("the notebook does not follow nbformat 4")) from None
    return data


def _check_size(size: int) -> None:
    if size > MAX_NOTEBOOK_BYTES:
        raise SourceError("notebook_too_large", f"the notebook is {size} bytes; the limit is {MAX_NOTEBOOK_BYTES} "
                                                "(clear its outputs to make it smaller)")


def _with_ids(cells: list[dict], minor: int) -> list[dict]:
    """Copies of the cells with the ids nbformat 4.5 requires, unique. nbformat would add
    missing ones and rename repeated ones itself, in place and with a warning; neither is
    a reason to refuse a student's notebook."""
    if minor < 5:
        return cells
    seen: set[str] = set()
    copies = []
    for number, cell in enumerate(cells, 1):
        cell = dict(cell)
        if not isinstance(cell.get("id"), str) or cell["id"] in seen:
            cell["id"] = f"grader-cell-{number}"
        seen.add(cell["id"])
        copies.append(cell)
    return copies


def _not_nbformat(exc: nbformat.ValidationError) -> SourceError:
    """A validation error in a sentence: where in the notebook (in the reader's words), and
    what (the validator's own words)."""
    path = list(getattr(exc, "absolute_path", None) or [])
    message = str(getattr(exc, "message", None) or exc).splitlines()[0] if str(exc) else "invalid"
    values: dict = {}
    if len(path) >= 2 and path[0] == "cells" and isinstance(path[1], int):
        values = {"cell": path[1] + 1, "inside": ".".join(str(p) for p in path[2:])}
        place = f"cell {values['cell']}" + (f".{values['inside']}" if values["inside"] else "")
        words = (_("the notebook does not follow nbformat 4: cell %(cell)d.%(inside)s: %(problem)s") if values["inside"]
                 else _("the notebook does not follow nbformat 4: cell %(cell)d: %(problem)s"))
    elif path:
        values = {"path": ".".join(str(p) for p in path)}
        place, words = values["path"], _("the notebook does not follow nbformat 4: %(path)s: %(problem)s")
    else:
        place, words = "the notebook", _("the notebook does not follow nbformat 4: the notebook: %(problem)s")
    where = f"{place}: {message}"[:300]
    if len(place) + 2 > len(where):  # the place alone is longer than a message may be
        return _invalid(_("the notebook does not follow nbformat 4: %(where)s"), where=where)
    return _invalid(words, **values, problem=where[len(place) + 2:])


# ------------------------------------------------------------------ converting

def convert(raw: bytes | str | dict) -> Converted:
    """The notebook as the Python that is graded, or SourceError saying what is wrong."""
    notebook = read(raw)
    parts: list[str] = []
    cells: list[tuple[int, int, int]] = []
    line = 1
    for number, cell in enumerate(notebook["cells"], 1):
        if cell.get("cell_type") != "code" or SKIP_TAG in (cell.get("metadata") or {}).get("tags", []):
            continue
        text = cell.get("source", "")
        text = "".join(text) if isinstance(text, list) else text
        lines = text.replace("\r\n", "\n").replace("\r", "\n").rstrip().split("\n")
        if not "".join(lines).strip():
            continue
        parts.append(MARKER.format(cell=number) + "\n" + "\n".join(plain_python(lines)) + "\n")
        cells.append((number, line + 1, len(lines)))
        line += 1 + len(lines) + 1  # the marker, the cell, the blank line between cells
    if not cells:
        raise _invalid(_("the notebook has no code to grade: no code cell, or every code cell is empty or tagged "
                         "%(tag)s"), tag=SKIP_TAG)
    try:
        source = source_rules.check("\n".join(parts))
    except SourceError as exc:
        raise in_cells(exc, cells) from None
    return Converted(source=source, cells=tuple(cells))


def in_cells(error: SourceError, cells: list[tuple[int, int, int]]) -> SourceError:
    """A syntax error of the converted source told in the notebook's terms: the cell, the
    line within it, and any line number the parser's words name. A line between cells or
    past the last (a block left open at a cell's end) is the cell above's last line."""
    if error.code != "syntax_error" or error.line is None:
        return error
    def in_words(match: re.Match) -> str:
        number, line = _cell_of(cells, int(match.group(1)))
        return f"line {line} of cell {number}"

    cell, cell_line = _cell_of(cells, error.line)
    reason = _LINE_IN_REASON.sub(in_words, error.reason or "")
    place = f"cell {cell}, line {cell_line}" + (f", column {error.column}" if error.column else "")
    located = SourceError("syntax_error", f"syntax error in {place}: {reason}", line=error.line,
                          column=error.column, reason=reason)
    located.cell, located.cell_line = cell, cell_line
    return located


def _cell_of(cells: list[tuple[int, int, int]], line: int) -> tuple[int, int]:
    """(cell, line within it) of a line of the converted source, clamped to the cell above."""
    number, first, count = max((c for c in cells if c[1] <= line), key=lambda c: c[1], default=cells[0])
    return number, max(1, min(line - first + 1, count))


def plain_python(lines: list[str]) -> list[str]:
    """A cell's lines with IPython's magics and shell escapes turned into comments, line
    for line (the count never changes, so line numbers still point into the cell)."""
    first = next((text for text in lines if text.strip()), "")
    if first.lstrip().startswith("%%"):  # a cell magic: the whole cell is its input
        return [("# " + text) if text.strip() else "#" for text in lines]
    out = []
    depth, quote, continued, in_magic = 0, None, False, False
    for text in lines:
        stripped = text.lstrip()
        starts = depth == 0 and quote is None and not continued
        if in_magic or (starts and (stripped.startswith(("%", "!")) or _ASSIGNED_MAGIC.match(stripped))):
            indent = text[: len(text) - len(stripped)]
            out.append(f"{indent}pass  # {stripped}" if indent and not in_magic else f"{indent}# {stripped}")
            in_magic = text.rstrip().endswith("\\")  # a magic continued on the next line
            continue
        out.append(text)
        depth, quote, continued = _scan(text, depth, quote)
    return out


def _scan(text: str, depth: int, quote: str | None) -> tuple[int, str | None, bool]:
    """Where a line of Python leaves the next one: (open brackets, the string still open,
    whether it ends in a backslash). Enough to tell a line that starts a statement from
    one inside a bracket or a string, where `%` and `!` are Python's own."""
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if quote:
            if c == "\\":
                i += 2
            elif text.startswith(quote, i):
                i, quote = i + len(quote), None
            else:
                i += 1
            continue
        if c == "#":
            return depth, None, False
        if c in "\"'":
            quote = text[i:i + 3] if text[i:i + 3] in ('"""', "'''") else c
            i += len(quote)
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth = max(0, depth - 1)
        i += 1
    continued = text.endswith("\\") and not text.endswith("\\\\")
    if quote in ("'", '"') and not continued:
        quote = None  # a one-line string left open is a syntax error, not a string going on
    return depth, quote, continued


# ------------------------------------------------------------------ pointing back into the notebook

def locate(cell_map: dict | None, line: int) -> tuple[int, int] | None:
    """(cell, line in that cell) of a line of the graded source; None outside every cell."""
    for number, first, count in (cell_map or {}).get("cells", []):
        if first <= line < first + count:
            return number, line - first + 1
    return None


def annotate(text: str | None, cell_map: dict | None, lang: str = "en") -> str | None:
    """``text`` with "(cell 3, line 2)" after every line number of the graded source it names
    (`File "submission.py", line 12`, `submission.py, line 12`, `line 12 of submission.py`,
    `submission.py 12행`)."""
    if not text or not cell_map:
        return text
    label = LOCATION.get(lang, LOCATION["en"])

    def place(match: re.Match) -> str:
        number = match.group(1) or match.group(2) or match.group(3)
        found = locate(cell_map, int(number)) if len(number) < 10 else None
        if found is None:
            return match.group(0)
        shown = " (" + label.format(cell=found[0], line=found[1]) + ")"
        if match.group(1) or match.group(3):
            return match.group(0) + shown
        return f"line {number}{shown} of submission.py"

    return _LINE_OF_SOURCE.sub(place, text)


def located_report(report: dict | None, cell_map: dict | None) -> dict | None:
    """A copy of a stored report whose messages say which cell each line number is in
    (each language's message with its own words)."""
    if not report or not cell_map:
        return report
    located = dict(report)
    if "message" in report:
        located["message"] = annotate(report["message"], cell_map)
    if report.get("i18n"):
        located["i18n"] = {lang: ({**texts, "message": annotate(texts.get("message"), cell_map, lang)}
                                  if isinstance(texts, dict) and texts.get("message") else texts)
                           for lang, texts in report["i18n"].items()}
    tests = []
    for test in report.get("tests") or []:
        i18n = {lang: ({**texts, "message": annotate(texts.get("message"), cell_map, lang)}
                       if isinstance(texts, dict) and texts.get("message") else texts)
                for lang, texts in (test.get("i18n") or {}).items()}
        tests.append({**test, "message": annotate(test.get("message"), cell_map),
                      **({"i18n": i18n} if "i18n" in test else {})})
    if "tests" in report:
        located["tests"] = tests
    return located


def locate_in_place(report, cell_map: dict | None) -> None:
    """As :func:`located_report`, on a report as the engine returns it (a
    grader.protocol.report.Report), in place: its messages name the cell of each line."""
    if not cell_map:
        return
    located = located_report(report.to_dict(), cell_map)
    report.message, report.i18n = located["message"], located["i18n"]
    for test, shown in zip(report.tests, located["tests"]):
        test.message, test.i18n = shown["message"], shown["i18n"]


def described(cell_map: dict | None) -> dict | None:
    """The map as the API and webhooks show it: each cell taken, where it is in the graded source."""
    if not cell_map:
        return None
    return {"cells": [{"cell": number, "first_line": first, "lines": count}
                      for number, first, count in cell_map.get("cells", [])]}
