"""The API fuzzed at length: tests/test_api_fuzz.py with many more examples per operation.

The same run as the suite's bounded one (tests/api_fuzzing.py: schemathesis against the document
the app serves, on SQLite and a Redis of its own, every operation with a key holding every scope,
keys lacking the operation's, no key and malformed Authorization headers, and bodies mangled on
the wire), scaled up; by default derandomized like the suite's, with --random a new search each
time.

    .venv/bin/python bench/api_fuzz.py [--scale 10] [--random] [--only "POST /submissions"]

Prints every distinct finding (operation, way of calling, check, one example) and the slowest
operations; exits 1 when there is any.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=10, help="examples per operation, times the suite's")
    parser.add_argument("--random", action="store_true", help="a new random search, not the suite's fixed one")
    parser.add_argument("--only", help="operations whose 'METHOD /path' contains this")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "findings.txt"
        env = {**os.environ, "API_FUZZ_EXAMPLES_SCALE": str(args.scale), "API_FUZZ_REPORT": str(report)}
        if args.random:
            env["API_FUZZ_RANDOM"] = "1"
        if args.only:
            env["API_FUZZ_ONLY"] = args.only
        started = time.monotonic()
        run = subprocess.run([sys.executable, "-m", "pytest", "tests/test_api_fuzz.py", "-q", "-s", "-p", "no:xdist",
                              "-p", "no:cacheprovider", "-W", "ignore::DeprecationWarning", "--tb=no"],
                             cwd=ROOT, env=env, capture_output=True, text=True)
        seconds = time.monotonic() - started
        findings = report.read_text(encoding="utf-8").strip() if report.exists() else ""
    slowest = next((line for line in run.stdout.splitlines() if line.startswith("slowest operations:")), "")
    print(f"scale {args.scale:g} ({'random' if args.random else 'derandomized'}), {seconds:.0f} s")
    if slowest:
        print(slowest)
    if not report_written(findings, run):
        print(run.stdout[-4000:], run.stderr[-4000:], sep="\n")
        return 2
    count = sum(1 for line in findings.splitlines() if line and not line.startswith(" "))
    print(f"{count} findings" + (":\n" + findings if findings else ""))
    return 1 if findings else 0


def report_written(findings: str, run: subprocess.CompletedProcess) -> bool:
    """The run got as far as fuzzing (the test passed, or failed on findings alone)."""
    return run.returncode == 0 or bool(findings)


if __name__ == "__main__":
    sys.exit(main())
