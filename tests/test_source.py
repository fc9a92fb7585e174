"""grader.source: what every way in checks before a submission is anything — text,
normalised (line endings, byte order mark), and Python that parses, without running it."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from grader import source
from grader.settings import MAX_SOURCE_BYTES
from grader.source import SourceError


@pytest.mark.parametrize("given", [
    "x = 1\r\ny = 2\r\n",          # a browser's textarea
    "x = 1\ry = 2\r",              # an old Mac editor
    "x = 1\r\ny = 2\n",            # mixed
    "\ufeffx = 1\ny = 2\n",        # a BOM decoded already
    b"\xef\xbb\xbfx = 1\r\ny = 2\r\n",  # a BOM as bytes, from an uploaded file
])
def test_line_endings_and_a_byte_order_mark_are_normalised(given):
    assert source.check(given) == "x = 1\ny = 2\n"


def test_only_a_leading_byte_order_mark_is_dropped():
    assert source.check("s = '\ufeff'\n") == "s = '\ufeff'\n"


@pytest.mark.parametrize("given, code", [
    ("x = 1\0\n", "source_invalid"),
    ("\ufeff\r\n \r\n", "source_empty"),
    (b"x = '\xff'\n", "source_not_utf8"),
    ("x = 1\n" * (MAX_SOURCE_BYTES // 6 + 1), "source_too_large"),
])
def test_the_rules_before_parsing_still_hold(given, code):
    with pytest.raises(SourceError) as refused:
        source.check(given)
    assert refused.value.code == code


@pytest.mark.parametrize("given, line, column, reason", [
    ("def f(x:\n    pass\n", 1, 6, "'(' was never closed"),
    ("x = 1\r\ny = $\r\n", 2, 5, "invalid syntax"),
    ("é = 1\né = $\n", 2, 5, "invalid syntax"),  # columns count characters, not bytes
    ("if x:\npass\n", 2, 1, "expected an indented block after 'if' statement on line 1"),
    ("nonlocal x\n", 1, 1, "nonlocal declaration not allowed at module level"),  # a scope error too
])
def test_a_syntax_error_says_where_and_why(given, line, column, reason):
    with pytest.raises(SourceError) as refused:
        source.check(given)
    error = refused.value
    assert (error.code, error.line, error.column, error.reason) == ("syntax_error", line, column, reason)
    assert error.where == {"line": line, "column": column}
    assert error.message == f"syntax error in submission.py, line {line}, column {column}: {reason}"


# Run in a fresh interpreter, in a thread (as a web server's request would be): a crash of the
# parser would take that process down, not the test run, and show here as its exit status.
_DEEP = textwrap.dedent("""
    import sys, threading
    from grader import source
    prefix = sys.argv[1]
    def check():
        try:
            source.check(prefix * min(100_000, (source.MAX_SOURCE_BYTES - 1) // len(prefix)) + "1")
        except source.SourceError as exc:
            print(exc.code, exc.line, exc.message)
    thread = threading.Thread(target=check)
    thread.start()
    thread.join()
""")


@pytest.mark.parametrize("prefix, says", [
    ("(", "line 1, column 201: too many nested parentheses"),
    ("[", "too many nested parentheses"),
    ("-", "nested too deeply"),
    ("not ", "nested too deeply"),
    ("lambda: ", "nested too deeply"),
    ("f(", "too many nested parentheses"),
])
def test_pathological_nesting_is_refused_not_a_crash(prefix, says):
    done = subprocess.run([sys.executable, "-c", _DEEP, prefix], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("syntax_error ") and says in done.stdout


@pytest.mark.parametrize("chain", ["x" + "[0]" * 87_000, "f" + "()" * 131_000, "a" + "+a" * 131_000])
def test_a_long_chain_within_the_size_limit_is_refused_without_line(chain):
    with pytest.raises(SourceError) as refused:
        source.check(chain)
    assert refused.value.code == "syntax_error" and refused.value.line is None
    assert "nested too deeply" in refused.value.message


def test_a_source_that_parses_is_returned_and_nothing_of_it_runs(tmp_path):
    marker = tmp_path / "ran"
    code = f"open({str(marker)!r}, 'w').write('x')\nraise SystemExit(3)\n"
    assert source.check(code) == code
    assert not marker.exists()


@pytest.mark.parametrize("given", [
    "return 1\n", "break\n", "def f():\n    await g()\n", "x = 1\nfrom __future__ import annotations\n",
    "class C:\n    return 2\n", "*a = [1]\n",
])
def test_what_only_the_compiler_refuses_is_refused_before_anything_is_stored(given):
    with pytest.raises(SourceError) as refused:
        source.check(given)
    assert refused.value.code == "syntax_error" and refused.value.line


@pytest.mark.parametrize("given, line", [
    ("# coding: utf-7\nx = 1\n", 1),
    ("#!/usr/bin/env python\n# -*- coding: latin-1 -*-\nx = 1\n", 2),
    ("\n# vim: set fileencoding=utf-16 :\nx = 1\n", 2),
    ("# coding: no-such-codec\nx = 1\n", 1),
])
def test_a_coding_declaration_other_than_utf8_is_refused_since_the_graded_file_is_utf8(given, line):
    with pytest.raises(SourceError) as refused:
        source.check(given)
    assert (refused.value.code, refused.value.line) == ("source_encoding", line)


@pytest.mark.parametrize("given", [
    "# -*- coding: utf-8 -*-\nx = 1\n", "# coding=UTF8\nx = 1\n",
    "x = 1\n# coding: utf-7\n",               # after a line of code: Python reads no declaration there
    "# one\n# two\n# coding: utf-7\nx = 1\n",  # the third line: none either
])
def test_utf8_declared_or_nothing_python_would_read_is_taken(given):
    assert source.check(given) == given
