"""What a student sees: the exercises, one exercise with its submission form, a
submission's live progress and report, their own submissions and best scores."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from flask import abort, current_app, g, jsonify, redirect, render_template, request, url_for
from markupsafe import Markup, escape
from flask_babel import get_locale
from flask_babel import gettext as _
from sqlalchemy import func, select

from grader import submissions
from grader.catalog import drafts, uploads
from grader.catalog.models import Exercise, UploadStatus
from grader import courses
from grader.courses import access, comments
from grader.courses.models import Assignment, Course, CourseMember
from grader.escapes import shown
from grader.exports import attachment
from grader.extensions import get_db, limiter, one_at_a_time
from grader.settings import MAX_NOTEBOOK_BYTES, MAX_SOURCE_BYTES
from grader.submissions import notebooks
from grader.submissions.models import PENDING, Submission, SubmissionStatus
from grader.web import bp, errors
from grader.web.auth import login_required
from grader.refusals import Refused
from grader.web.render import localized_tests, markdown_html, refused_words, report_words

log = logging.getLogger(__name__)

_SUBMISSION_ID = re.compile(r"^[0-9a-f]{32}$")


def lang() -> str:
    return str(get_locale() or "en")


def best_scores(session, user_id: int) -> dict[str, float | None]:
    """Per exercise, the best practice score (work for an assignment counts on its course's
    page); None where an assignment of the student's holds that exercise's hidden results,
    which the best of the same code sent here would tell."""
    rows = session.execute(select(Submission.exercise_slug, func.max(Submission.score))
                           .where(Submission.user_id == user_id, Submission.status == SubmissionStatus.GRADED,
                                  Submission.assignment_id.is_(None))
                           .group_by(Submission.exercise_slug))
    return {slug: None if courses.exercise_held_until(session, slug, user_id) else score for slug, score in rows}


def published(session, slug: str) -> Exercise:
    """The exercise ``slug`` where the signed-in user sees it on its own (a draft: its
    author, administrators, its courses' staff; grader.courses.exercises); else 404."""
    row = courses.exercises.find(session, slug, g.user)
    if row is None:
        abort(404)
    return row


@bp.get("/")
def index():
    """Where signing in lands: a member of one course on that course's page (its
    assignments, what is due), of several on the list of their courses; anyone else on
    the exercise catalogue, where work counts for no course."""
    if g.user is not None:
        with get_db() as s:
            joined = s.scalars(select(CourseMember.course_id).where(CourseMember.user_id == g.user.id)).all()
        if len(joined) == 1:
            return redirect(url_for("web.course_page", course_id=joined[0]))
        if joined:
            return redirect(url_for("web.course_list"))
    return redirect(url_for("web.exercises"))


@bp.get("/exercises")
@login_required
def exercises():
    with get_db() as s:
        rows = courses.exercises.listed(s, g.user)
        best = best_scores(s, g.user.id)
    return render_template("exercises.html", exercises=rows, best=best)


def statement(slug: str) -> str | None:
    """In the page's language where the bundle has it, else in English."""
    with get_db() as s:
        found = uploads.statements(s, slug, current_app.config["EXERCISES_DIR"])
    return found.get(lang()) or found["en"]


@bp.get("/exercises/<slug>")
@login_required
def exercise(slug: str):
    return _exercise_page(slug)


@bp.post("/exercises/<slug>/release")
@login_required
def exercise_release(slug: str):
    """Release a draft to the catalogue: its author's or an administrator's step
    (grader.catalog.drafts); anyone else who sees it is refused, and nothing changes."""
    with get_db() as s:
        row = published(s, slug)
        try:
            drafts.release(s, row, user_id=g.user.id, admin=access.is_admin(g.user))
        except drafts.NotReleasable:
            abort(403)
    return redirect(url_for("web.exercise", slug=slug), code=303)


def _via_course() -> int | None:
    """The LMS course whose link opened the exercise's page (?course=), carried to its form;
    courses.take keeps it only where it holds."""
    given = request.args.get("course", "")
    return int(given) if given.isdigit() and len(given) < 10 else None


def _exercise_page(slug: str, *, source: str | None = None, error: str | None = None, status: int = 200):
    """The exercise's page; ``source`` is code given back after a refusal, else the editor
    opens with what ?from= asks for (editor_start)."""
    with get_db() as s:
        row = published(s, slug)
        mine = s.scalars(select(Submission).where(Submission.user_id == g.user.id,
                                                  Submission.exercise_slug == slug)
                         .order_by(Submission.created_at.desc()).limit(20)).all()
        held = held_ids(s, mine)
        editor = editor_start(s, slug, mine[0] if mine else None, source)
        releasable = not row.released and drafts.may_release(s, row, user_id=g.user.id,
                                                              admin=access.is_admin(g.user))
    text = statement(slug)
    return render_template("exercise.html", exercise=row, mine=mine, held=held, error=error, editor=editor,
                           via_course=_via_course(), releasable=releasable,
                           statement=markdown_html(text) if text is not None else None,
                           max_bytes=MAX_SOURCE_BYTES), status


@dataclass(frozen=True)
class EditorStart:
    """What the editor opens with: ``source``, and where it came from (``origin``: "refused",
    the code just sent and refused; "starter"; "latest", the student's latest submission;
    "submission", an older one, ``submission_id``), and whether there is a latest to offer."""

    source: str
    origin: str
    has_latest: bool
    submission_id: str | None = None


def editor_start(s, slug: str, latest: Submission | None, refused: str | None, *,
                 version: int | None = None) -> EditorStart:
    """The code never lost: after a refusal, what was sent; else what ?from= asks for
    ("starter", "latest" or one of the student's own submissions' ids), by default the
    latest submission where there is one, else the exercise's starter code."""
    if refused is not None:
        return EditorStart(refused, "refused", latest is not None)
    wanted = request.args.get("from", "latest" if latest is not None else "starter")
    if _SUBMISSION_ID.fullmatch(wanted):
        row = s.get(Submission, wanted)
        if row is not None and row.user_id == g.user.id and row.exercise_slug == slug:
            return EditorStart(row.source, "latest" if latest and row.id == latest.id else "submission",
                               latest is not None, row.id)
    if wanted == "latest" and latest is not None:
        return EditorStart(latest.source, "latest", True, latest.id)
    return EditorStart(uploads.starter(s, slug, version, current_app.config["EXERCISES_DIR"]) or "", "starter",
                       latest is not None)


def submission_limit() -> str:
    return current_app.config["SUBMISSION_RATE_LIMIT"]


# Only a submission accepted (a redirect to it) counts against the limit. One allowance per
# user, on every page and through their personal tokens on the API (extensions.submitter).
_limit_submissions = limiter.shared_limit(submission_limit, scope="submissions",
                                          deduct_when=lambda response: response.status_code == 303)


def limit_submissions(view):
    """The limit, and one request of a user at a time around it (extensions.one_at_a_time)."""
    return one_at_a_time(_limit_submissions(view))


def posted_source() -> tuple[str, str | bytes | notebooks.Notebook, str]:
    """What the submit form sent: (the pasted text, the source to grade, which is the
    uploaded file where there is one (a .ipynb is a notebook, read by grader.submissions),
    and the text to give back on a refusal so that nothing typed is lost: the uploaded .py
    where it is text, else what was pasted)."""
    pasted = request.form.get("source", "")
    upload = request.files.get("file")
    source: str | bytes | notebooks.Notebook = pasted
    kept = pasted
    if upload is not None and notebooks.is_notebook_name(upload.filename):
        source = notebooks.Notebook(upload.stream.read(MAX_NOTEBOOK_BYTES + 1))
    elif upload is not None and upload.filename:
        source = upload.stream.read(MAX_SOURCE_BYTES + 1)
        try:
            text = source.decode("utf-8")
            kept = pasted if "\0" in text else text
        except UnicodeDecodeError:
            pass
    return pasted, source, kept if len(kept) <= MAX_SOURCE_BYTES else ""


@bp.post("/exercises/<slug>/submissions")
@login_required
@limit_submissions
def submit(slug: str):
    _pasted, source, kept = posted_source()
    try:
        taken = courses.take(get_db, who=g.user, target=lambda s: published(s, slug).slug, source=source,
                             way=submissions.way_in(g.user), via_course=_via_course())
    except Refused as exc:
        return _exercise_page(slug, source=kept, error=_error_text(exc), status=exc.status)
    return redirect(url_for("web.submission", submission_id=taken.id), code=303)


# A rate-limited submission is the exercise's page again, the code in the editor (auth._throttled).
errors.refused_forms["web.submit"] = lambda message: _exercise_page(
    request.view_args["slug"], source=posted_source()[2], error=message, status=429)


@bp.get("/exercises/<slug>/starter.py")
@login_required
def starter_download(slug: str):
    with get_db() as s:
        published(s, slug)
        text = uploads.starter(s, slug, None, current_app.config["EXERCISES_DIR"])
    if text is None:
        abort(404)
    return _download(text, f"{slug}-starter.py")


@bp.get("/submissions/<submission_id>/source.py")
@login_required
def source_download(submission_id: str):
    with get_db() as s:
        row = _own_submission(s, submission_id)
        name = f"{row.exercise_slug}-{row.created_at.strftime('%Y%m%d-%H%M%S')}.py"
    return _download(row.source, name)


def _download(text: str, name: str):
    response = current_app.response_class(text, mimetype="text/x-python")
    response.headers["Content-Disposition"] = attachment(name)
    return response


def _error_text(exc: submissions.SubmissionError) -> str:
    """A submission refused, in the reader's language (grader.refusals' words)."""
    return _syntax_error_text(exc) if exc.code == "syntax_error" else refused_words(exc)


def _syntax_error_text(exc: submissions.SubmissionError) -> str:
    """Where the code does not parse, in the reader's language (the parser's own words are
    Python's, in English), and that it cost nothing: the check comes before any rule."""
    where, why = getattr(exc, "where", {}), getattr(exc, "reason", None) or exc.message
    if "cell" in where:
        return _("Your notebook has a syntax error in cell %(cell)d, line %(line)d: %(why)s. "
                 "Nothing was submitted; no attempt was used.", cell=where["cell"], line=where["cell_line"],
                 why=why)
    if "line" in where:
        return refused_words(exc, line=where["line"], reason=why)
    return _("Your code is nested too deeply to be read. Nothing was submitted; no attempt was used.")


def _own_submission(s, submission_id: str) -> Submission:
    row = s.get(Submission, submission_id) if _SUBMISSION_ID.fullmatch(submission_id) else None
    # Someone else's submission is "not found", not "forbidden": its id tells nothing.
    if row is None or not access.may_see(s, g.user, row):
        abort(404)
    return row


def held_ids(s, rows: list[Submission]) -> set[str]:
    """Which of ``rows`` have their score held from the viewer (the rule courses.seen asks)."""
    return {row.id for row in rows if courses.feedback_held_until(s, row, g.user.id) is not None}


@bp.get("/submissions/<submission_id>")
@login_required
def submission(submission_id: str):
    return submission_page(submission_id)


def submission_page(submission_id: str, *, comment_error: str | None = None, typed: dict | None = None,
                    status: int = 200):
    """The submission's page; after a refused comment, with the refusal and what was typed."""
    with get_db() as s:
        row = _own_submission(s, submission_id)
        exercise_row = row.exercise
        owner = row.user
        shown = courses.seen(s, row, g.user)
        delayed = submissions.delayed(row)
        remarks = comments.shown_to(s, row, g.user)
        may_comment = comments.may_comment(s, g.user, row)
        lines = comments.source_lines(row.source)
    tests = localized_tests({"tests": shown.tests}, lang()) if row.report else []
    held = courses.shown(shown.held_until, shown.course) if shown.held else None
    by_line: dict[int, list] = {}
    for remark in remarks:
        if remark.line is not None:
            by_line.setdefault(remark.line, []).append(remark)
    return render_template("submission.html", submission=row, exercise=exercise_row, owner=owner, seen=shown,
                           shown_report=courses.held_report(row.report, shown),
                           tests=tests, pending=row.status in PENDING, delayed=delayed, held=held,
                           held_count=shown.hidden_held,
                           visible_points=shown.visible_points,
                           comments=remarks, overall=[r for r in remarks if r.line is None], by_line=by_line,
                           may_comment=may_comment, source_lines=lines, comment_error=comment_error,
                           typed=typed or {}, comment_max=comments.MAX_BODY), status


@bp.get("/submissions/<submission_id>/status")
@login_required
def submission_status(submission_id: str):
    """What the submission page polls while the grade runs."""
    with get_db() as s:
        row = _own_submission(s, submission_id)
        # Polled every second or two while the grade runs: the held rule alone (the one
        # courses.seen asks), not the whole view with the score that counts.
        held = courses.feedback_held_until(s, row, g.user.id) is not None
        delayed = submissions.delayed(row)
    return jsonify(status=row.status, done=row.progress_done, total=row.progress_total,
                   score=None if held else row.score, max_score=None if held else row.max_score, delayed=delayed)


@bp.get("/submissions")
@login_required
def my_submissions():
    with get_db() as s:
        rows = s.scalars(select(Submission).where(Submission.user_id == g.user.id)
                         .order_by(Submission.created_at.desc()).limit(200)).all()
        best = best_scores(s, g.user.id)
        titles = {e.slug: e.title for e in s.scalars(select(Exercise))}
        held = held_ids(s, rows)
        course_of = courses_of(s, rows)
    return render_template("submissions.html", submissions=rows, best=best, titles=titles, held=held,
                           course_of=course_of)


def courses_of(s, rows: list[Submission]) -> dict[int, Course]:
    """The course of each assignment ``rows`` were made for, whose time they are shown in."""
    ids = {row.assignment_id for row in rows if row.assignment_id is not None}
    if not ids:
        return {}
    return dict(s.execute(select(Assignment.id, Course).join(Course, Course.id == Assignment.course_id)
                          .where(Assignment.id.in_(ids))).all())


# Reports stored before the engine escaped them, and the submitted source (bidi
# overrides can make code read differently from what runs), show control characters escaped.
bp.add_app_template_filter(shown, "shown")
# A moment as a course reads it, with its zone (courses.shown): every time shown to its members.
bp.add_app_template_global(courses.shown, "shown_at")


# Where a report names a line of the graded source (a traceback's `File "submission.py",
# line 12`; in Korean, `submission.py 12행`), as the page has it once escaped.
_LINE_MENTION = re.compile(r"(submission\.py(?:&#34;|&quot;)?, line )(\d{1,6})\b()"
                           r"|\b(line )(\d{1,6})( of submission\.py)|(submission\.py )(\d{1,6})(행)")


@bp.app_template_filter("line_links")
def line_links(text: str | None, source: str | None) -> Markup | None:
    """A report message, escaped, with each line of the graded source it names a link to
    that line of the code shown below it (numbered)."""
    if not text:
        return text
    lines = (source or "").count("\n") + 1

    def link(match: re.Match) -> str:
        first = next(i for i in (1, 4, 7) if match.group(i + 1))
        before, number, after = match.group(first, first + 1, first + 2)
        if not 0 < int(number) <= lines:
            return match.group(0)
        return f'{before}<a href="#L{number}">{number}</a>{after}'

    return Markup(_LINE_MENTION.sub(link, str(escape(text))))


# Code in a hint: `quoted`, or what reads as code unquoted (a call, an attribute: f(a).sum(),
# x.grad, backward()); "e.g." and "i.e." are words.
_CODE_IN_TEXT = re.compile(r"`([^`\n]+)`|(?<![\w.])(?!e\.g\b|i\.e\b)([A-Za-z_]\w*(?:\.[A-Za-z_]\w*|\((?:[^()\s]|\([^()\s]*\))*\))+)")


@bp.app_template_filter("code_in_text")
def code_in_text(text: str | None) -> Markup | None:
    """A hint, escaped, with the code in it set as code."""
    if not text:
        return text
    return Markup(_CODE_IN_TEXT.sub(lambda m: f"<code>{m.group(1) or m.group(2)}</code>", str(escape(text))))


@bp.app_template_filter("numbered")
def numbered(source: str | None, by_line: dict | None = None) -> Markup:
    """The submitted code, escaped (control characters shown), each line numbered and
    with an id (#L12) that tracebacks link to. Line ends read as Python reads them: code
    stored before sources were normalised may end its lines with CRLF, which is no control
    character to show. ``by_line``: the comments shown beside each line (courses.comments),
    their text escaped."""
    text = shown((source or "").replace("\r\n", "\n")) or ""
    lines = (text[:-1] if text.endswith("\n") else text).split("\n")
    return Markup("\n".join(
        f'<span class="line" id="L{n}"><span class="ln" aria-hidden="true">{n}</span>{escape(line)}</span>'
        + "".join(_line_comment(n, remark) for remark in (by_line or {}).get(n, ()))
        for n, line in enumerate(lines, 1)))


def _line_comment(n: int, remark) -> str:
    who = escape(remark.author_name or _("Course staff"))
    return (f'<span class="line-comment" id="comment-{remark.id}"><span class="visually-hidden">'
            f'{escape(_("Comment on line %(n)d", n=n))}: </span><span class="comment-by">{who}</span> '
            f'<span class="comment-body">{escape(shown(remark.body))}</span></span>')


@bp.app_template_filter("located")
def located(text: str | None, cell_map: dict | None) -> str | None:
    """A notebook's report message with the cell beside each line number of the graded
    source: `line 12 (cell 3, line 2)`, in the page's language."""
    return notebooks.annotate(text, cell_map, lang())


@bp.app_context_processor
def page_helpers() -> dict:
    labels = {SubmissionStatus.QUEUED: _("Waiting for a grader…"), SubmissionStatus.RUNNING: _("Running the tests…"),
              SubmissionStatus.GRADED: _("Graded"), SubmissionStatus.FAILED: _("Could not grade")}
    report_labels = {
        "syntax_error": _("Your code has a syntax error, so no test could run."),
        "time_limit": _("Your code ran out of time."),
        "memory_limit": _("Your code used more memory than allowed."),
        "submission_error": _("Your code failed before the tests could call it."),
    }
    upload_labels = {UploadStatus.CHECKING: _("Checking…"), UploadStatus.PUBLISHED: _("Published"),
                     UploadStatus.REJECTED: _("Rejected")}
    roles = {"student": _("student"), "ta": _("teaching assistant"), "instructor": _("instructor")}
    regrade_labels = {"running": _("Running"), "ready": _("Ready to publish"), "published": _("Published"),
                      "discarded": _("Discarded")}
    return {"current_lang": lang(), "status_label": lambda status: labels.get(status, status),
            "notebook_max_bytes": MAX_NOTEBOOK_BYTES,
            "role_label": lambda role: roles.get(role, role),
            "regrade_label": lambda status: regrade_labels.get(status, status),
            "upload_label": lambda status: upload_labels.get(status, status),
            "report_status_label": lambda status: report_labels.get(status, status),
            "report_words": lambda report: report_words(report, lang())}
