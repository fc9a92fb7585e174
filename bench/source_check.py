"""What checking a source costs the web process (grader.source.check: normalise, then
compile, never run) at the size limit, in milliseconds, against ``ast.parse`` of the same text.

    .venv/bin/python bench/source_check.py [--n 7]

Shapes, each filled to MAX_SOURCE_BYTES: an exercise's solution repeated (real code), one
short statement per line (the most statements a source can hold), and long chains that
the parser refuses as nested too deeply. check() remembers the few latest sources that
parsed, so each run here clears that memory first.
"""

from __future__ import annotations

import argparse
import ast
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from grader import source  # noqa: E402
from grader.settings import MAX_SOURCE_BYTES  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def shapes() -> dict[str, str]:
    solution = (ROOT / "exercises" / "autograd-basics" / "solution.py").read_text()
    return {
        "solution repeated": solution * (MAX_SOURCE_BYTES // len(solution.encode())),
        "solution, CRLF": (solution * (MAX_SOURCE_BYTES // len(solution.encode()) - 1)).replace("\n", "\r\n"),
        "'x = 1' per line": "x = 1\n" * (MAX_SOURCE_BYTES // 6),
        "x[0][0]... (refused)": "x" + "[0]" * ((MAX_SOURCE_BYTES - 1) // 3),
        "a+a+... (refused)": "a" + "+a" * ((MAX_SOURCE_BYTES - 1) // 2),
    }


def timed(step, n: int) -> list[float]:
    times = []
    for _ in range(n):
        source._parse.cache_clear()
        start = time.perf_counter()
        try:
            step()
        except (source.SourceError, SyntaxError, ValueError, RecursionError, MemoryError):
            pass
        times.append((time.perf_counter() - start) * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=7)
    n = parser.parse_args().n
    print(f"{'shape':22s} {'bytes':>7s}  {'check p50':>9s} {'max':>7s}   {'ast.parse p50':>13s}")
    for name, text in shapes().items():
        ours = timed(lambda: source.check(text), n)
        theirs = timed(lambda: ast.parse(text), n)
        print(f"{name:22s} {len(text.encode()):7d}  {statistics.median(ours):7.1f}ms {max(ours):5.1f}ms"
              f"   {statistics.median(theirs):11.1f}ms")


if __name__ == "__main__":
    main()
