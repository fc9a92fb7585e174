"""`grader gradebook export`, `grader gradebook submissions` and `grader regrade`: a
course's grades, and what its students handed in."""

from __future__ import annotations

from pathlib import Path

import click

from grader import db
from grader.courses import archive, regrades
from grader.courses.fields import CourseError
from grader.courses.roster import course_called
from grader.courses.gradebook import gradebook, students_csv, submissions_csv
from grader.courses.models import Regrade


@click.group("gradebook")
def gradebook_group() -> None:
    """A course's gradebook."""


@gradebook_group.command("export")
@click.option("--course", "code", required=True, help="The course's code, whatever its case (or its id).")
@click.option("--csv", "out", type=click.Path(dir_okay=False, path_type=Path),
              help="Write CSV here (default: print it).")
@click.option("--per", type=click.Choice(["student", "submission"]), default="student", show_default=True)
def gradebook_export_command(code: str, out: Path | None, per: str) -> None:
    """Export a course's gradebook as CSV, every time in the course's time zone (ISO 8601)."""
    try:
        with db.transaction() as session:
            book = gradebook(session, course_called(session, code))
            text = students_csv(book) if per == "student" else submissions_csv(session, book)
    except CourseError as exc:
        raise click.ClickException(exc.message) from None
    if out is None:
        click.echo(text, nl=False)
    else:
        out.write_text(text, encoding="utf-8")
        click.echo(f"wrote {len(book.rows)} students' grades to {out}", err=True)


@gradebook_group.command("submissions")
@click.option("--assignment", "assignment_id", type=int, required=True, help="The assignment's id.")
@click.option("-o", "--output", "out", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The zip to write.")
@click.option("--lang", default="en", type=click.Choice(["en", "ko"]), show_default=True,
              help="Language of the reports' text.")
def gradebook_submissions_command(assignment_id: int, out: Path, lang: str) -> None:
    """Write an assignment's submissions as one zip: a folder per student with each attempt
    and its report (JSON and text), and index.csv at the top."""
    partial = out.with_name(out.name + ".part")  # the zip appears whole, or not at all
    try:
        with db.transaction() as session, partial.open("wb") as file:
            made = archive.submissions_zip(session, archive.assignment_by_id(session, assignment_id), file, lang=lang)
        partial.replace(out)
    except CourseError as exc:
        raise click.ClickException(exc.message) from None
    finally:
        partial.unlink(missing_ok=True)
    click.echo(f"wrote {made.attempts} submissions of {made.students} students to {out}", err=True)


@click.command("regrade")
@click.option("--assignment", "assignment_id", type=int, help="The assignment to regrade.")
@click.option("--exercise", "slug", help="Regrade every assignment of this exercise instead (one regrade each).")
@click.option("--publish", is_flag=True, help="Wait for the regrade, print its diff and publish it.")
@click.option("--timeout", default=3600, show_default=True, help="Seconds to wait with --publish.")
def regrade_command(assignment_id: int | None, slug: str | None, publish: bool, timeout: int) -> None:
    """Grade an assignment's sources (or those of every assignment of an exercise) again
    against the exercise's current version (the workers take regrades only when no live
    submission waits). Prints the regrades' ids, or with --publish their diffs."""
    if (assignment_id is None) == (slug is None):
        raise click.UsageError("name --assignment or --exercise (one of them)")
    try:
        with db.transaction() as session:
            started, skipped = regrades.start_for(session, assignment_id=assignment_id, slug=slug,
                                                  by="grader regrade")
            for assignment, reason in skipped:
                click.echo(f"assignment {assignment.id} skipped: {reason}", err=True)
            regrade_ids = [r.id for r in started]
    except CourseError as exc:
        raise click.ClickException(exc.message) from None
    for regrade_id in regrade_ids:
        with db.transaction() as session:
            regrade = session.get(Regrade, regrade_id)
            sent = regrades.send(session, regrade)
            click.echo(f"regrade {regrade_id} of assignment {regrade.assignment_id}: {sent} submissions sent "
                       f"to the workers", err=True)
    if not publish:
        click.echo("\n".join(map(str, regrade_ids)))
        return
    for regrade_id in regrade_ids:
        _publish_when_ready(regrade_id, timeout)


def _publish_when_ready(regrade_id: int, timeout: int) -> None:
    """Wait for a regrade, publish it and print what changed."""
    try:
        regrades.wait(regrade_id, timeout)
    except regrades.StillRunning as exc:
        raise click.ClickException(f"regrade {regrade_id} is still running ({exc.done} of {exc.total}); "
                                   f"publish it later on the assignment's page or through the API") from None
    changes = regrades.publish_finished(regrade_id)
    for change in (c for c in changes if c.changed):
        who = change.user.email or change.user.external_id or change.user.name
        click.echo(f"{who}: {change.before.score} -> {change.after.score}"
                   + "".join(f"\n  {t.test}: {'pass' if t.was else 'fail'} -> {'pass' if t.now else 'fail'}"
                             for t in change.tests))
    click.echo(f"regrade {regrade_id} published: {sum(c.changed for c in changes)} students changed, "
               f"{sum(not c.changed for c in changes)} unchanged", err=True)
