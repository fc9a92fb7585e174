"""The ``grader`` command.

Each command imports what it needs when it runs (the one place where imports sit in
functions on purpose): `grader --help`, `grader db upgrade` or `grader create-user`
start in a fraction of a second, without torch, Flask or the engine.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from grader.accounts.models import Role  # the role names, for --role


# The commands that work on the service's own database (an existing one: `grader up` and
# `grader db upgrade` make it), and of `grader exercise`, those that publish into it.
_ON_THE_DATABASE = {"create-user", "set-password", "reset-password", "course", "assignment", "gradebook",
                    "regrade", "api-key"}
_EXERCISE_ON_THE_DATABASE = {"sync", "add"}


@click.group()
@click.pass_context
def main(context: click.Context) -> None:
    """Grade PyTorch autograd exercises."""
    if context.invoked_subcommand in _ON_THE_DATABASE:
        _which_database()


def _which_database() -> None:
    """Say which database the command works on, and refuse to make a new, empty one: with
    no GRADER_DATABASE_URL it is ./instance/grader.db of the folder it is run from, which
    outside the service's folder is not the service's."""
    from grader.db import shown_url
    from grader.settings import settings

    url = settings().database_url
    if "GRADER_DATABASE_URL" not in os.environ:
        path = Path(url.removeprefix("sqlite:///"))
        if not path.exists():
            raise click.ClickException(
                f"there is no database at {path}: run grader in the folder where `grader up` runs (its "
                "instance/ holds the database), or set GRADER_DATABASE_URL to the service's database")
    click.echo(f"database: {shown_url(url)}", err=True)


@main.command("grade")
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
    import json

    from grader.catalog import CatalogError
    from grader.engine import SandboxUnavailable, grade
    from grader.protocol.report import COUNTED
    from grader.source import SourceError
    from grader.submissions import notebooks

    source, cell_map = submission.read_bytes(), None
    if notebooks.is_notebook_name(submission.name):
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
        located = notebooks.located_report(report.to_dict(), cell_map)
        report.message = located["message"]
        for test, shown in zip(report.tests, located["tests"]):
            test.message, test.i18n = shown["message"], shown["i18n"]
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


@main.command("check")
@click.argument("exercises", nargs=-1)
@click.option("--mutate", is_flag=True, help="Mutate each reference solution and report the mutants "
              "that still get full marks (see grader.authoring.mutation).")
def check_command(exercises: tuple[str, ...], mutate: bool) -> None:
    """Check exercise bundles: the reference scores full marks (twice, identically),
    the starter less, and every mutant fails exactly as it declares.

    With no EXERCISES, checks the whole catalogue. Exit status 1 on any violation.
    """
    from grader import catalog
    from grader.authoring import mutation
    from grader.authoring.check import check
    from grader.authoring.check_table import format_check
    from grader.engine import SandboxUnavailable
    from grader.settings import settings

    try:
        chosen = ([catalog.find(e) for e in exercises] if exercises
                  else catalog.all_bundles(settings().exercises_dir))
        if mutate:
            results = [r for bundle in chosen for r in mutation.run(bundle)]
            click.echo(mutation.format_results(results))
            sys.exit(1 if any(r.hole for r in results) else 0)
        rows = [row for bundle in chosen for row in check(bundle)]
    except catalog.CatalogError as exc:
        raise click.ClickException(str(exc)) from None
    except SandboxUnavailable as exc:
        click.echo(f"error: cannot grade: {exc}", err=True)
        sys.exit(2)
    click.echo(format_check(rows))
    sys.exit(0 if rows and all(r.ok for r in rows) else 1)


@main.command("new")
@click.argument("slug")
@click.option("--into", "folder", default=None, type=click.Path(file_okay=False, path_type=Path),
              help="Where to make the bundle's folder (default: the catalogue, GRADER_EXERCISES_DIR).")
def new_command(slug: str, folder: Path | None) -> None:
    """Make a new exercise bundle SLUG from the annotated template: a working exercise
    (statement in English and Korean, starter, solution, a probe, hidden tests with points,
    hints and hints for errors, mutants with their declarations, the misconception table)
    that `grader check` passes. Change it into yours, checking as you go."""
    from grader.authoring.new import copy_template
    from grader.bundle import CatalogError
    from grader.settings import settings

    target = (folder or settings().exercises_dir) / slug
    if target.exists():
        raise click.ClickException(f"{target} exists already; choose another slug or folder")
    try:
        made = copy_template(target, slug)
    except CatalogError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"made {made}; check it with: grader check {made}")


# ------------------------------------------------------------------ db

@main.group("db")
def db_group() -> None:
    """The database at GRADER_DATABASE_URL."""


@db_group.command("upgrade")
def db_upgrade_command() -> None:
    """Bring the database's schema to the newest migration."""
    from grader import db

    db.upgrade()
    click.echo("the database schema is up to date", err=True)


# ------------------------------------------------------------------ accounts

@main.command("create-user")
@click.option("--email", required=True, help="The email the user signs in with.")
@click.option("--role", default="student", show_default=True, type=click.Choice([role.value for role in Role]),
              help="admin: site-wide powers (bundles, every submission and registration); instructor: may "
                   "register an LMS; rights in a course come from the course.")
@click.option("--name", default="", help="The name pages show (default: the email's local part).")
@click.password_option(help="The password (asked for when not given; at least 8 characters).")
def create_user_command(email: str, role: str, name: str, password: str) -> None:
    """Create a local account, such as the first administrator."""
    from grader import db
    from grader.accounts import users

    db.upgrade()
    try:
        with db.transaction() as session:
            user = users.create_user(session, email=email, password=password, role=role, name=name)
            email = user.email
    except users.AccountError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"created {role} {email}", err=True)


@main.command("set-password")
@click.option("--email", required=True, help="The account's email.")
@click.password_option(help="The new password (asked for when not given; at least 8 characters).")
def set_password_command(email: str, password: str) -> None:
    """Give a local account a new password; its sessions everywhere end."""
    from grader import db
    from grader.accounts import users

    try:
        with db.transaction() as session:
            email = users.set_password(session, email, password).email
    except users.AccountError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"new password set for {email}; its sessions have ended", err=True)


@main.command("reset-password")
@click.option("--email", required=True, help="The account's email.")
def reset_password_command(email: str) -> None:
    """Give a local account a new random password, printed once (for a user who forgot
    theirs: hand it over, they change it); its sessions everywhere end."""
    import secrets

    from grader import db
    from grader.accounts import users

    password = secrets.token_urlsafe(12)
    try:
        with db.transaction() as session:
            email = users.set_password(session, email, password).email
    except users.AccountError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"new password for {email}, shown only this once: {password}")
    click.echo("its sessions have ended", err=True)


# ------------------------------------------------------------------ api keys

# ------------------------------------------------------------------ courses

@main.group("course")
def course_group() -> None:
    """Courses run on the grader itself: members, assignments, the gradebook."""


@course_group.command("create")
@click.option("--title", required=True)
@click.option("--code", required=True, help="A short name, such as DL101 (gradebook exports are named after it).")
@click.option("--time-zone", default="UTC", show_default=True, help="An IANA name such as Asia/Seoul.")
@click.option("--instructor", "instructor_email", help="The e-mail of a local account to make its instructor.")
@click.option("--roster", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="A CSV of members: email,name,role (student, ta or instructor).")
def course_create_command(title: str, code: str, time_zone: str, instructor_email: str | None,
                          roster: Path | None) -> None:
    """Make a course; print its id."""
    from grader import db
    from grader.courses import assignments as courses

    db.upgrade()
    try:
        with db.transaction() as session:
            instructor = _account(session, instructor_email) if instructor_email else None
            course = courses.create_course(session, title=title, code=code, time_zone=time_zone,
                                           instructor=instructor)
            if roster is not None:
                result = courses.import_roster(session, course, courses.roster_rows(roster.read_text("utf-8")))
                click.echo(f"{len(result.added)} members added; accounts made without a password for: "
                           f"{', '.join(result.new_accounts) or 'nobody'}", err=True)
            course_id = course.id
    except courses.CourseError as exc:
        raise click.ClickException(exc.message) from None
    click.echo(f"created course {code} ({title}), id:", err=True)
    click.echo(course_id)


@course_group.command("invite")
@click.option("--course", "course_id", required=True, type=int)
@click.option("--role", type=click.Choice(["student", "ta"]), default="student", show_default=True)
@click.option("--days", type=int, default=14, show_default=True, help="How long the link lets people in.")
@click.option("--uses", "max_uses", type=int, help="How many people it lets in at most (default: any number).")
@click.option("--site", default="", help="The service's address, such as https://grader.example.edu, "
                                          "to print the whole link.")
def course_invite_command(course_id: int, role: str, days: int, max_uses: int | None, site: str) -> None:
    """Make an invitation link to a local course; print it (it is shown only this once)."""
    from grader import db
    from grader.courses import invitations
    from grader.courses.assignments import CourseError
    from grader.courses.models import Course

    try:
        with db.transaction() as session:
            course = session.get(Course, course_id) if 0 < course_id < 2**31 else None
            if course is None:
                raise click.ClickException(f"there is no course {course_id}")
            row, token = invitations.create(session, course, role=role, days=days, max_uses=max_uses,
                                            by="the command line")
            expires = row.expires_at
    except CourseError as exc:
        raise click.ClickException(exc.message) from None
    click.echo(f"an invitation link to course {course_id} as {role}, until {expires:%Y-%m-%d %H:%M} UTC "
               f"(shown only this once):", err=True)
    click.echo(f"{site.rstrip('/')}/join/{token}")


def _account(session, email: str):
    from sqlalchemy import func, select

    from grader.accounts.models import User

    user = session.scalar(select(User).where(func.lower(User.email) == email.lower()))
    if user is None:
        raise click.ClickException(f"there is no account {email!r} (grader create-user makes one)")
    return user


@course_group.command("sync-roster")
@click.option("--course", "course_id", required=True, type=int, help="The LMS course's id (as on its page).")
def course_sync_roster_command(course_id: int) -> None:
    """Read an LMS course's roster from the LMS now (Names and Role Provisioning Services):
    members who never launched are added with their LMS roles, roles changed, members the
    LMS no longer lists removed (their work stays). Prints what changed."""
    from sqlalchemy.exc import IntegrityError

    from grader import db
    from grader.lti import roster
    from grader.lti.tool import ServiceError
    from grader.settings import settings

    db.upgrade()
    try:
        result = roster.sync(course_id, timeout=settings().http_timeout_s)
    except roster.NoRoster as exc:
        raise click.ClickException(str(exc)) from None
    except ServiceError as exc:
        raise click.ClickException(f"the roster was not read, and stays as it was: "
                                   f"{f'the LMS answered {exc.status}: ' if exc.status else ''}{exc.detail}") from None
    except IntegrityError:
        raise click.ClickException("a launch added the same user meanwhile, and the roster stays as it was: "
                                   "run the command again") from None
    click.echo(f"course {course_id}: {result}")


@main.group("assignment")
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
@click.option("--title")
def assignment_create_command(course_id: int, **fields) -> None:
    """Place an exercise in a course; print the assignment's id."""
    from grader import db
    from grader.courses import assignments as courses
    from grader.courses.models import Course

    db.upgrade()
    try:
        with db.transaction() as session:
            course = session.get(Course, course_id)
            if course is None:
                raise click.ClickException(f"there is no course {course_id}")
            assignment = courses.create_assignment(session, course, **fields)
            due, assignment_id = courses.shown(assignment.due_at, course), assignment.id
    except courses.CourseError as exc:
        raise click.ClickException(exc.message) from None
    click.echo(f"created assignment of {fields['exercise']}, due {due}, id:", err=True)
    click.echo(assignment_id)


@main.group("gradebook")
def gradebook_group() -> None:
    """A course's gradebook."""


@gradebook_group.command("export")
@click.option("--course", "code", required=True, help="The course's code (or its id).")
@click.option("--csv", "out", type=click.Path(dir_okay=False, path_type=Path),
              help="Write CSV here (default: print it).")
@click.option("--per", type=click.Choice(["student", "submission"]), default="student", show_default=True)
def gradebook_export_command(code: str, out: Path | None, per: str) -> None:
    """Export a course's gradebook as CSV, every time in the course's time zone."""
    from sqlalchemy import or_, select

    from grader import db
    from grader.courses.gradebook import gradebook, students_csv, submissions_csv
    from grader.courses.models import Course

    with db.transaction() as session:
        found = session.scalars(select(Course).where(or_(Course.code == code, Course.id == (
            int(code) if code.isdigit() and len(code) < 10 else -1)))).all()
        if len(found) != 1:
            raise click.ClickException(f"no course {code!r}" if not found else
                                       f"{len(found)} courses are called {code!r}: give the id instead")
        book = gradebook(session, found[0])
        text = students_csv(book) if per == "student" else submissions_csv(session, book)
    if out is None:
        click.echo(text, nl=False)
    else:
        out.write_text(text, encoding="utf-8")
        click.echo(f"wrote {len(book.rows)} students' grades to {out}", err=True)


@main.command("regrade")
@click.option("--assignment", "assignment_id", type=int, help="The assignment to regrade.")
@click.option("--exercise", "slug", help="Regrade every assignment of this exercise instead (one regrade each).")
@click.option("--publish", is_flag=True, help="Wait for the regrade, print its diff and publish it.")
@click.option("--timeout", default=3600, show_default=True, help="Seconds to wait with --publish.")
def regrade_command(assignment_id: int | None, slug: str | None, publish: bool, timeout: int) -> None:
    """Grade an assignment's sources (or those of every assignment of an exercise) again
    against the exercise's current version (the workers take regrades only when no live
    submission waits). Prints the regrades' ids, or with --publish their diffs."""
    from sqlalchemy import select

    from grader import db
    from grader.courses import assignments as courses
    from grader.courses import regrades
    from grader.courses.models import Assignment, Regrade

    if (assignment_id is None) == (slug is None):
        raise click.UsageError("name --assignment or --exercise (one of them)")
    try:
        with db.transaction() as session:
            if slug is not None:
                placed = session.scalars(select(Assignment).where(Assignment.exercise_slug == slug)
                                         .order_by(Assignment.id)).all()
                if not placed:
                    raise click.ClickException(f"no assignment is of {slug!r}")
                started, skipped = regrades.start_across(session, placed, by="grader regrade")
                for assignment, reason in skipped:
                    click.echo(f"assignment {assignment.id} skipped: {reason}", err=True)
            else:
                assignment = session.get(Assignment, assignment_id)
                if assignment is None:
                    raise click.ClickException(f"there is no assignment {assignment_id}")
                started = [regrades.start(session, assignment, by="grader regrade")]
            regrade_ids = [r.id for r in started]
    except courses.CourseError as exc:
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
    """Wait for a regrade, print what changed and publish it."""
    import time

    from grader import db
    from grader.courses import regrades
    from grader.courses.models import Regrade

    deadline = time.monotonic() + timeout
    while True:
        with db.transaction() as session:
            regrade = session.get(Regrade, regrade_id)
            done, total = regrades.progress(session, regrade)
            if regrade.status != "running":
                break
        if time.monotonic() > deadline:
            raise click.ClickException(f"regrade {regrade_id} is still running ({done} of {total}); "
                                       f"publish it later on the assignment's page or through the API")
        time.sleep(2)
    with db.transaction() as session:
        regrade = session.get(Regrade, regrade_id)
        changes = regrades.diff(session, regrade)
        for change in (c for c in changes if c.changed):
            who = change.user.email or change.user.external_id or change.user.name
            click.echo(f"{who}: {change.before.score} -> {change.after.score}"
                       + "".join(f"\n  {t.test}: {'pass' if t.was else 'fail'} -> {'pass' if t.now else 'fail'}"
                                 for t in change.tests))
        announced = regrades.publish(session, regrade)
    regrades.announce(announced)
    click.echo(f"regrade {regrade_id} published: {sum(c.changed for c in changes)} students changed, "
               f"{sum(not c.changed for c in changes)} unchanged", err=True)


@main.group("api-key")
def api_key_group() -> None:
    """Keys for the REST API (/api/v1)."""


@api_key_group.command("create")
# The scopes of grader.accounts.keys.SCOPES, spelt out so that `grader` starts without Flask.
@click.option("--scope", "scopes", multiple=True, required=True, type=click.Choice(
    ("exercises:read", "exercises:write", "submissions:read", "submissions:write", "courses:read", "courses:write",
     "grades:read", "grades:write")), help="What the key may do (repeatable).")
@click.option("--name", default="", help="Who or what the key is for.")
def api_key_create_command(scopes: tuple[str, ...], name: str) -> None:
    """Create an API key and print it. It is shown only this once: only its hash is kept."""
    from grader import db
    from grader.accounts import keys

    db.upgrade()
    with db.transaction() as session:
        row, key = keys.create(session, scopes, name=name)
        prefix = row.prefix
    click.echo(f"created API key {prefix} ({', '.join(sorted(set(scopes)))}); it is not shown again:", err=True)
    click.echo(key)


@api_key_group.command("revoke")
@click.argument("prefix")
def api_key_revoke_command(prefix: str) -> None:
    """Revoke the key whose prefix (gk_<PREFIX>_...) is PREFIX."""
    from grader import db
    from grader.accounts import keys

    with db.transaction() as session:
        row = keys.revoke(session, prefix)
    if row is None:
        raise click.ClickException(f"no API key has the prefix {prefix!r}")
    click.echo(f"revoked API key {prefix}", err=True)


# ------------------------------------------------------------------ exercises

@main.group("exercise")
@click.pass_context
def exercise_group(context: click.Context) -> None:
    """The exercises the service offers."""
    if context.invoked_subcommand in _EXERCISE_ON_THE_DATABASE:
        _which_database()


@exercise_group.command("sync")
def exercise_sync_command() -> None:
    """Publish every catalogue bundle into the database, at its current version.

    The maximum score is what grading the bundle's own solution.py reports, so it is
    the sum of the hidden tests' points as the engine counts them. Exit status 1 if
    a bundle could not be published (the others are), 2 if nothing can be graded here.
    """
    from grader import catalog, db
    from grader.catalog.publishing import publish, unpublish_missing
    from grader.engine import SandboxUnavailable
    from grader.settings import settings

    try:
        bundles = catalog.all_bundles(settings().exercises_dir)
    except catalog.CatalogError as exc:
        raise click.ClickException(str(exc)) from None
    db.upgrade()
    unpublish_missing(bundles)
    try:
        failed = publish(bundles)
    except SandboxUnavailable as exc:
        click.echo(f"error: cannot grade: {exc}", err=True)
        sys.exit(2)
    sys.exit(1 if failed else 0)


@exercise_group.command("add")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
def exercise_add_command(path: Path) -> None:
    """Add or update an exercise from PATH, a bundle folder or a zip of one.

    The bundle is stored, checked here as a worker would check an upload (the
    reference scores full marks, the starter less, every mutant fails as declared),
    and published only if every check holds. Prints the check's table. Exit status 1
    if it was rejected, 2 if nothing can be graded here.
    """
    from grader import db
    from grader.catalog import uploads
    from grader.authoring.check_table import CheckRow, format_check
    from grader.catalog.models import Upload, UploadStatus
    from grader.catalog.tasks import check_and_publish
    from grader.engine import SandboxUnavailable

    archive = uploads.pack(path) if path.is_dir() else path.read_bytes()
    db.upgrade()
    try:
        with db.transaction() as session:
            upload_id = uploads.receive(session, archive).id
    except uploads.UploadError as exc:
        raise click.ClickException(str(exc)) from None
    try:
        status = check_and_publish(upload_id)
    except SandboxUnavailable as exc:
        with db.transaction() as session:
            session.delete(session.get(Upload, upload_id))  # not checked: leave nothing behind
        click.echo(f"error: cannot grade: {exc}", err=True)
        sys.exit(2)
    with db.transaction() as session:
        upload = session.get(Upload, upload_id)
        rows = [CheckRow(**row) for row in upload.check_rows or []]
        slug, version, error = upload.slug, upload.version, upload.error
    if rows:
        click.echo(format_check(rows))
    if status != UploadStatus.PUBLISHED:
        raise click.ClickException(f"{slug} v{version} was not published: {error}")
    click.echo(f"published {slug} v{version}", err=True)


@exercise_group.command("push")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option("--url", required=True, envvar="GRADER_URL", show_envvar=True,
              help="The service's address, e.g. https://grader.example.edu.")
@click.option("--timeout", default=900, show_default=True, type=click.IntRange(1),
              help="Seconds to wait for the check.")
def exercise_push_command(path: Path, url: str, timeout: int) -> None:
    """Publish the bundle at PATH (a folder or a zip of one) on the service at URL.

    The bundle is sent to the service's API with the key in GRADER_API_KEY (scope
    exercises:write), checked on its workers (the reference scores full marks, the
    starter less, every mutant fails as declared) and published only if every check
    holds. Prints the check's table. Exit status: 0 published; 1 refused or rejected
    (the bundle is at fault); 2 not sent or not followed (the address, the key or the
    service is).
    """
    from grader.authoring import push
    from grader.catalog import uploads
    from grader.authoring.check_table import format_check

    try:
        archive = uploads.pack(path) if path.is_dir() else path.read_bytes()
        key = os.environ.get("GRADER_API_KEY", "")
        sent = push.send(url, key, archive)
        click.echo(f"sent {sent.slug} v{sent.version}; check {sent.id} is running", err=True)
        done = push.follow(url, key, sent, timeout=timeout)
    except push.PushError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1 if exc.refused else 2)
    if done.rows:
        click.echo(format_check(done.rows))
    if done.status != "published":
        click.echo(f"error: {done.slug} v{done.version} was not published: {done.error}", err=True)
        sys.exit(1)
    click.echo(f"published {done.slug} v{done.version}", err=True)


@exercise_group.command("check")
@click.argument("exercises", nargs=-1)
@click.option("--mutate", is_flag=True, help="Also mutate each reference solution (see `grader check`).")
@click.pass_context
def exercise_check_command(context: click.Context, exercises: tuple[str, ...], mutate: bool) -> None:
    """Check bundles here, before pushing them: the same as `grader check`."""
    context.forward(check_command)


# ------------------------------------------------------------------ the embedded service

@main.command("up")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address the web server listens on.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(1, 65535),
              help="Port the web server listens on.")
def up_command(host: str, port: int) -> None:
    """Run the whole service on this machine: migrate the database, publish the
    exercises, start Redis (if none listens at a local GRADER_REDIS_URL), a worker
    and the web server, and print the URL. Ctrl-C stops everything.

    Logs go to ./instance/logs/. Exit status 0 when stopped, 1 if a part failed.
    """
    from grader import up

    sys.exit(up.run(host, port))


# ------------------------------------------------------------------ operations

@main.command("worker-alive")
@click.option("--name", "node", default="celery@%h", show_default=True,
              help="The worker's node name, as given to celery -n (%h: this host's name).")
@click.option("--timeout", default=2.0, show_default=True, type=click.FloatRange(0.1, 30),
              help="Seconds the worker has to answer.")
def worker_alive_command(node: str, timeout: float) -> None:
    """Exit 0 when this host's Celery worker answers a ping through the broker, 1 when it
    does not: a liveness probe for docker compose and Kubernetes (a worker of the solo pool
    answers only between grades)."""
    import socket

    from grader.ops import health

    node = node.replace("%h", socket.gethostname())
    if not health.worker_alive(node, timeout):
        click.echo(f"worker {node} did not answer within {timeout:g} s", err=True)
        sys.exit(1)
    click.echo(f"worker {node} answered", err=True)


from grader.lti.cli import lti as _lti  # noqa: E402

main.add_command(_lti)


if __name__ == "__main__":
    main()
