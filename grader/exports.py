"""The files the service hands out to be opened elsewhere: CSV that a spreadsheet reads as
data and never runs, with a header that names each column once, and the
Content-Disposition header that names a download in any script. A leaf: every surface and
domain that writes a file uses these, and nothing else writes one.
"""

from __future__ import annotations

import csv
import io
import re
import unicodedata
from collections import Counter
from urllib.parse import quote

# What makes a spreadsheet read a cell as a formula (OWASP's "CSV injection"): =, +, -, @,
# and a TAB or CR first; whitespace before any of them is skipped by some, so it is too.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def cell(value):
    """A CSV cell as a spreadsheet must read it: text that would start a formula, after any
    leading whitespace, gets a ' first, so it shows as the text it is. Numbers stay numbers."""
    if isinstance(value, str) and (value.startswith(_FORMULA_START) or value.lstrip().startswith(_FORMULA_START)):
        return "'" + value
    return value


def header(names: list[str], keys: list | None = None) -> list[str]:
    """Column names, each once. A name given to more than one column gets that column's
    key after it, ``Quiz (#12)`` (``keys``: one per name, such as an assignment's id); a
    name still taken after that is numbered, ``Quiz (2)``."""
    counts = Counter(names)
    if keys is not None:
        names = [f"{name} ({key})" if counts[name] > 1 else name for name, key in zip(names, keys, strict=True)]
    seen: set[str] = set()
    unique = []
    for name in names:
        wanted, number = name, 2
        while wanted in seen:
            wanted, number = f"{name} ({number})", number + 1
        seen.add(wanted)
        unique.append(wanted)
    return unique


def csv_text(names: list[str], lines: list[list]) -> str:
    """A CSV file (RFC 4180): a header naming each column once, then ``lines``, every cell
    guarded. Lines end in CRLF, which also makes the writer quote a cell holding a lone CR."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(header([cell(name) for name in names]))
    for line in lines:
        writer.writerow([cell(value) for value in line])
    return out.getvalue()


def _ascii_name(name: str) -> str:
    """The name as plain ASCII for clients that read only ``filename=``: accents dropped,
    any other run of characters (a Korean code, a quote, a space) one ``_``; a name with
    nothing left is ``download`` with its extension."""
    stem, dot, extension = name.rpartition(".") if "." in name else (name, "", "")

    def simple(text: str) -> str:
        letters = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
        return re.sub(r"[^A-Za-z0-9.-]+", "_", letters).strip("._")

    return (simple(stem) or "download") + (dot + simple(extension) if simple(extension) else "")


def attachment(name: str) -> str:
    """The Content-Disposition of a download called ``name`` (RFC 6266): an ASCII
    ``filename`` for old clients, and the name itself in UTF-8 as ``filename*`` (RFC 5987),
    which every current browser prefers. Slashes and control characters never reach it."""
    name = re.sub(r"[\x00-\x1f\x7f/\\]", "_", name)
    return f"attachment; filename=\"{_ascii_name(name)}\"; filename*=UTF-8''{quote(name, safe='')}"
