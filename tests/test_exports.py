"""The files the service hands out (grader.exports): CSV a spreadsheet reads as data, with
each column named once, and a download's name in any script."""

from __future__ import annotations

import csv
import io

import pytest
from werkzeug.http import parse_options_header

from grader.exports import attachment, cell, csv_text, header


@pytest.mark.parametrize("text", ["=1+1", "+1", "-1+1", "@SUM(A1)", "\t=1", "\r=1", " =1", "\n\t @x", "\u3000=1"])
def test_text_that_would_start_a_formula_is_written_as_text(text):
    assert cell(text) == "'" + text


@pytest.mark.parametrize("value", ["Ada", "a=b", "1-2", "", 3, -2.5, None])
def test_other_cells_are_written_as_they_are(value):
    assert cell(value) == value


def test_every_column_is_named_once():
    assert header(["Quiz", "Exam", "Quiz"], ["#3", "#4", "#9"]) == ["Quiz (#3)", "Exam", "Quiz (#9)"]
    assert header(["total", "total", "total (2)"]) == ["total", "total (2)", "total (2) (2)"]


def test_a_csv_reads_back_cell_for_cell_whatever_its_cells_hold():
    lines = [["Ada\rLovelace", "=cmd", 3], ['say "hi",\n', "@x", -1]]
    rows = list(csv.reader(io.StringIO(csv_text(["name", "name", "+n"], lines), newline="")))
    assert rows == [["name", "name (2)", "'+n"], ["Ada\rLovelace", "'=cmd", "3"], ['say "hi",\n', "'@x", "-1"]]


@pytest.mark.parametrize("name, fallback", [
    ("DL101-students.csv", "DL101-students.csv"),
    ("딥러닝101-students.csv", "101-students.csv"),
    ("Café \"ML\"/1.csv", "Cafe_ML_1.csv"),
    ("한국어.csv", "download.csv"),
])
def test_a_download_is_named_in_utf_8_with_an_ascii_name_beside_it(name, fallback):
    disposition = attachment(name)
    assert disposition.isascii() and "\n" not in disposition
    assert f'filename="{fallback}"' in disposition
    assert parse_options_header(disposition) == ("attachment", {"filename": name.replace("/", "_")})
