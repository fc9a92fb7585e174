"""The administrators' mail page: every mail the service queued, what became of it and
each try; and one mail's text. A mail's link into an account is never shown (it is not
stored); with no SMTP server set, the instance folder's outbox holds the mail as sent."""

from __future__ import annotations

from flask import abort, g, render_template, request
from flask_babel import gettext as _
from sqlalchemy import select

from grader.accounts import notices
from grader.accounts.models import User
from grader.extensions import get_db
from grader.mail import LINK, Mail, MailAttempt
from grader.settings import settings
from grader.web import bp
from grader.web.auth import admin_required, login_required

PAGE = 100


@bp.get("/instructor/mail")
@admin_required
def mail_list():
    status = request.args.get("status", "")
    with get_db() as s:
        query = select(Mail).order_by(Mail.id.desc()).limit(PAGE)
        if status:
            query = query.where(Mail.status == status[:20])
        mails = list(s.scalars(query))
    config = settings()
    return render_template("instructor/mail.html", mails=mails, status=status, outbox=not config.smtp_url,
                           outbox_dir=config.instance_dir / "outbox")


@bp.get("/instructor/mail/<int:mail_id>")
@admin_required
def mail_one(mail_id: int):
    with get_db() as s:
        mail = s.get(Mail, mail_id) if 0 < mail_id < 2**31 else None
        if mail is None:
            abort(404)
        tries = list(s.scalars(select(MailAttempt).where(MailAttempt.mail_id == mail_id).order_by(MailAttempt.id)))
    return render_template("instructor/mail_one.html", mail=mail, tries=tries, link_mark=LINK), 200, \
        {"Cache-Control": "no-store"}


# ------------------------------------------------------------------ what mail a user gets

def _kind_words() -> dict[str, str]:
    return {"added": _("when I am added to a course"),
            "graded": _("when a grade that took long, or failed, is done"),
            "regraded": _("when a regrade changes the score that counts"),
            "standing": _("when staff give me an extension or set my score"),
            "due_soon": _("a day before an assignment is due, while I have attempts left"),
            "commented": _("when staff comment on my submission (once its feedback is shown)")}


@bp.route("/account/mail", methods=("GET", "POST"))
@login_required
def mail_settings():
    saved = False
    with get_db() as s:
        user = s.get(User, g.user.id)
        if request.method == "POST":
            notices.choose(user, set(request.form.getlist("on")) & set(notices.KINDS))
            saved = True
        on = {kind for kind in notices.KINDS if kind not in (user.mail_off or [])}
        email = user.email
    return render_template("account/mail.html", kinds=_kind_words(), on=on, saved=saved, email=email)


@bp.route(notices.STOP_PATH + "/<int:user_id>/<kind>/<key>", methods=("GET", "POST"))
def mail_stop(user_id: int, kind: str, key: str):
    """A notice's unsubscribe link: works signed out. Opening it asks; its button (or a mail
    program's one-click POST, RFC 8058) switches that kind off and nothing else."""
    with get_db() as s:
        if request.method == "POST":
            valid = notices.stop(s, user_id, kind, key) is not None
        else:
            valid = notices.is_stop_link(s, user_id, kind, key)
    if not valid:
        return render_template("account/stop.html", refused=True), 404, {"Referrer-Policy": "no-referrer"}
    return render_template("account/stop.html", refused=False, kind=_kind_words()[kind],
                           done=request.method == "POST"), 200, \
        {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}
