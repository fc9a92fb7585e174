"""`grader grade`: grade a submission on this machine."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import click

from grader.catalog import CatalogError
from grader.engine import SandboxUnavailable, grade, grading
from grader.protocol.report import COUNTED
from grader.source import SourceError, is_notebook_name


@click.command("grade")
@click.argument("exercise")
@click.argument("submission", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--lang", default="en", type=click.Choice(["en", "ko"]), help="Language of messages.")
def grade_command(exercise: str, submission: Path, as_json: bool, lang: str) -> None:
    """Grade SUBMISSION (a .py file, or a Jupyter notebook: .ipynb) against EXERCISE (a
    slug or a bundle folder). A notebook's code cells are graded as the web form grades
    them, and the report names the cell of each line number.

    Exit status: 0 full marks, 1 graded below full marks, 2 could not grade.
    """
    # The sandboxes take seconds to start (each imports torch): they start now, while this
    # process reads the submission and loads what grading needs itself.
    threading.Thread(target=grading.warm_up, kwargs={"quiet": True}, name="grader-sandboxes-ahead",
                     daemon=True).start()
    source, cell_map = submission.read_bytes(), None
    if is_notebook_name(submission.name):
        # Only here: the submissions package loads SQLAlchemy and Celery (most of a second of
        # CPU, which the sandboxes starting meanwhile would otherwise share).
        from grader.submissions import notebooks

        try:
            converted = notebooks.convert(source)
        except SourceError as exc:
            click.echo(f"error: cannot grade {submission.name}: {exc.message} ({exc.code})", err=True)
            sys.exit(2)
        source, cell_map = converted.source, converted.cell_map()
    try:
        report = grade(exercise, source)
    except CatalogError as exc:
        raise click.ClickException(str(exc)) from None
    except SandboxUnavailable as exc:
        click.echo(f"error: cannot grade: {exc}", err=True)
        sys.exit(2)
    if cell_map is not None:
        notebooks.locate_in_place(report, cell_map)
    if as_json:
        data = report.to_dict()
        if cell_map is not None:
            data["notebook"] = notebooks.described(cell_map)
        click.echo(json.dumps(data, ensure_ascii=False, indent=2))
    else:
        click.echo(report.render(lang))
    if report.status not in COUNTED:
        sys.exit(2)
    sys.exit(0 if report.score == report.max_score and report.status == "graded" else 1)
