"""The course pages: a member's courses and their assignments (due dates in the course's
time zone, attempts, the score that counts and why), submitting to an assignment under
its rules, and for staff the roster, new assignments, extensions, overrides and the
gradebook with its CSV exports."""

from __future__ import annotations

from datetime import datetime, timedelta

from flask import Response, abort, g, redirect, render_template, request, url_for
from flask_babel import gettext as _
from sqlalchemy import select

from grader.accounts.models import User
from grader import submissions
from grader.courses import access, invitations
from grader import courses
from grader.courses.gradebook import Cell, gradebook, students_csv, submissions_csv
from grader.courses import regrades
from grader.courses.models import STAFF_ROLES, Assignment, Course, CourseMember, Regrade
from grader.courses.times import aware
from grader.db import now
from grader.exports import attachment
from grader.extensions import get_db, locale
from grader.lti.models import LtiRoster
from grader.settings import MAX_SOURCE_BYTES
from grader.submissions.models import Submission
from grader.web import bp, durations, errors
from grader.web.auth import login_required
from grader.refusals import Refused
from grader.web.render import markdown_html, refused_words
from grader.web.views import _error_text, editor_start, held_ids, limit_submissions, posted_source, statement


def _course(s, course_id: int) -> tuple[Course, str | None]:
    """The course and the viewer's role in it; 404 unless they are in it (or an admin)."""
    course = s.get(Course, course_id) if course_id < 2**31 else None
    role = courses.role_in(s, course, g.user) if course is not None else None
    if course is None or (role is None and not access.is_admin(g.user)):
        abort(404)
    return course, role


def instructor_course(s, course_id: int) -> Course:
    """The course, for its instructor or an administrator: 404 to whoever is not in it,
    403 to its other members."""
    course, role = _course(s, course_id)
    if role != "instructor" and not access.is_admin(g.user):
        abort(403)
    return course


def _staff(role: str | None) -> bool:
    return role in STAFF_ROLES or access.is_admin(g.user)


def _holds(standing, role: str | None) -> bool:
    """Whether the score that counts is held from this student until the due date (it
    reflects the hidden tests, whose results the assignment releases only then)."""
    return standing is not None and not _staff(role) and standing.held_until is not None


def _assignment(s, assignment_id: int) -> tuple[Assignment, Course, str | None]:
    assignment = s.get(Assignment, assignment_id) if assignment_id < 2**31 else None
    if assignment is None:
        abort(404)
    return (assignment, *_course(s, assignment.course_id))


def time_left(until: datetime) -> str:
    """Time left until ``until`` by the service's clock, in words (grader.web.durations)."""
    return durations.left(until - now())


def seconds_left(until: datetime) -> int:
    """Whole seconds from the service's now until ``until`` (0 once past): what a
    countdown starts from, so that it runs by the service's clock, not the browser's."""
    return max(0, int((until - now()).total_seconds()))


def late_warning(standing) -> str | None:
    """What the submit button's note says before a late submission is sent: how late, and
    what it would cost (None: submitting now is on time)."""
    if standing is None or standing.late_by is None:
        return None
    by = durations.duration(max(standing.late_by, timedelta(seconds=1)))  # late at all is never "0 seconds"
    if standing.penalty_now:
        return _("Submitting now is late by %(by)s: this submission would lose %(p)s%% of its score.",
                 by=by, p="%g" % standing.penalty_now)
    return _("Submitting now is late by %(by)s (without a penalty).", by=by)


# Refusals that no wait on this page undoes: the submit button is disabled with the reason.
BLOCKING = ("no_attempts_left", "closed", "not_open", "not_a_member", "time_up")


def why(counted, course: Course, override=None) -> str:
    """The score that counts, explained."""
    if counted.how == "override" and override is not None:
        return _("set by hand by %(who)s on %(when)s: %(reason)s", who=override.set_by,
                 when=courses.shown(override.set_at, course), reason=override.reason)
    if counted.score is None:
        return _("nothing graded yet")
    text = (_("the best of %(n)d graded attempts", n=counted.of) if counted.how == "best"
            else _("the latest of %(n)d graded attempts", n=counted.of))
    if counted.late and counted.penalty:
        text += "; " + _("late: %(p)s%% taken off (from %(raw)s)", p="%g" % counted.penalty, raw="%g" % counted.raw_score)
    elif counted.late:
        text += "; " + _("late, without a penalty")
    return text


def refusal_text(refusal, course: Course) -> str:
    """An assignment's refusal in words, its times in the course's zone."""
    if refusal.code == "syntax_error":
        return _error_text(refusal)
    when = getattr(refusal, "reopens_at", None) or getattr(refusal, "ended_at", None)  # time_up: when it ended
    values = {"when": courses.shown(when, course)} if when else {}
    if getattr(refusal, "reopens_at", None) is not None:  # how long until then, too
        values["wait"] = durations.duration(max(refusal.reopens_at - now(), timedelta(seconds=1)))
    return refused_words(refusal, **values)


def may_create_courses() -> bool:
    return access.may_register_platforms(g.user)  # local instructors and administrators


# ------------------------------------------------------------------ courses

@bp.get("/courses")
@login_required
def course_list():
    with get_db() as s:
        rows = s.execute(select(Course, CourseMember.role).join(CourseMember, CourseMember.course_id == Course.id)
                         .where(CourseMember.user_id == g.user.id).order_by(Course.title)).all()
    return render_template("courses/list.html", rows=rows, may_create=may_create_courses())


@bp.post("/courses")
@login_required
def course_create():
    if not may_create_courses():
        abort(403)
    form = request.form
    try:
        with get_db() as s:
            course = courses.create_course(s, title=form.get("title"), code=form.get("code"),
                                           time_zone=form.get("time_zone"), instructor=g.user)
            course_id = course.id
    except courses.CourseError as exc:
        with get_db() as s:
            rows = s.execute(select(Course, CourseMember.role).join(CourseMember, CourseMember.course_id == Course.id)
                             .where(CourseMember.user_id == g.user.id).order_by(Course.title)).all()
        return render_template("courses/list.html", rows=rows, may_create=True, error=refused_words(exc),
                               form=form), exc.status
    return redirect(url_for("web.course_page", course_id=course_id), code=303)


@bp.get("/courses/<int:course_id>")
@login_required
def course_page(course_id: int):
    return _course_page(course_id)


def _course_page(course_id: int, *, error: str | None = None, notice: str | None = None,
                 new_link: str | None = None, status: int = 200):
    with get_db() as s:
        course, role = _course(s, course_id)
        listed = []
        for assignment in s.scalars(select(Assignment).where(Assignment.course_id == course.id)
                                    .order_by(Assignment.due_at)):
            standing = courses.standing(s, assignment, g.user) if role is not None else None
            listed.append((assignment, standing, _holds(standing, role)))
        members = courses.members(s, course) if _staff(role) else []
        links = invitations.open_ones(s, course) \
            if course.platform_id is None and (role == "instructor" or access.is_admin(g.user)) else []
        lms_roster = s.scalar(select(LtiRoster).where(LtiRoster.course_id == course.id)) \
            if course.platform_id is not None and _staff(role) else None
        published = courses.exercises.listed(s, g.user) if _staff(role) else []
    return render_template("courses/course.html", course=course, role=role, staff=_staff(role), listed=listed,
                           members=members, published=published, error=error, notice=notice, shown=courses.shown,
                           invitations=links, new_link=new_link, lms_roster=lms_roster,
                           time_left=time_left, in_minutes=durations.minutes, why=why), status


@bp.post("/courses/<int:course_id>/members")
@login_required
def course_roster(course_id: int):
    upload = request.files.get("roster")
    text = request.form.get("roster_text", "")
    if upload is not None and upload.filename:
        text = upload.stream.read(1 << 20).decode("utf-8", "replace")
    try:
        with get_db() as s:
            course = instructor_course(s, course_id)
            result = courses.import_roster(s, course, courses.roster_rows(text), language=locale())
    except courses.CourseError as exc:
        return _course_page(course_id, error=refused_words(exc), status=exc.status)
    notice = _("%(added)d members added, %(changed)d roles changed.", added=len(result.added),
               changed=len(result.changed))
    if result.new_accounts:
        notice += " " + _("Accounts were made for: %(who)s. Each was mailed a link to choose its password.",
                          who=", ".join(result.new_accounts))
    return _course_page(course_id, notice=notice)


@bp.post("/courses/<int:course_id>/assignments")
@login_required
def assignment_create(course_id: int):
    form = request.form
    zone = None
    try:
        with get_db() as s:
            course, role = _course(s, course_id)
            if not _staff(role):
                abort(403)
            zone = courses.zone(course.time_zone)
            assignment = courses.create_assignment(
                s, course, exercise=form.get("exercise"), title=form.get("title") or None,
                due_at=_local(form.get("due_at"), zone), opens_at=_local(form.get("opens_at"), zone),
                late_until=_local(form.get("late_until"), zone), late_policy=form.get("late_policy"),
                late_percent=form.get("late_percent") or None, late_cap=form.get("late_cap") or None,
                attempts=form.get("attempts") or None, cooldown_minutes=form.get("cooldown_minutes") or None,
                counts=form.get("counts"), feedback=form.get("feedback"),
                time_limit_minutes=form.get("time_limit_minutes") or None, by=g.user)
            assignment_id = assignment.id
    except courses.CourseError as exc:
        return _course_page(course_id, error=exc.message, status=422)
    return redirect(url_for("web.assignment_page", assignment_id=assignment_id), code=303)


def _local(value: str | None, zone) -> str | None:
    """A datetime-local field (no zone) read in the course's time zone."""
    if not value:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return value  # create_assignment says what is wrong with it
    return (moment if moment.tzinfo else moment.replace(tzinfo=zone)).isoformat()


def _local_input(moment: datetime | None, course: Course) -> str:
    """A stored time as a datetime-local field shows it: in the course's time zone, no zone."""
    if moment is None:
        return ""
    return aware(moment).astimezone(courses.zone(course.time_zone)).strftime("%Y-%m-%dT%H:%M")


# ------------------------------------------------------------------ one assignment

@bp.get("/assignments/<int:assignment_id>")
@login_required
def assignment_page(assignment_id: int):
    return _assignment_page(assignment_id)


def _assignment_page(assignment_id: int, *, source: str | None = None, error: str | None = None,
                     staff_error: str | None = None, status: int = 200):
    with get_db() as s:
        assignment, course, role = _assignment(s, assignment_id)
        standing = courses.standing(s, assignment, g.user) if role is not None else None
        mine = s.scalars(select(Submission).where(Submission.user_id == g.user.id,
                                                  Submission.assignment_id == assignment.id)
                         .order_by(Submission.created_at.desc())).all()
        students = [(u, r) for u, r in courses.members(s, course) if r == "student"] if _staff(role) else []
        exercise = assignment.exercise_slug
        held = held_ids(s, mine)
        editor = editor_start(s, exercise, mine[0] if mine else None, source, version=assignment.exercise_version)
        notes = regrades.notes_for(s, assignment, g.user.id) if role is not None else []
        past = s.scalars(select(Regrade).where(Regrade.assignment_id == assignment.id)
                         .order_by(Regrade.created_at.desc())).all() if _staff(role) else []
        extensions = courses.list_extensions(s, assignment) if _staff(role) else []
        overrides = courses.list_overrides(s, assignment) if _staff(role) else []
        revoked = courses.list_revoked(s, assignment) if _staff(role) else []
    text = statement(exercise)
    return render_template("courses/assignment.html", assignment=assignment, course=course, role=role,
                           staff=_staff(role), standing=standing, mine=mine, held=held, students=students,
                           holds=_holds(standing, role), editor=editor, error=error, notes=notes,
                           past_regrades=past, extensions=extensions, overrides=overrides, revoked=revoked,
                           staff_error=staff_error, local_input=_local_input,
                           statement=markdown_html(text) if text is not None else None,
                           shown=courses.shown, time_left=time_left, why=why, refusal_text=refusal_text,
                           seconds_left=seconds_left, duration=durations.duration, in_minutes=durations.minutes,
                           late_warning=late_warning(standing), blocking=BLOCKING,
                           max_bytes=MAX_SOURCE_BYTES), status


@bp.post("/assignments/<int:assignment_id>/submissions")
@login_required
@limit_submissions
def assignment_submit(assignment_id: int):
    _pasted, source, kept = posted_source()
    try:
        taken = courses.take(get_db, who=g.user, target=lambda s: _assignment(s, assignment_id)[0], source=source,
                             way=submissions.way_in(g.user))
    except Refused as exc:
        with get_db() as s:  # the refusal in words, and nothing typed is lost
            _assignment_row, course, _role = _assignment(s, assignment_id)
        return _assignment_page(assignment_id, source=kept, error=refusal_text(exc, course), status=exc.status)
    return redirect(url_for("web.submission", submission_id=taken.id), code=303)


@bp.post("/assignments/<int:assignment_id>/start")
@login_required
def assignment_start(assignment_id: int):
    """The student's clock on a timed assignment started (once: pressing it again moves nothing)."""
    try:
        with get_db() as s:
            assignment, course, _role = _assignment(s, assignment_id)
            courses.starts.start(s, assignment, g.user)
    except Refused as exc:
        return _assignment_page(assignment_id, error=refusal_text(exc, course), status=exc.status)
    return redirect(url_for("web.assignment_page", assignment_id=assignment_id, _anchor="submit-heading"), code=303)


errors.refused_forms["web.assignment_submit"] = lambda message: _assignment_page(
    request.view_args["assignment_id"], source=posted_source()[2], error=message, status=429)


def _student(s, course: Course, user_id: str) -> User:
    try:
        member = s.get(User, int(user_id))
    except (TypeError, ValueError):
        member = None
    if member is None or courses.role_in(s, course, member) is None:
        raise courses.CourseError("not_a_member", _("Choose a student of this course."))
    return member


@bp.post("/assignments/<int:assignment_id>/extensions")
@login_required
def assignment_extension(assignment_id: int):
    return _staff_change(assignment_id, lambda s, assignment, course, student, form: courses.grant_extension(
        s, assignment, student, due_at=_local(form.get("due_at"), courses.zone(course.time_zone)),
        extra_attempts=form.get("extra_attempts") or None, extra_minutes=form.get("extra_minutes") or None,
        reason=form.get("reason"), by=_by()))


@bp.post("/assignments/<int:assignment_id>/overrides")
@login_required
def assignment_override(assignment_id: int):
    return _staff_change(assignment_id, lambda s, assignment, course, student, form: courses.set_override(
        s, assignment, student, score=form.get("score"), reason=form.get("reason"), by=_by()))


@bp.post("/assignments/<int:assignment_id>/extensions/<int:user_id>/revoke")
@login_required
def assignment_extension_revoke(assignment_id: int, user_id: int):
    return _staff_revoke(assignment_id, user_id, courses.revoke_extension, "extensions-heading")


@bp.post("/assignments/<int:assignment_id>/overrides/<int:user_id>/revoke")
@login_required
def assignment_override_revoke(assignment_id: int, user_id: int):
    return _staff_revoke(assignment_id, user_id, courses.revoke_override, "overrides-heading")


def _by() -> str:
    return g.user.email or g.user.name


def _staff_assignment(s, assignment_id: int) -> tuple[Assignment, Course]:
    """The assignment and its course, for those who change what counts for its students
    (extensions, scores set by hand): the course's staff, and administrators.
    404 to whoever is not in the course, 403 to its students."""
    assignment, course, role = _assignment(s, assignment_id)
    if not _staff(role):
        abort(403)
    return assignment, course


def _staff_change(assignment_id: int, change):
    try:
        with get_db() as s:
            assignment, course = _staff_assignment(s, assignment_id)
            student_id = change(s, assignment, course, _student(s, course, request.form.get("student")),
                                request.form).user_id
    except courses.CourseError as exc:
        return _assignment_page(assignment_id, staff_error=exc.message, status=422)
    courses.announce_standing(assignment_id, student_id)  # only now: it is committed
    return redirect(url_for("web.assignment_page", assignment_id=assignment_id), code=303)


def _staff_revoke(assignment_id: int, user_id: int, revoke, anchor: str):
    try:
        with get_db() as s:
            assignment, _course = _staff_assignment(s, assignment_id)
            revoke(s, assignment, user_id, by=_by())
    except courses.CourseError as exc:
        return _assignment_page(assignment_id, staff_error=refused_words(exc), status=exc.status)
    courses.announce_standing(assignment_id, user_id)  # only now: it is committed, as after a grant
    return redirect(url_for("web.assignment_page", assignment_id=assignment_id, _anchor=anchor), code=303)


# ------------------------------------------------------------------ the gradebook

@bp.get("/courses/<int:course_id>/gradebook")
@login_required
def course_gradebook(course_id: int):
    with get_db() as s:
        course, role = _course(s, course_id)
        if not _staff(role):
            abort(403)
        book = gradebook(s, course)
    return render_template("courses/gradebook.html", course=course, book=book, shown=courses.shown,
                           note=_cell_note)


def _cell_note(cell: Cell, course: Course) -> str:
    notes = []
    if cell.override is not None:
        notes.append(why(cell.counted, course, cell.override))
    elif cell.counted.late:
        notes.append(_("late: %(p)s%% taken off (from %(raw)s)", p="%g" % cell.counted.penalty,
                       raw="%g" % (cell.counted.raw_score or 0)) if cell.counted.penalty else _("late, without a penalty"))
    if cell.extension is not None:
        notes.append(_("extension: %(reason)s", reason=cell.extension.reason))
    return "; ".join(notes)


@bp.get("/courses/<int:course_id>/gradebook.csv")
@login_required
def course_gradebook_csv(course_id: int):
    per = request.args.get("per", "student")
    with get_db() as s:
        course, role = _course(s, course_id)
        if not _staff(role) or per not in ("student", "submission"):
            abort(403 if not _staff(role) else 400)
        book = gradebook(s, course)
        text = students_csv(book) if per == "student" else submissions_csv(s, book)
    return Response(text, mimetype="text/csv",
                    headers={"Content-Disposition": attachment(f"{course.code or 'course'}-{per}s.csv")})


# ------------------------------------------------------------------ regrades

@bp.post("/assignments/<int:assignment_id>/regrades")
@login_required
def regrade_start(assignment_id: int):
    try:
        with get_db() as s:
            assignment, course, role = _assignment(s, assignment_id)
            if not _staff(role):
                abort(403)
            regrade_id = regrades.start(s, assignment, by=_by()).id
    except courses.CourseError as exc:
        return _assignment_page(assignment_id, error=exc.message, status=422)
    with get_db() as s:
        regrades.send(s, s.get(Regrade, regrade_id))
    return redirect(url_for("web.regrade_page", regrade_id=regrade_id), code=303)


def _regrade(s, regrade_id: int):
    regrade = s.get(Regrade, regrade_id) if regrade_id < 2**31 else None
    if regrade is None:
        abort(404)
    assignment, course, role = _assignment(s, regrade.assignment_id)
    if not _staff(role):
        abort(404)
    return regrade, assignment, course


@bp.get("/regrades/<int:regrade_id>")
@login_required
def regrade_page(regrade_id: int):
    with get_db() as s:
        regrade, assignment, course = _regrade(s, regrade_id)
        done, total = regrades.progress(s, regrade)
        changes = regrades.diff(s, regrade) if regrade.status != "running" else []
    return render_template("courses/regrade.html", regrade=regrade, assignment=assignment, course=course,
                           done=done, total=total, changes=changes, shown=courses.shown)


@bp.post("/regrades/<int:regrade_id>/<any(publish, discard):decision>")
@login_required
def regrade_decide(regrade_id: int, decision: str):
    announced = []
    try:
        with get_db() as s:
            regrade, assignment, course = _regrade(s, regrade_id)
            if decision == "publish":
                announced = regrades.publish(s, regrade)
            else:
                regrades.discard(s, regrade)
    except courses.CourseError:
        abort(409)
    regrades.announce(announced)
    return redirect(url_for("web.regrade_page", regrade_id=regrade_id), code=303)
