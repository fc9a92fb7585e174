"""/api/v1 for running a course: courses, their members, assignments, extensions and
overrides (granted, listed, revoked), the gradebook, regrades, and the class's analytics
and similar submissions. A course made with an API key is that key's alone, and its
members are the key's own users (the same ``user`` values its submissions name)."""

from __future__ import annotations

from flask import Response, current_app, g, request, url_for
from sqlalchemy import select

from grader import submissions
from grader.api import answers
from grader.api.answers import reply
from grader.api.bodies import Members, NewAssignment, NewCourse, NewExtension, NewOverride, parse, user_problem
from grader.api.views import ApiError, _own_assignment, bp, requires
from grader import courses
from grader.courses import analytics, regrades, similarity
from grader.courses.gradebook import Gradebook, gradebook, students_csv, submissions_csv, who
from grader.courses.models import Assignment, Course, Regrade
from grader.courses.times import aware
from grader.exports import attachment
from grader.extensions import get_db

def _course(session, course_id: int) -> Course:
    course = session.get(Course, course_id) if course_id < 2**31 else None
    if course is None or course.api_key_id != g.caller.key_id:
        raise ApiError("course_not_found", f"this key has no course {course_id}")
    return course


def _assignment(session, assignment_id: int) -> tuple[Assignment, Course]:
    assignment = _own_assignment(session, assignment_id)
    return assignment, session.get(Course, assignment.course_id)


def _user(session, user: str, name: str = ""):
    """One of the key's own users, made on first sight (as a submission would); a roster's
    are checked here, a body's ``user`` by its model already."""
    problem = user_problem(user)
    if problem:
        raise ApiError("invalid_user", problem)
    try:
        return submissions.api_user(session, g.caller.key_id, user,
                                    new_per_hour=current_app.config["API_NEW_USERS_PER_HOUR"])
    except submissions.SubmissionError as exc:
        raise ApiError(exc.code, exc.message) from None


def _by() -> str:
    return f"API key {g.caller.prefix}"


def course_answer(session, course: Course) -> answers.Course:
    return answers.Course(
        id=course.id, title=course.title, code=course.code, time_zone=course.time_zone,
        assignments=[assignment_answer(a, course) for a in
                     session.query(Assignment).filter_by(course_id=course.id).order_by(Assignment.due_at)])


def assignment_answer(a: Assignment, course: Course) -> answers.Assignment:
    return answers.Assignment(
        id=a.id, course=course.id, exercise=a.exercise_slug, version=a.exercise_version, title=a.title,
        opens_at=courses.shown(a.opens_at, course) or None, due_at=courses.shown(a.due_at, course),
        late_until=courses.shown(a.late_until, course) or None, late_policy=a.late_policy,
        late_percent=a.late_percent, late_cap=a.late_cap, attempts=a.attempts,
        cooldown_minutes=a.cooldown_seconds // 60, counts=a.counts, feedback=a.feedback,
        time_limit_minutes=a.time_limit_minutes)


@bp.post("/courses")
@requires("courses:write")
def create_course():
    body = parse(NewCourse)
    with get_db() as session:
        course = courses.create_course(session, **body.model_dump(), api_key_id=g.caller.key_id)
        return reply(course_answer(session, course), 201)


@bp.get("/courses/<int:course_id>")
@requires("courses:read")
def get_course(course_id: int):
    with get_db() as session:
        return reply(course_answer(session, _course(session, course_id)))


@bp.put("/courses/<int:course_id>/members")
@requires("courses:write")
def put_members(course_id: int):
    """Add members, or change their roles: a JSON list, or CSV with the columns user,name,role."""
    if request.mimetype == "text/csv":
        try:
            text = request.get_data(cache=False).decode("utf-8")
        except UnicodeDecodeError:
            raise ApiError("body_not_utf8", "the CSV is not UTF-8 text") from None
        rows = None
    else:
        rows = [member.model_dump(exclude_none=True) for member in parse(Members).members]
    with get_db() as session:
        course = _course(session, course_id)
        rows = courses.roster_rows(text) if rows is None else rows
        result = courses.import_roster(session, course, rows, find_user=lambda user, name: _user(session, user, name),
                                       language=request.accept_languages.best_match(["en", "ko"]))
        return reply(answers.Roster(added=result.added, changed=result.changed,
                                    members=[answers.RosterMember(user=who(u), name=u.name, role=role)
                                             for u, role in courses.members(session, course)]))


@bp.post("/courses/<int:course_id>/assignments")
@requires("courses:write")
def create_assignment(course_id: int):
    body = parse(NewAssignment)
    with get_db() as session:
        course = _course(session, course_id)
        assignment = courses.create_assignment(session, course, **body.model_dump(exclude_unset=True),
                                               key_id=g.caller.key_id)
        return reply(assignment_answer(assignment, course), 201)


@bp.get("/courses/<int:course_id>/gradebook")
@requires("grades:read")
def get_gradebook(course_id: int):
    fmt, per = request.args.get("format", "json"), request.args.get("per", "student")
    if fmt not in ("json", "csv") or per not in ("student", "submission"):
        raise ApiError("bad_request", "format is json or csv; per is student or submission")
    with get_db() as session:
        course = _course(session, course_id)
        book = gradebook(session, course)
        if fmt == "json":
            return reply(_gradebook_answer(book))
        text = students_csv(book) if per == "student" else submissions_csv(session, book)
    return Response(text, mimetype="text/csv",
                    headers={"Content-Disposition": attachment(f"{course.code or 'course'}-{per}s.csv")})


def _gradebook_answer(book: Gradebook) -> answers.Gradebook:
    course = book.course

    def score(a: Assignment, cell) -> answers.GradebookScore:
        extension, override = cell.extension, cell.override
        return answers.GradebookScore(
            assignment=a.id, score=cell.counted.score, max_score=cell.counted.max_score, counted=cell.counted.how,
            attempts=cell.attempts, late=cell.counted.late, late_penalty_percent=cell.counted.penalty,
            extension=answers.GradebookExtension(
                due_at=courses.shown(extension.due_at, course), extra_attempts=extension.extra_attempts,
                reason=extension.reason) if extension else None,
            override=answers.GradebookOverride(
                score=override.score, reason=override.reason, set_by=override.set_by,
                set_at=courses.shown(override.set_at, course)) if override else None)

    return answers.Gradebook(
        course=answers.GradebookCourse(id=course.id, title=course.title, code=course.code,
                                       time_zone=course.time_zone),
        assignments=[answers.GradebookAssignment(id=a.id, title=a.title, exercise=a.exercise_slug,
                                                 version=a.exercise_version, due_at=courses.shown(a.due_at, course),
                                                 max_score=book.maxima.get(a.id)) for a in book.assignments],
        students=[answers.GradebookStudent(student=who(row.user), name=row.user.name, total=row.total,
                                           max_total=book.max_total,
                                           scores=[score(a, row.cells[a.id]) for a in book.assignments])
                  for row in book.rows])


@bp.post("/assignments/<int:assignment_id>/extensions")
@requires("grades:write")
def grant_extension(assignment_id: int):
    body = parse(NewExtension)
    with get_db() as session:
        assignment, course = _assignment(session, assignment_id)
        extension = courses.grant_extension(session, assignment, _user(session, body.user), due_at=body.due_at,
                                            extra_attempts=body.extra_attempts, extra_minutes=body.extra_minutes,
                                            reason=body.reason, by=_by())
        made = answers.Extension(assignment=assignment.id, user=body.user,
                                 due_at=courses.shown(extension.due_at, course) or None,
                                 extra_attempts=extension.extra_attempts, extra_minutes=extension.extra_minutes,
                                 reason=extension.reason)
        student_id = extension.user_id
    courses.announce_standing(assignment_id, student_id)  # only now: it is committed
    return reply(made, 201)


@bp.post("/assignments/<int:assignment_id>/overrides")
@requires("grades:write")
def set_override(assignment_id: int):
    body = parse(NewOverride)
    with get_db() as session:
        assignment, course = _assignment(session, assignment_id)
        override = courses.set_override(session, assignment, _user(session, body.user), score=body.score,
                                        reason=body.reason, by=_by())
        made = answers.Override(assignment=assignment.id, user=body.user, score=override.score,
                                reason=override.reason, set_by=override.set_by,
                                set_at=courses.shown(override.set_at, course))
        student_id = override.user_id
    courses.announce_standing(assignment_id, student_id)  # only now: it is committed
    return reply(made, 201)


def _iso(moment) -> str | None:
    return aware(moment).isoformat(timespec="seconds") if moment is not None else None


def extension_answer(extension, user, course: Course) -> answers.ListedExtension:
    return answers.ListedExtension(
        user_id=user.id, user=who(user), name=user.name, due_at=_iso(extension.due_at),
        due_at_shown=courses.shown(extension.due_at, course) or None, extra_attempts=extension.extra_attempts,
        extra_minutes=extension.extra_minutes or 0, reason=extension.reason, granted_by=extension.granted_by,
        granted_at=_iso(extension.granted_at))


def override_answer(override, user) -> answers.ListedOverride:
    return answers.ListedOverride(user_id=user.id, user=who(user), name=user.name, score=override.score,
                                  reason=override.reason, granted_by=override.set_by,
                                  granted_at=_iso(override.set_at))


@bp.get("/assignments/<int:assignment_id>/extensions")
@requires("grades:read")
def list_extensions(assignment_id: int):
    with get_db() as session:
        assignment, course = _assignment(session, assignment_id)
        listed = courses.list_extensions(session, assignment)
        return reply(answers.ExtensionList(assignment=assignment.id, extensions=[
            extension_answer(extension, user, course) for extension, user in listed]))


@bp.get("/assignments/<int:assignment_id>/overrides")
@requires("grades:read")
def list_overrides(assignment_id: int):
    with get_db() as session:
        assignment, _ = _assignment(session, assignment_id)
        listed = courses.list_overrides(session, assignment)
        return reply(answers.OverrideList(assignment=assignment.id,
                                          overrides=[override_answer(override, user) for override, user in listed]))


@bp.delete("/assignments/<int:assignment_id>/extensions/<int:user_id>")
@requires("grades:write")
def revoke_extension(assignment_id: int, user_id: int):
    with get_db() as session:
        assignment, _ = _assignment(session, assignment_id)
        courses.revoke_extension(session, assignment, user_id, by=_by())
    courses.announce_standing(assignment_id, user_id)  # only now: it is committed, as after a grant
    return "", 204


@bp.delete("/assignments/<int:assignment_id>/overrides/<int:user_id>")
@requires("grades:write")
def revoke_override(assignment_id: int, user_id: int):
    with get_db() as session:
        assignment, _ = _assignment(session, assignment_id)
        courses.revoke_override(session, assignment, user_id, by=_by())
    courses.announce_standing(assignment_id, user_id)  # only now: it is committed, as after setting it
    return "", 204


# ------------------------------------------------------------------ similar submissions

def _side(side: similarity.Side, final: similarity.Final) -> answers.SimilarSide:
    return answers.SimilarSide(
        student=who(final.user), name=final.user.name, submission=final.submission_id, share=round(side.share, 4),
        own_tokens=side.own, shared_tokens=side.shared,
        regions=[answers.SharedRegion(start=r.start, end=r.end, first_line=r.first_line, last_line=r.last_line)
                 for r in side.regions])


@bp.get("/assignments/<int:assignment_id>/similarity")
@requires("grades:read")
def get_similarity(assignment_id: int):
    limit = request.args.get("limit", "100")
    if not (limit.isascii() and limit.isdigit() and int(limit) >= 1):
        raise ApiError("bad_request", "limit is a whole number of pairs, 1 or more")
    with get_db() as session:
        assignment, _ = _assignment(session, assignment_id)
        found = similarity.similar(session, assignment)
    return reply(answers.Similarity(
        assignment=assignment_id, students=len(found.finals), pairs_sharing_code=len(found.pairs),
        pairs=[answers.SimilarPair(similarity=round(p.similarity, 4), a=_side(p.a, found.finals[p.a.key]),
                                   b=_side(p.b, found.finals[p.b.key])) for p in found.pairs[:int(limit)]]))


# ------------------------------------------------------------------ regrades

def regrade_answer(session, regrade, course: Course, **url) -> answers.Regrade:
    """The regrade; ``url=``: where to follow it, given as it starts."""
    done, total = regrades.progress(session, regrade)
    changes = regrades.diff(session, regrade) if regrade.status != "running" else []
    return answers.Regrade(
        id=regrade.id, assignment=regrade.assignment_id, version=regrade.version, status=regrade.status,
        requested_by=regrade.requested_by, created_at=courses.shown(regrade.created_at, course), **url,
        progress=answers.Progress(done=done, total=total),
        students=[answers.RegradeStudent(
            student=who(c.user), before=c.before.score, after=c.after.score,
            tests=[answers.TestChange(submission=t.submission_id, test=t.test, was=t.was, now=t.now)
                   for t in c.tests]) for c in changes if c.changed],
        unchanged=sum(not c.changed for c in changes))


def _regrade(session, regrade_id: int):
    regrade = session.get(Regrade, regrade_id) if regrade_id < 2**31 else None
    if regrade is None:
        raise ApiError("regrade_not_found", f"this key has no regrade {regrade_id}")
    try:
        _, course = _assignment(session, regrade.assignment_id)
    except ApiError:
        raise ApiError("regrade_not_found", f"this key has no regrade {regrade_id}") from None
    return regrade, course


@bp.post("/assignments/<int:assignment_id>/regrades")
@requires("grades:write")
def start_regrade(assignment_id: int):
    with get_db() as session:
        assignment, course = _assignment(session, assignment_id)
        regrade = regrades.start(session, assignment, by=_by())
        regrade_id = regrade.id
    with get_db() as session:  # committed: now the workers may look for it
        regrade = session.get(Regrade, regrade_id)
        regrades.send(session, regrade)
        url = url_for("api.get_regrade", regrade_id=regrade_id, _external=True)
        return reply(regrade_answer(session, regrade, course, url=url), 202, {"Location": url})


@bp.post("/exercises/<slug>/regrades")
@requires("grades:write")
def start_exercise_regrades(slug: str):
    """Every assignment of the exercise in this key's courses, regraded (one regrade each)."""
    with get_db() as session:
        placed = session.scalars(select(Assignment).join(Course, Course.id == Assignment.course_id).where(
            Assignment.exercise_slug == slug[:100], Course.api_key_id == g.caller.key_id).order_by(Assignment.id)).all()
        if not placed:
            raise ApiError("exercise_not_found", f"no assignment of this key's courses is of {slug[:100]!r}")
        started, skipped = regrades.start_across(session, placed, by=_by())
        started_ids = [r.id for r in started]
        skipped = [answers.SkippedRegrade(assignment=a.id, reason=reason) for a, reason in skipped]
    with get_db() as session:  # committed: now the workers may look for them
        listed = []
        for regrade_id in started_ids:
            regrade = session.get(Regrade, regrade_id)
            regrades.send(session, regrade)
            course = session.get(Course, session.get(Assignment, regrade.assignment_id).course_id)
            listed.append(regrade_answer(session, regrade, course,
                                         url=url_for("api.get_regrade", regrade_id=regrade_id, _external=True)))
    return reply(answers.ExerciseRegrades(exercise=slug, regrades=listed, skipped=skipped), 202 if listed else 200)


@bp.get("/regrades/<int:regrade_id>")
@requires("grades:read")
def get_regrade(regrade_id: int):
    with get_db() as session:
        regrade, course = _regrade(session, regrade_id)
        return reply(regrade_answer(session, regrade, course))


@bp.post("/regrades/<int:regrade_id>/publish")
@requires("grades:write")
def publish_regrade(regrade_id: int):
    with get_db() as session:
        regrade, course = _regrade(session, regrade_id)
        announced = regrades.publish(session, regrade)
    regrades.announce(announced)
    with get_db() as session:
        return reply(regrade_answer(session, session.get(Regrade, regrade_id), course))


@bp.post("/regrades/<int:regrade_id>/discard")
@requires("grades:write")
def discard_regrade(regrade_id: int):
    with get_db() as session:
        regrade, course = _regrade(session, regrade_id)
        regrades.discard(session, regrade)
        return reply(regrade_answer(session, regrade, course))


# ------------------------------------------------------------------ where the class is stuck

@bp.get("/assignments/<int:assignment_id>/analytics")
@requires("grades:read")
def get_analytics(assignment_id: int):
    with get_db() as session:
        assignment, _ = _assignment(session, assignment_id)
        # The domain's JSON of it (grader.courses.analytics), held to the model here.
        return reply(answers.Analytics.model_validate(analytics.as_json(analytics.analytics(session, assignment))))
