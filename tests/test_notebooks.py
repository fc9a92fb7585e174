"""Jupyter notebooks (.ipynb) accepted wherever a .py source is: the web form, the REST API
and `grader grade`. What is graded is the notebook's code cells as plain Python (magics and
shell commands as comments, cells tagged skip-grading left out); reports name the cell
beside each line number. The web and API tests run on a real database (SQLite and
PostgreSQL) and a real Redis; grades come from the engine, stored as a worker stores them."""

from __future__ import annotations

import functools
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import func, select

from grader import catalog, clock, db
from grader.accounts import keys
from grader.accounts.models import User
from grader.cli import main
from grader.db import now
from grader.engine import grade
from grader.settings import MAX_NOTEBOOK_BYTES, MAX_NOTEBOOK_CELLS, MAX_SOURCE_BYTES
from grader.source import SourceError
from grader.submissions import notebooks
from grader.submissions.models import Submission
from tests.live import publish_basics
from tests.forms import token
from tests.test_web import ada, site  # noqa: F401  (fixtures too)
from tests.test_web_courses import DUE, HOUR, course  # noqa: F401  (a fixture too)

ROOT = Path(__file__).resolve().parent.parent


# ------------------------------------------------------------------ notebooks to submit

def cell(source: str | list[str], kind: str = "code", tags: list[str] | None = None) -> dict:
    made = {"cell_type": kind, "metadata": {"tags": tags} if tags else {}, "source": source}
    if kind == "code":
        made.update(outputs=[], execution_count=None)
    return made


def notebook(*cells: dict, minor: int = 5) -> dict:
    made = {"nbformat": 4, "nbformat_minor": minor, "cells": [dict(c) for c in cells],
            "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}}
    if minor >= 5:
        for number, c in enumerate(made["cells"], 1):
            c["id"] = f"cell-{number}"
    return made


# autograd-basics' reference solution split into cells, with what a notebook carries besides:
# a magic, shell commands (one assigned), a cell magic, markdown, and scratch work tagged
# skip-grading that would lose every point if it were graded.
SOLUTION = notebook(
    cell("# Your first gradient\nCompute the gradient of y = 2·xᵀx.", kind="markdown"),
    cell(["%matplotlib inline\n", "!pip install torch\n", "import torch\n"]),
    cell(["def grad_2xtx(x: torch.Tensor) -> torch.Tensor:\n", "    y = 2 * torch.dot(x, x)\n",
          "    y.backward()\n", "    return x.grad\n"]),
    cell("grad_2xtx = None  # trying things out", tags=["skip-grading"]),
    cell("%%time\ngrad_2xtx(torch.ones(3, requires_grad=True))"),
    cell("files = !ls\nwhere = %pwd\n"),
)
SOLUTION_AS_PYTHON = """\
# %% cell 2
# %matplotlib inline
# !pip install torch
import torch

# %% cell 3
def grad_2xtx(x: torch.Tensor) -> torch.Tensor:
    y = 2 * torch.dot(x, x)
    y.backward()
    return x.grad

# %% cell 5
# %%time
# grad_2xtx(torch.ones(3, requires_grad=True))

# %% cell 6
# files = !ls
# where = %pwd
"""

# A mistake on the second line of the notebook's third cell: torch.dot of two lengths.
BROKEN = notebook(
    cell("Imports first.", kind="markdown"),
    cell("import torch\n"),
    cell("def grad_2xtx(x):\n    y = 2 * torch.dot(x, x[:1])\n    y.backward()\n    return x.grad\n"),
)
BROKEN_FRAME = 'File "submission.py", line 6 (cell 3, line 2), in grad_2xtx'


def ipynb(book: dict) -> bytes:
    return json.dumps(book, indent=1).encode()


@functools.cache
def graded(source: str) -> str:
    """The engine's report on ``source`` (as JSON: graded once per source for the whole run)."""
    return grade(catalog.find("autograd-basics"), source).to_json()


def store_grade(database_url: str, submission_id: str) -> None:
    """What the worker does with a submission: grade its stored source, store the report."""
    with db.transaction(database_url) as session:
        row = session.get(Submission, submission_id)
        report = json.loads(graded(row.source))
        row.status, row.finished_at = "graded", now()
        row.score, row.max_score, row.report = report["score"], report["max_score"], report
        row.progress_done = row.progress_total = len(report["tests"])


def stored(database_url: str) -> list[Submission]:
    with db.transaction(database_url) as session:
        return session.scalars(select(Submission).order_by(Submission.created_at)).all()


def user_count(database_url: str) -> int:
    with db.transaction(database_url) as session:
        return session.scalar(select(func.count()).select_from(User))


# ------------------------------------------------------------------ what is graded

def test_code_cells_are_graded_in_order_with_magics_and_shell_commands_as_comments():
    converted = notebooks.convert(ipynb(SOLUTION))
    assert converted.source == SOLUTION_AS_PYTHON
    # Every cell's lines keep their numbers: cell 3's line 2 is line 8 of what is graded.
    assert notebooks.locate(converted.cell_map(), 8) == (3, 2)
    assert notebooks.locate(converted.cell_map(), 1) is None  # a marker line is in no cell
    assert [number for number, _first, _count in converted.cells] == [2, 3, 5, 6]


def test_percent_and_bang_inside_python_stay_python():
    code = ("def f(x, flag):\n"
            "    if flag:\n"
            "        !echo indented\n"            # a shell command inside a block: the block stays valid
            "    text = '''\n"
            "%d items\n"                          # inside a string: part of the string
            "!important\n"
            "'''\n"
            "    y = (x\n"
            "         % 3)\n"                     # inside brackets: Python's modulo
            "    z = x \\\n"
            "        % 2\n"                       # after a backslash: the same statement
            "    return x != y, z\n")
    source = notebooks.convert(ipynb(notebook(cell(code)))).source
    lines = source.splitlines()[1:]
    assert lines[2] == "        pass  # !echo indented"
    assert lines[3:] == code.splitlines()[3:]
    namespace: dict = {}
    exec(compile(source, "submission.py", "exec"), namespace)  # plain Python, as written
    assert namespace["f"](7, False) == (True, 1)


def test_a_shell_command_continued_on_the_next_line_is_a_comment_with_it():
    source = notebooks.convert(ipynb(notebook(cell("!pip install \\\n    torch\nx = 1\n")))).source
    assert source.splitlines()[1:] == ["# !pip install \\", "    # torch", "x = 1"]


def test_a_notebook_of_nbformat_4_4_without_cell_ids_is_read():
    assert notebooks.convert(ipynb(notebook(cell("x = 1"), minor=4))).source == "# %% cell 1\nx = 1\n"


def test_a_notebook_whose_cells_lack_ids_or_repeat_one_is_read_as_jupyter_would():
    book = notebook(cell("x = 1"), cell("y = 2"))
    del book["cells"][0]["id"]
    book["cells"][1]["id"] = "same"
    book["cells"].append({**book["cells"][1], "source": "z = 3"})
    assert notebooks.convert(ipynb(book)).source.count("# %% cell") == 3


def test_line_numbers_in_a_message_get_their_cell_in_the_readers_language():
    cell_map = notebooks.convert(ipynb(BROKEN)).cell_map()
    message = ('Traceback (your code only):\n  File "submission.py", line 6, in grad_2xtx\n'
               "syntax error in submission.py, line 5: invalid syntax\n"
               "line 7 of submission.py uses torch.func.jacrev\n"
               'File "submission.py", line 1, in <module>')  # a marker line: no cell to name
    assert notebooks.annotate(message, cell_map) == (
        'Traceback (your code only):\n  File "submission.py", line 6 (cell 3, line 2), in grad_2xtx\n'
        "syntax error in submission.py, line 5 (cell 3, line 1): invalid syntax\n"
        "line 7 (cell 3, line 3) of submission.py uses torch.func.jacrev\n"
        'File "submission.py", line 1, in <module>')
    assert "line 6 (셀 3, 2행)" in notebooks.annotate(message, cell_map, "ko")
    assert notebooks.annotate(message, None) == message  # a .py submission: unchanged


# A syntax error on the second line of the third cell; the cell above it is fine.
MISTYPED = notebook(
    cell("Imports first.", kind="markdown"),
    cell("import torch\r\n"),
    cell("def grad_2xtx(x):\r\n    return x +\r\n"),
)


def test_a_syntax_error_names_the_cell_and_the_line_within_it():
    with pytest.raises(SourceError) as refused:
        notebooks.convert(ipynb(MISTYPED))
    error = refused.value
    assert error.code == "syntax_error"
    assert error.message == "syntax error in cell 3, line 2, column 15: invalid syntax"
    assert error.where == {"line": 6, "column": 15, "cell": 3, "cell_line": 2}  # line 6 of the graded source


def test_a_block_a_cell_leaves_open_is_named_by_its_cell():
    with pytest.raises(SourceError) as refused:
        notebooks.convert(ipynb(notebook(cell("x = 1"), cell("def f():"), cell("y = 2"))))
    assert refused.value.message == ("syntax error in cell 3, line 1, column 1: expected an indented block "
                                     "after function definition on line 1 of cell 2")


# ------------------------------------------------------------------ what is refused

def too_many_cells() -> dict:
    return notebook(*[cell("")] * MAX_NOTEBOOK_CELLS, cell("x = 1"))


def too_many_bytes() -> dict:
    return notebook(cell("x = 1"), cell("a" * MAX_NOTEBOOK_BYTES, kind="markdown"))


MALFORMED = {
    # name: (the file's bytes, the code, what the message says)
    "not JSON": (b"import torch\n", "notebook_invalid", "not JSON"),
    "not UTF-8": (b'{"cells": "\xff"}', "notebook_invalid", "not UTF-8"),
    "JSON nested too deep": (b"[" * 100_000, "notebook_invalid", "nested too deep"),
    "JSON that is not a notebook": (b'{"source": "x = 1"}', "notebook_invalid", "not a Jupyter notebook"),
    "a JSON array": (b"[1, 2]", "notebook_invalid", "not a Jupyter notebook"),
    "nbformat 3": (json.dumps({"nbformat": 3, "nbformat_minor": 0, "worksheets": [], "cells": [],
                               "metadata": {}}).encode(), "notebook_invalid", "nbformat 3"),
    "a cell that is not a cell": (ipynb({**notebook(cell("x = 1")), "cells": [42]}), "notebook_invalid",
                                  "cell 1 is not a notebook cell"),
    "a cell of an unknown type": (ipynb(notebook(cell("x = 1"), {**cell("y"), "cell_type": "sql"})),
                                  "notebook_invalid", "cell 2"),
    "tags that are not a list": (ipynb(notebook({**cell("x = 1"), "metadata": {"tags": "skip-grading"}})),
                                 "notebook_invalid", "cell 1.metadata.tags"),
    "no code cell": (ipynb(notebook(cell("Only words.", kind="markdown"))), "notebook_invalid", "no code"),
    "only empty code cells": (ipynb(notebook(cell("  \n"), cell([]))), "notebook_invalid", "no code"),
    "every code cell skipped": (ipynb(notebook(cell("x = 1", tags=["skip-grading"]))), "notebook_invalid",
                                "skip-grading"),
    "a NUL in a cell": (ipynb(notebook(cell("x = '\x00'"))), "source_invalid", "NUL"),
    "over the byte limit": (ipynb(too_many_bytes()), "notebook_too_large", f"limit is {MAX_NOTEBOOK_BYTES}"),
    "over the cell limit": (ipynb(too_many_cells()), "notebook_too_large", f"limit is {MAX_NOTEBOOK_CELLS}"),
    "code over the source limit": (ipynb(notebook(cell("x = 1\n" * (MAX_SOURCE_BYTES // 6 + 1)))),
                                   "source_too_large", f"limit is {MAX_SOURCE_BYTES}"),
}


@pytest.mark.parametrize("name", list(MALFORMED))
def test_a_malformed_notebook_is_refused_with_a_code_that_says_what_is_wrong(name):
    raw, code, says = MALFORMED[name]
    with pytest.raises(SourceError) as refused:
        notebooks.convert(raw)
    assert refused.value.code == code and says in refused.value.message, refused.value.message


def test_the_byte_limit_holds_before_the_notebook_is_parsed(monkeypatch):
    def parse(*args, **kw):
        raise AssertionError("parsed a notebook over the limit")

    monkeypatch.setattr(notebooks.json, "loads", parse)
    with pytest.raises(SourceError, match="limit is"):
        notebooks.convert(b" " * (MAX_NOTEBOOK_BYTES + 1))


# ------------------------------------------------------------------ the web form

def upload(client, content: bytes, filename: str = "solution.ipynb", page: str = "/exercises/autograd-basics"):
    """The submit form of ``page`` (an exercise's or an assignment's) with a file chosen."""
    data = {"source": "", "csrf_token": token(client, page), "file": (io.BytesIO(content), filename)}
    return client.post(f"{page}/submissions", data=data, content_type="multipart/form-data")


def test_the_submit_form_takes_notebooks(ada):
    page = ada.get("/exercises/autograd-basics").get_data(as_text=True)
    assert 'accept=".py,.ipynb' in page and "skip-grading" in page


def test_a_notebook_uploaded_on_the_web_is_graded_as_its_code_cells(ada, database_url, redis):
    response = upload(ada, ipynb(SOLUTION))
    assert response.status_code == 303, response.get_data(as_text=True)
    [row] = stored(database_url)
    assert row.source == SOLUTION_AS_PYTHON and row.status == "queued"
    assert row.notebook == {"cells": [[2, 2, 3], [3, 7, 4], [5, 13, 2], [6, 17, 2]]}
    assert redis.llen("cpu") == 1
    store_grade(database_url, row.id)
    page = ada.get(response.location).get_data(as_text=True)
    assert "Score: 6 / 6" in page
    assert "Submitted as a notebook" in page and "# %% cell 3" in page


def test_a_py_file_is_still_a_py_file(ada, database_url):
    assert upload(ada, b"x = 1\n", filename="solution.py").status_code == 303
    [row] = stored(database_url)
    assert row.source == "x = 1\n" and row.notebook is None


def test_the_web_report_names_the_cell_of_a_traceback(ada, database_url):
    location = upload(ada, ipynb(BROKEN)).location
    store_grade(database_url, location.rsplit("/", 1)[1])
    page = ada.get(location).get_data(as_text=True)
    # The line of the graded source is a link to it in the code below; the cell is beside it.
    assert BROKEN_FRAME.replace('"', "&#34;").replace("line 6", 'line <a href="#L6">6</a>') in page
    ada.post("/language", data={"lang": "ko", "next": location, "csrf_token": token(ada, "/exercises")})
    assert 'line <a href="#L6">6</a> (셀 3, 2행)' in ada.get(location).get_data(as_text=True)


def test_an_assignment_takes_a_notebook_under_its_rules(course, ada, database_url, redis):
    _prof, _course_url, assignment_url = course
    with clock.travel(DUE - HOUR):
        refused = upload(ada, MALFORMED["no code cell"][0], page=assignment_url)
        assert refused.status_code == 422 and "no code to grade" in refused.get_data(as_text=True)
        assert stored(database_url) == []  # and no attempt used
        assert upload(ada, ipynb(SOLUTION), page=assignment_url).status_code == 303
        assert upload(ada, ipynb(BROKEN), page=assignment_url).status_code == 303
        assert upload(ada, ipynb(SOLUTION), page=assignment_url).status_code == 409  # two attempts
    first, second = stored(database_url)
    assert (first.assignment_id, first.source, second.notebook) == (1, SOLUTION_AS_PYTHON,
                                                                   {"cells": [[2, 2, 1], [3, 5, 4]]})


@pytest.mark.parametrize("name, says", [
    ("not JSON", "Your notebook cannot be graded: the file is not a notebook"),
    ("nbformat 3", "only version 4 is read"),
    ("a cell of an unknown type", "cell 2"),
    ("every code cell skipped", "tagged skip-grading"),
    ("over the byte limit", f"larger than {MAX_NOTEBOOK_BYTES // 1024} KiB"),
    ("over the cell limit", f"more than {MAX_NOTEBOOK_CELLS} cells"),
    ("code over the source limit", "larger than 256 KiB"),
])
def test_a_malformed_notebook_on_the_web_says_what_is_wrong_and_stores_nothing(ada, database_url, redis,
                                                                              name, says):
    response = upload(ada, MALFORMED[name][0])
    assert response.status_code == (413 if "over" in name else 422)  # the API's status for the same code
    assert says in response.get_data(as_text=True)
    assert stored(database_url) == [] and redis.llen("cpu") == 0


def test_a_notebook_with_a_syntax_error_on_the_web_names_the_cell_and_stores_nothing(ada, database_url, redis):
    response = upload(ada, ipynb(MISTYPED))
    assert response.status_code == 422
    assert ("Your notebook has a syntax error in cell 3, line 2: invalid syntax. Nothing was submitted; "
            "no attempt was used.") in response.get_data(as_text=True)
    assert stored(database_url) == [] and redis.llen("cpu") == 0


# ------------------------------------------------------------------ the REST API

@pytest.fixture
def api(app, database_url):
    """A client and the headers of a key that may submit and read, with autograd-basics published."""
    publish_basics(database_url)
    with db.transaction(database_url) as session:
        key = keys.create(session, ["submissions:write", "submissions:read"], name="test")[1]
    return app.test_client(), {"Authorization": f"Bearer {key}"}


def post(api, **fields):
    client, headers = api
    body = {"exercise": "autograd-basics", "user": "lms-42", **fields}
    return client.post("/api/v1/submissions", json=body, headers=headers)


def test_a_notebook_sent_to_the_api_is_graded_as_its_code_cells(api, database_url, redis):
    response = post(api, notebook=SOLUTION)
    assert response.status_code == 202, response.get_data(as_text=True)
    [row] = stored(database_url)
    assert row.source == SOLUTION_AS_PYTHON and redis.llen("cpu") == 1
    store_grade(database_url, row.id)
    data = api[0].get(response.get_json()["url"], headers=api[1]).get_json()
    assert (data["status"], data["score"], data["max_score"]) == ("graded", 6, 6)
    assert data["notebook"]["cells"][1] == {"cell": 3, "first_line": 7, "lines": 4}


def test_the_api_report_names_the_cell_of_a_traceback(api, database_url):
    url = post(api, notebook=BROKEN).get_json()["url"]
    [row] = stored(database_url)
    store_grade(database_url, row.id)
    report = api[0].get(url, headers=api[1]).get_json()["report"]
    [failed] = [t for t in report["tests"] if t["visible"]]
    assert BROKEN_FRAME in failed["message"] and "RuntimeError" in failed["message"]
    assert "line 6 (셀 3, 2행)" in failed["i18n"]["ko"]["message"]
    # What is stored is the engine's report as it came: the cell is added where it is shown.
    assert BROKEN_FRAME not in json.dumps(stored(database_url)[0].report)


def test_a_source_submission_has_no_notebook(api, database_url):
    url = post(api, source="x = 1\n").get_json()["url"]
    assert api[0].get(url, headers=api[1]).get_json()["notebook"] is None


def error_of(response) -> tuple[int, str, str]:
    error = response.get_json()["error"]
    return response.status_code, error["code"], error["message"]


@pytest.mark.parametrize("name", ["JSON that is not a notebook", "nbformat 3", "a cell that is not a cell",
                                  "a cell of an unknown type", "tags that are not a list", "no code cell",
                                  "every code cell skipped", "a NUL in a cell", "over the byte limit",
                                  "over the cell limit", "code over the source limit"])
def test_a_malformed_notebook_sent_to_the_api_is_refused_and_stores_nothing(api, database_url, redis, name):
    from grader.api.openapi import ERROR_CODES

    raw, code, says = MALFORMED[name]
    status, answered, message = error_of(post(api, notebook=json.loads(raw)))
    assert (status, answered) == (ERROR_CODES[code], code) and says in message, message
    assert stored(database_url) == [] and user_count(database_url) == 0 and redis.dbsize() == 0


@pytest.mark.parametrize("fields, status, code", [
    (dict(source="x = 1\n", notebook=SOLUTION), 422, "invalid_body"),
    (dict(notebook=json.dumps(SOLUTION)), 422, "wrong_type"),
    (dict(notebook=[SOLUTION]), 422, "wrong_type"),
    (dict(), 422, "missing_field"),
])
def test_the_api_takes_a_source_or_a_notebook_object_exactly_once(api, database_url, fields, status, code):
    answered = error_of(post(api, **fields))
    assert answered[:2] == (status, code), answered
    assert stored(database_url) == []


def test_the_api_document_describes_notebooks(api):
    document = api[0].get("/api/v1/openapi.json").get_json()
    new = document["components"]["schemas"]["NewSubmission"]
    assert "notebook" in new["properties"] and "required" not in new  # "user": a service key's, not a personal token's
    assert "notebook" in document["components"]["schemas"]["Submission"]["properties"]
    responses = json.dumps(document["paths"]["/submissions"]["post"]["responses"])
    assert "`notebook_invalid`" in responses and "`notebook_too_large`" in responses


def test_a_notebook_with_a_syntax_error_sent_to_the_api_names_the_cell_and_stores_nothing(api, database_url,
                                                                                           redis):
    response = post(api, notebook=MISTYPED)
    assert response.status_code == 422
    assert response.get_json()["error"] == {
        "code": "syntax_error", "message": "syntax error in cell 3, line 2, column 15: invalid syntax",
        "line": 6, "column": 15, "cell": 3, "cell_line": 2}
    assert stored(database_url) == [] and user_count(database_url) == 0 and redis.dbsize() == 0


def test_a_notebooks_crlf_cells_are_stored_with_lf(api, database_url):
    book = notebook(*[{**c, "source": "".join(c["source"]).replace("\n", "\r\n")} for c in SOLUTION["cells"]])
    assert post(api, notebook=book).status_code == 202
    assert stored(database_url)[0].source == SOLUTION_AS_PYTHON


# ------------------------------------------------------------------ the command line

def grader_grade(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "grader.cli", "grade", "autograd-basics", *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)


def grader_grade_here(*args: str):
    """The same command in this process, on its warm sandboxes: where what a test checks
    is the command's output, not the exit status of a process of its own, which starts
    both sandboxes cold."""
    return CliRunner().invoke(main, ["grade", "autograd-basics", *args])


def test_grader_grade_takes_a_notebook(tmp_path):
    path = tmp_path / "solution.ipynb"
    path.write_bytes(ipynb(SOLUTION))
    run = grader_grade_here(str(path))
    assert run.exit_code == 0, run.output
    assert "6/6 points" in run.stdout


def test_grader_grade_names_the_cell_of_a_traceback(tmp_path):
    path = tmp_path / "broken.ipynb"
    path.write_bytes(ipynb(BROKEN))
    run = grader_grade(str(path), "--json")
    assert run.returncode == 1, run.stderr
    data = json.loads(run.stdout)
    [failed] = [t for t in data["tests"] if t["visible"]]
    assert BROKEN_FRAME in failed["message"]
    assert data["notebook"]["cells"] == [{"cell": 2, "first_line": 2, "lines": 1},
                                         {"cell": 3, "first_line": 5, "lines": 4}]
    text = grader_grade_here(str(path), "--lang", "ko")  # the same grade, in the other format
    assert "line 6 (셀 3, 2행)" in text.stdout


def test_grader_grade_refuses_a_malformed_notebook_saying_why(tmp_path):
    path = tmp_path / "words.ipynb"
    path.write_bytes(MALFORMED["no code cell"][0])
    run = grader_grade(str(path))
    assert run.returncode == 2 and run.stdout == ""
    assert "notebook_invalid" in run.stderr and "no code" in run.stderr
