"""The LTI endpoints (/lti/login, /lti/launch, /lti/jwks, /lti/config), deep linking, the
course roster's sync button, and the instructor pages for platforms and deliveries."""

from __future__ import annotations

import logging

from flask import (Blueprint, abort, current_app, g, jsonify, redirect, render_template, request, session,
                   url_for)
from flask_babel import gettext as _
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from grader import submissions
from grader.catalog.models import Exercise
from grader import courses
from grader.courses import access, codes
from grader.courses.models import STAFF_ROLES, Assignment, Course
from grader.extensions import get_db
from grader.lti import keys, platforms, roles, roster
from grader.lti.models import LtiGradeTarget, LtiPlatform, LtiResourceLink, LtiScorePost
from grader.lti.tool import (LINEITEM_SCOPE, NRPS_SCOPE, PROBLEMS, SCORE_SCOPE, Launch, LaunchError, LinkItem,
                              Tool, check_registration)
from grader.settings import settings
from grader.web.auth import admin_required, login_required, platform_registrar_required
from grader.web.courses import _course_page, instructor_course
from grader.webhooks import Webhook, WebhookDelivery

log = logging.getLogger(__name__)

bp = Blueprint("lti", __name__)

DEEP_LINKING = "LtiDeepLinkingRequest"
RESOURCE_LINK = "LtiResourceLinkRequest"



def _tool() -> Tool:
    with get_db() as s:
        key = keys.current_pair(s)

    def find(issuer: str):
        with get_db() as s:
            return platforms.by_issuer(s, issuer)

    return Tool(find, key, current_app.config["REDIS_URL"], timeout=settings().http_timeout_s)


def _problem(kind: str, detail: str = "", *, status: int | None = None, message: str | None = None):
    """A page a person can act on, and a log line; never a stack trace."""
    log.warning("LTI launch refused (%s): %s", kind, detail[:300])
    status = status or PROBLEMS.get(kind, (400, ""))[0]
    message = str(message or PROBLEMS.get(kind, (0, _("The launch could not be accepted.")))[1])
    return render_template("lti/error.html", kind=kind, message=message), status


# ------------------------------------------------------------------ login and launch

@bp.route("/lti/login", methods=("GET", "POST"))
def login():
    """OIDC login initiation: the platform sends iss, login_hint, target_link_uri..."""
    try:
        return _tool().login(url_for("lti.launch", _external=True))
    except LaunchError as exc:
        return _problem(exc.kind, exc.detail)


@bp.post("/lti/launch")
def launch():
    try:
        data = _tool().launch()
    except LaunchError as exc:
        return _problem(exc.kind, exc.detail)
    if data.message_type not in (RESOURCE_LINK, DEEP_LINKING):
        return _problem("invalid_launch", f"message type {data.message_type!r}",
                        message=_("The grader accepts resource link and deep linking launches only."))
    # A role in this launch's course only, and only from its context roles; no course, no staff.
    role = roles.course_role(data.roles) if data.context_id else "student"
    if data.message_type == DEEP_LINKING and not _returns_to_platform(data):
        return _problem("bad_return_url", f"deep linking return URL {data.deep_link_return_url!r}"[:300],
                        message=_("The LMS asked for the chosen exercises to be sent to an address that is "
                                  "not its own (https, on the LMS's host)."))
    try:
        try:
            user_id, slug, assignment_id, course_id, roster_due = _record(data, role)
        except IntegrityError:  # a concurrent first launch made the same rows: look again
            user_id, slug, assignment_id, course_id, roster_due = _record(data, role)
    except submissions.SubmissionError as exc:
        return _problem("invalid_launch", exc.message, message=_("The LMS sent no usable user id."))
    if roster_due:  # committed: the worker finds the course's memberships URL
        roster.enqueue(course_id)
    _sign_in(user_id)
    log.info("LTI launch: user %s (%s of course %s) from platform %s, %s", user_id, role, course_id,
             data.platform_id, data.message_type)
    staff = role in STAFF_ROLES
    if data.message_type == DEEP_LINKING:
        if not staff:
            return _problem("not_instructor", "deep linking by a non-instructor", status=403,
                            message=_("Only instructors choose exercises for the course."))
        session["lti_deep_link"] = {"launch": data.launch_id, "course": course_id}
        return redirect(url_for("lti.deep_link"), code=303)
    if slug is None:
        if staff:
            return redirect(url_for("web.exercises"), code=303)
        return _problem("link_not_connected", f"resource link {data.resource_link_id!r}", status=404,
                        message=_("This LMS link is not connected to an exercise. Ask your instructor "
                                  "to choose the exercise again (deep linking) or set the custom "
                                  "parameter exercise=<slug>."))
    if assignment_id is not None:  # the course's assignment: its rules, due date and score that counts
        return redirect(url_for("web.assignment_page", assignment_id=assignment_id), code=303)
    # Opened from an LMS course's link: work sent from the page is that course's (courses.take).
    return redirect(url_for("web.exercise", slug=slug, course=course_id) if course_id else
                    url_for("web.exercise", slug=slug), code=303)


def _returns_to_platform(data: Launch) -> bool:
    with get_db() as s:
        row = s.get(LtiPlatform, data.platform_id)
        return row is not None and platforms.returns_to(platforms.as_platform(row), data.deep_link_return_url)


def _record(data: Launch, role: str) -> tuple[int, str | None, int | None, int | None, bool]:
    """The user (made on first launch), the course launched from and the user's role in
    it, the exercise (or the course's assignment) the link opens (remembered for the link,
    and placed in the course), where the user's score goes, and where the course's roster
    is read (True last: its automatic sync is due). One transaction."""
    with get_db() as s:
        user = submissions.user_by_external_id(s, platforms.lms_user_id(data.platform_id, data.sub),
                                                name=data.name[:200])
        if data.name:
            user.name = data.name[:200]
        course = _course(s, data, user.id, role) if data.context_id else None
        slug, assignment_id = _opened_by(s, data, course, user)
        if slug and course is not None:
            courses.place(s, course.id, slug)
        if slug and _grade_target_wanted(data):
            _record_target(s, data, user.id, slug, assignment_id)
        roster_due = course is not None and roster.remember(s, course.id, data.memberships_url)
        s.flush()
        return user.id, slug, assignment_id, course.id if course else None, roster_due


def _course(s, data: Launch, user_id: int, role: str) -> Course:
    """The launch's course (made on its first launch) with the user's role in it, as the
    launch says now."""
    course = s.scalar(select(Course).where(Course.platform_id == data.platform_id,
                                           Course.context_id == data.context_id))
    if course is None:
        course = Course(platform_id=data.platform_id, context_id=data.context_id)
        s.add(course)
    if data.context_title or not course.title:
        course.title = data.context_title[:500]
    if data.context_label or not course.code:
        course.code = codes.lms_code(s, data.context_label, course)  # another course's code: a suffix
    s.flush()
    courses.set_role(s, course.id, user_id, role)
    return course


def _grade_target_wanted(data: Launch) -> bool:
    """Whether the launch says where a score goes: its own line item, or (a placement
    with none) the container to find or create the resource link's line item in."""
    if SCORE_SCOPE not in data.ags_scopes:
        return False
    return bool(data.lineitem or (data.lineitems and data.resource_link_id and LINEITEM_SCOPE in data.ags_scopes))


def _record_target(s, data: Launch, user_id: int, slug: str, assignment_id: int | None) -> None:
    mine = select(LtiGradeTarget).where(LtiGradeTarget.user_id == user_id, LtiGradeTarget.exercise_slug == slug,
                                        LtiGradeTarget.platform_id == data.platform_id)
    target = None
    if data.lineitem:
        target = s.scalar(mine.where(LtiGradeTarget.lineitem_url == data.lineitem).limit(1))
    if target is None and data.lineitems and data.resource_link_id:
        # The same link seen before: with the line item the score task found or created for
        # it, or (now that the platform names one) with the line item it had earlier.
        target = s.scalar(mine.where(LtiGradeTarget.lineitems_url == data.lineitems,
                                     LtiGradeTarget.resource_link_id == data.resource_link_id).limit(1))
    if target is None:
        target = LtiGradeTarget(user_id=user_id, exercise_slug=slug, platform_id=data.platform_id,
                                lineitems_url=data.lineitems, resource_link_id=data.resource_link_id)
        s.add(target)
    if data.lineitem:
        target.lineitem_url = data.lineitem
    # else: kept; the score task fills it in for a placement without a line item
    target.lti_user_id, target.scopes, target.assignment_id = data.sub, list(data.ags_scopes), assignment_id


def _opened_by(s, data: Launch, course: Course | None, user) -> tuple[str | None, int | None]:
    """What the link opens: an assignment of the launch's own course (custom parameter
    ``assignment``, or what the link opened before), else an exercise."""
    link = None
    if data.resource_link_id:
        link = s.scalar(select(LtiResourceLink).where(LtiResourceLink.platform_id == data.platform_id,
                                                      LtiResourceLink.resource_link_id == data.resource_link_id))
    wanted = data.custom.get("assignment")
    if wanted is None and link is not None and link.assignment_id is not None and "exercise" not in data.custom:
        wanted = str(link.assignment_id)
    if wanted is not None:
        assignment = s.get(Assignment, int(wanted)) if str(wanted).isdigit() and len(str(wanted)) < 10 else None
        if assignment is None or course is None or assignment.course_id != course.id:
            return None, None  # another course's assignment is not this link's to open
        if data.resource_link_id:
            if link is None:
                link = LtiResourceLink(platform_id=data.platform_id, resource_link_id=data.resource_link_id)
                s.add(link)
            link.exercise_slug, link.assignment_id = assignment.exercise_slug, assignment.id
        return assignment.exercise_slug, assignment.id
    return _exercise_for(s, data, link, user), None


def _exercise_for(s, data: Launch, link: LtiResourceLink | None, user) -> str | None:
    """The custom parameter ``exercise`` (set by our deep linking response, or by hand),
    else what this link opened before; only an exercise the launching user sees on its own
    (grader.courses.exercises: a draft reaches a course's students through its assignments)."""
    wanted = data.custom.get("exercise")
    if wanted:
        row = s.get(Exercise, wanted) if len(wanted) <= 100 else None
        if not courses.exercises.visible_to(s, row, user):
            return None
        if data.resource_link_id:
            if link is None:
                s.add(LtiResourceLink(platform_id=data.platform_id, resource_link_id=data.resource_link_id,
                                      exercise_slug=row.slug))
            else:
                link.exercise_slug, link.assignment_id = row.slug, None
        return row.slug
    if link is not None:
        row = s.get(Exercise, link.exercise_slug)
        return row.slug if courses.exercises.visible_to(s, row, user) else None
    return None


def _sign_in(user_id: int) -> None:
    """As the sign-in form does: a fresh session holding the user's id."""
    lang = session.get("lang")
    session.clear()
    session["user_id"] = user_id
    if lang:
        session["lang"] = lang


# ------------------------------------------------------------------ deep linking

@bp.route("/lti/deep-link", methods=("GET", "POST"))
@login_required
def deep_link():
    pending = session.get("lti_deep_link")
    if not isinstance(pending, dict) or not pending.get("launch"):
        return _problem("no_deep_link", "no deep linking launch in this session", status=400,
                        message=_("Start choosing exercises from the LMS (add an activity or an external tool)."))
    launch_id = pending["launch"]
    with get_db() as s:
        if not access.is_staff_of(s, g.user, pending["course"]):  # the role may be gone since
            return _problem("not_instructor", "deep linking by a non-instructor", status=403,
                            message=_("Only instructors choose exercises for the course."))
        # A link to an exercise on its own opens it for every student of the LMS course: only
        # what anyone sees (the released catalogue). A draft reaches them as an assignment's.
        exercises = courses.exercises.listed(s)
        assignments = s.scalars(select(Assignment).where(Assignment.course_id == pending["course"])
                                .order_by(Assignment.due_at)).all()
        maxima = dict(s.execute(select(Exercise.slug, Exercise.max_score).where(
            Exercise.slug.in_({a.exercise_slug for a in assignments}))).all())
    if request.method == "GET":
        return render_template("lti/deep_link.html", exercises=exercises, assignments=assignments, error=None)
    chosen, chosen_assignments = set(request.form.getlist("exercise")), set(request.form.getlist("assignment"))
    picked = [row for row in exercises if row.slug in chosen]
    picked_assignments = [a for a in assignments if str(a.id) in chosen_assignments]
    if not picked and not picked_assignments:
        return render_template("lti/deep_link.html", exercises=exercises, assignments=assignments,
                               error=_("Choose at least one exercise.")), 422
    launch_url = url_for("lti.launch", _external=True)
    items = [LinkItem(title=row.title.get("en") or row.slug, url=launch_url, custom={"exercise": row.slug},
                      score_maximum=float(row.max_score), resource_id=row.slug) for row in picked]
    items += [LinkItem(title=a.title, url=launch_url, custom={"assignment": str(a.id)},
                       score_maximum=float(maxima.get(a.exercise_slug) or 0), resource_id=f"assignment-{a.id}")
              for a in picked_assignments]
    try:
        return_url, token, platform = _tool().deep_link_response(launch_id, items)
    except LaunchError as exc:
        return _problem(exc.kind, exc.detail)
    if not platforms.returns_to(platform, return_url):  # checked at launch; the form posts a signed token
        return _problem("bad_return_url", f"deep linking return URL {return_url!r}"[:300],
                        message=_("The LMS asked for the chosen exercises to be sent to an address that is "
                                  "not its own (https, on the LMS's host)."))
    session.pop("lti_deep_link", None)
    return render_template("lti/autopost.html", action=return_url, fields={"JWT": token})


# ------------------------------------------------------------------ keys and configuration

@bp.get("/lti/jwks")
def jwks():
    with get_db() as s:
        document = keys.jwks(s)
    response = jsonify(document)
    response.headers["Cache-Control"] = "public, max-age=300"
    return response


def tool_configuration(root: str) -> dict:
    """The document an LMS administrator pastes (Canvas reads it as is; the generic
    fields name every URL another LMS asks for)."""
    root = root.rstrip("/")
    login_url, launch_url, jwks_url = f"{root}/lti/login", f"{root}/lti/launch", f"{root}/lti/jwks"
    scopes = ["https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
              "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly", SCORE_SCOPE, NRPS_SCOPE]
    return {
        "title": "Autograd grader",
        "description": "PyTorch autograd exercises, graded automatically; scores go to the gradebook.",
        "oidc_initiation_url": login_url,
        "target_link_uri": launch_url,
        "redirect_uris": [launch_url],
        "public_jwk_url": jwks_url,
        "deep_linking_url": launch_url,
        "scopes": scopes,
        "custom_fields": {},
        "extensions": [{
            "platform": "canvas.instructure.com",
            "domain": root.split("://", 1)[-1].split("/", 1)[0],
            "privacy_level": "name_only",
            "settings": {"placements": [
                {"placement": "assignment_selection", "message_type": DEEP_LINKING,
                 "target_link_uri": launch_url},
                {"placement": "link_selection", "message_type": DEEP_LINKING, "target_link_uri": launch_url},
            ]},
        }],
    }


@bp.get("/lti/config")
def config():
    return jsonify(tool_configuration(request.url_root))


# ------------------------------------------------------------------ a course's roster

@bp.post("/courses/<int:course_id>/roster/sync")
@login_required
def roster_sync(course_id: int):
    """The course's instructor asks for its roster from the LMS now; a worker reads it and
    the course page shows how it went."""
    with get_db() as s:
        course = instructor_course(s, course_id)
        offered = roster.of_course(s, course.id) is not None
    if not offered:
        return _course_page(course_id, status=409, error=_(
            "The LMS offered no roster service (Names and Role Provisioning Services) for this course, so there "
            "is no roster to read: members arrive as they launch."))
    if not roster.enqueue(course_id):
        return _course_page(course_id, status=503, error=_("The sync could not be queued. Try again shortly."))
    log.info("LTI roster sync of course %s asked for by user %s", course_id, g.user.id)
    return redirect(url_for("web.course_page", course_id=course_id, roster="queued"), code=303)


# ------------------------------------------------------------------ instructor pages

FORM_FIELDS = platforms.EDITABLE  # a registration's fields, as registering and editing take them


def _form() -> dict:
    return {name: request.form.get(name, "") for name in FORM_FIELDS}


def _fields(form: dict) -> dict:
    """The form's fields as the domain takes them."""
    return dict(issuer=form["issuer"], client_id=form["client_id"],
                deployment_ids=platforms.split_ids(form["deployment_ids"]), auth_login_url=form["auth_login_url"],
                auth_token_url=form["auth_token_url"], jwks_url=form["jwks_url"], name=form["name"])


def _serving() -> dict:
    """The tool's URLs as this request names them, and what keeps an LMS from using them:
    LMSs call and frame the tool over HTTPS only, and a framed tool's session cookie comes
    along only as SameSite=None; Secure (GRADER_COOKIE_SECURE)."""
    public_url = settings().public_url
    return dict(tool=tool_configuration(request.url_root), over_http=request.scheme != "https",
                cookie_insecure=not current_app.config.get("SESSION_COOKIE_SECURE"),
                public_url=public_url, public_url_http=not public_url.startswith("https://"))


@bp.route("/instructor/lti/platforms", methods=("GET", "POST"))
@platform_registrar_required
def platform_list():
    error, status, form = None, 200, {}
    if request.method == "POST":
        form = _form()
        try:
            with get_db() as s:
                platforms.add(s, actor=g.user, **_fields(form))
        except platforms.PlatformError as exc:
            error, status = _platform_error(exc), _error_status(exc)
            log.warning("LTI platform %s (client %s) refused for user %s: %s", form["issuer"][:200],
                        form["client_id"][:200], g.user.id, exc)
        except IntegrityError:
            error, status = _("That platform was just registered by someone else; reload the page."), 409
        else:
            log.info("LTI platform %s (client %s) registered by user %s", form["issuer"], form["client_id"],
                     g.user.id)
            return redirect(url_for("lti.platform_list"), code=303)
    with get_db() as s:
        rows = platforms.listed(s, actor=g.user)  # an instructor sees (and may change) only their own
    return render_template("instructor/lti_platforms.html", platforms=rows, error=error, form=form,
                           done=request.args.get("done"), **_serving()), status


def _platform_page(platform_id: int, *, status: int = 200, error: str | None = None, form: dict | None = None,
                   steps: list | None = None):
    """One registration's page: its fields to edit, enable or disable, delete, check, and its history."""
    with get_db() as s:
        try:
            row = platforms.get(s, platform_id, g.user)
        except platforms.PlatformError:
            abort(404)
        changes = platforms.history(s, [row.id])[row.id]
        kid = keys.current_pair(s).kid
    if form is None:
        form = {name: getattr(row, name) for name in FORM_FIELDS}
        form["deployment_ids"] = " ".join(row.deployment_ids or [])
    return render_template("instructor/lti_platform.html", platform=row, changes=changes, form=form, error=error,
                           steps=steps, done=request.args.get("done"), kid=kid, **_serving()), status


@bp.get("/instructor/lti/platforms/<int:platform_id>")
@platform_registrar_required
def platform_page(platform_id: int):
    return _platform_page(platform_id)


@bp.post("/instructor/lti/platforms/<int:platform_id>")
@platform_registrar_required
def platform_edit(platform_id: int):
    form = _form()
    try:
        with get_db() as s:
            changed = platforms.edit(s, platform_id, actor=g.user, **_fields(form))
    except platforms.PlatformError as exc:
        if exc.missing:
            abort(404)
        log.warning("LTI platform %s: change refused for user %s: %s", platform_id, g.user.id, exc)
        return _platform_page(platform_id, status=_error_status(exc), error=_platform_error(exc), form=form)
    except IntegrityError:  # registered meanwhile by someone else
        return _platform_page(platform_id, status=409, form=form,
                              error=_("Another registration has this issuer and client id."))
    log.info("LTI platform %s changed by user %s: %s", platform_id, g.user.id, ", ".join(changed) or "nothing")
    return redirect(url_for("lti.platform_page", platform_id=platform_id, done="saved"), code=303)


@bp.post("/instructor/lti/platforms/<int:platform_id>/<any(disable, enable, delete):action>")
@platform_registrar_required
def platform_state(platform_id: int, action: str):
    if action == "delete" and request.form.get("confirm") != "yes":
        return _platform_page(platform_id, status=422, error=_("Tick the box to confirm the deletion."))
    try:
        with get_db() as s:
            getattr(platforms, action)(s, platform_id, actor=g.user)
    except platforms.PlatformError:
        abort(404)
    log.info("LTI platform %s: %s by user %s", platform_id, action, g.user.id)
    if action == "delete":
        return redirect(url_for("lti.platform_list", done="deleted"), code=303)
    return redirect(url_for("lti.platform_page", platform_id=platform_id, done=action + "d"), code=303)


@bp.post("/instructor/lti/platforms/<int:platform_id>/check")
@platform_registrar_required
def platform_check(platform_id: int):
    """What the tool can check of the registration from its side (grader.lti.tool.check_registration);
    the database is not held while the LMS is called."""
    with get_db() as s:
        try:
            row = platforms.get(s, platform_id, g.user)
        except platforms.PlatformError:
            abort(404)
        target, key = platforms.as_platform(row), keys.current_pair(s)
    steps = check_registration(target, key, timeout=settings().http_timeout_s)
    log.info("LTI platform %s checked by user %s: %s", platform_id, g.user.id,
             "; ".join(f"{step.name} {'ok' if step.ok else 'failed'}" for step in steps))
    return _platform_page(platform_id, steps=steps)


def _error_status(exc: platforms.PlatformError) -> int:
    return 404 if exc.missing else 403 if exc.forbidden else 409 if exc.field == "taken" else 422


def _platform_error(exc: platforms.PlatformError) -> str:
    """The registration form's error in the reader's language, by the field at fault."""
    known = {
        "issuer": _("The issuer must be 1 to %(limit)d printable characters.", limit=500),
        "client_id": _("The client id must be 1 to %(limit)d printable characters.", limit=500),
        "deployment_id": _("A deployment id must be 1 to %(limit)d printable characters.", limit=500),
        "deployment_ids": _("Give at least one deployment id."),
        "auth_login_url": _("The authentication (OIDC auth) URL must be an absolute https URL."),
        "auth_token_url": _("The access token URL must be an absolute https URL."),
        "jwks_url": _("The JWKS (public keyset) URL must be an absolute https URL."),
        "owner": _("This registration belongs to someone else: only its owner or an administrator changes it."),
        "taken": _("Another registration has this issuer and client id."),
    }
    if exc.field == "issuer" and exc.forbidden:
        return _("This issuer is registered already: only an administrator adds another client id to it.")
    return known.get(exc.field, str(exc))


@bp.get("/instructor/lti/deliveries")
@admin_required
def deliveries():
    """Webhook deliveries and score passbacks, newest first: what was sent, what came back
    (a score set by hand for a student with no grade: for whom, as the LMS knows them)."""
    with get_db() as s:
        hooks = s.execute(select(WebhookDelivery, Webhook.url).join(Webhook)
                          .order_by(WebhookDelivery.created_at.desc(), WebhookDelivery.id.desc())
                          .limit(100)).all()
        # a line item not yet found or created: its container instead
        lineitem = func.coalesce(LtiGradeTarget.lineitem_url, LtiGradeTarget.lineitems_url)
        scores = s.execute(select(LtiScorePost, lineitem, LtiGradeTarget.lti_user_id).join(LtiGradeTarget)
                           .order_by(LtiScorePost.created_at.desc(), LtiScorePost.id.desc()).limit(100)).all()
    return render_template("instructor/lti_deliveries.html", hooks=hooks, scores=scores)

