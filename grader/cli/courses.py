"""`grader course create`, `grader course invite` and `grader assignment ...`: courses run
on the grader itself."""

from __future__ import annotations

from pathlib import Path

import click

from grader import db
from grader.accounts import users
from grader import courses
from grader.courses import invitations


@click.command("create")
@click.option("--title", required=True)
@click.option("--code", required=True, help="A short name, such as DL101, that no other course has (whatever "
                                            "its case): gradebook exports are named after it.")
@click.option("--time-zone", default="UTC", show_default=True, help="An IANA name such as Asia/Seoul.")
@click.option("--instructor", "instructor_email", help="The e-mail of a local account to make its instructor.")
@click.option("--roster", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="A CSV of members: email,name,role (student, ta or instructor).")
def course_create_command(title: str, code: str, time_zone: str, instructor_email: str | None,
                          roster: Path | None) -> None:
    """Make a course; print its id."""
    db.upgrade()
    try:
        with db.transaction() as session:
            instructor = _account(session, instructor_email) if instructor_email else None
            course = courses.create_course(session, title=title, code=code, time_zone=time_zone,
                                           instructor=instructor)
            if roster is not None:
                result = courses.import_roster(session, course, courses.roster_rows(roster.read_text("utf-8")))
                click.echo(f"{len(result.added)} members added; accounts made, and mailed a link to choose "
                           f"their password: {', '.join(result.new_accounts) or 'none'}", err=True)
            course_id = course.id
    except courses.CourseError as exc:
        raise click.ClickException(exc.message) from None
    click.echo(f"created course {code} ({title}), id:", err=True)
    click.echo(course_id)


def _account(session, email: str):
    user = users.by_email(session, email)
    if user is None:
        raise click.ClickException(f"there is no account {email!r} (grader create-user makes one)")
    return user


@click.command("invite")
@click.option("--course", "course_id", required=True, type=int)
@click.option("--role", type=click.Choice(["student", "ta"]), default="student", show_default=True)
@click.option("--days", type=int, default=14, show_default=True, help="How long the link lets people in.")
@click.option("--uses", "max_uses", type=int, help="How many people it lets in at most (default: any number).")
@click.option("--site", default="", help="The service's address, such as https://grader.example.edu, "
                                          "to print the whole link.")
def course_invite_command(course_id: int, role: str, days: int, max_uses: int | None, site: str) -> None:
    """Make an invitation link to a local course; print it (it is shown only this once)."""
    try:
        with db.transaction() as session:
            row, token = invitations.create(session, courses.course_by_id(session, course_id), role=role,
                                            days=days, max_uses=max_uses, by="the command line")
            expires = row.expires_at
    except courses.CourseError as exc:
        raise click.ClickException(exc.message) from None
    click.echo(f"an invitation link to course {course_id} as {role}, until {expires:%Y-%m-%d %H:%M} UTC "
               f"(shown only this once):", err=True)
    click.echo(f"{site.rstrip('/')}/join/{token}")


@click.group("assignment")
def assignment_group() -> None:
    """Assignments: an exercise in a course at a pinned version, with its due date and rules."""


@assignment_group.command("create")
@click.option("--course", "course_id", required=True, type=int)
@click.option("--exercise", required=True, help="The exercise's slug.")
@click.option("--due", "due_at", required=True, help="ISO 8601 with its zone: 2026-12-10T23:59+09:00.")
@click.option("--opens", "opens_at")
@click.option("--late-until")
@click.option("--late-policy", type=click.Choice(["none", "per_day", "per_hour"]), default="none", show_default=True)
@click.option("--late-percent", type=float, help="Lost per begun day or hour late.")
@click.option("--late-cap", type=float, help="At most this many percent lost in all.")
@click.option("--attempts", type=int)
@click.option("--cooldown-minutes", type=int)
@click.option("--counts", type=click.Choice(["best", "latest"]), default="best", show_default=True)
@click.option("--feedback", type=click.Choice(["immediate", "after_due"]), default="immediate", show_default=True)
@click.option("--time-limit-minutes", type=int,
              help="Timed: each student has this many minutes from when they start (at most 10080, a week).")
@click.option("--title")
def assignment_create_command(course_id: int, **fields) -> None:
    """Place an exercise in a course; print the assignment's id."""
    db.upgrade()
    try:
        with db.transaction() as session:
            course = courses.course_by_id(session, course_id)
            assignment = courses.create_assignment(session, course, **fields)
            due, assignment_id = courses.shown(assignment.due_at, course), assignment.id
            limit = assignment.time_limit_minutes
    except courses.CourseError as exc:
        raise click.ClickException(exc.message) from None
    timed = f", {limit} minutes from each student's start" if limit else ""
    click.echo(f"created assignment of {fields['exercise']}, due {due}{timed}, id:", err=True)
    click.echo(assignment_id)
