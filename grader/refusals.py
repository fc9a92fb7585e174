"""Every way the service refuses a request, in one place: its code, the HTTP status the
code answers with, and the words people read.

The domain raises ``Refused`` (or one of the named kinds made from it: SourceError,
SubmissionError, CourseError, the course rules' Refusal, the API's ApiError, the keys'
KeyRefused and TokenRefused) with a registered code, a message in English for logs and
API clients, and details (a syntax error's line, when a closed door reopens). The API
answers ``{"error": {"code", "message", ...}}`` with the code's status, and its OpenAPI
document lists these codes; the pages answer with the same status and show the code's
words in the reader's language (``_`` below marks them for translation; the pages
translate them, with the refusal's details and the code's fixed values as parameters).
A code that is not registered here cannot be raised.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from grader.settings import MAX_NOTEBOOK_BYTES, MAX_NOTEBOOK_CELLS, MAX_SOURCE_BYTES


def _(words: str) -> str:
    """Marks ``words`` for the translation catalogue; the pages translate them when shown."""
    return words


@dataclass(frozen=True)
class Code:
    status: int
    words: str | None = None  # for people, in English; None: the message itself
    values: dict = field(default_factory=dict)  # fixed parameters of the words (limits)


_NOT_FOUND, _BAD_BODY = Code(404), Code(422)

CODES: dict[str, Code] = {
    # Who is asking
    "missing_api_key": Code(401), "invalid_api_key": Code(401), "api_key_revoked": Code(401),
    "insufficient_scope": Code(403), "exercise_not_yours": Code(403),
    # What is asked for: missing, or not the caller's (never told apart)
    **dict.fromkeys(("not_found", "exercise_not_found", "submission_not_found", "webhook_not_found",
                     "practice_run_not_found", "course_not_found", "assignment_not_found", "regrade_not_found",
                     "check_not_found"), _NOT_FOUND),
    "method_not_allowed": Code(405),
    # The request itself
    "body_not_utf8": Code(400), "malformed_json": Code(400), "bad_request": Code(400), "http_error": Code(400),
    "request_too_large": Code(413), "unsupported_media_type": Code(415),
    **dict.fromkeys(("invalid_url", "invalid_body", "unknown_field", "missing_field", "wrong_type", "invalid_user",
                     "invalid_bundle", "ambiguous_course"), _BAD_BODY),
    "damaged_zip": _BAD_BODY,  # a bundle's zip whose bytes do not hold together: the message says where
    # A submission's source
    "source_empty": Code(422, _("Your submission is empty: paste your code or choose a .py file.")),
    "source_too_large": Code(413, _("Your submission is larger than %(limit)d KiB."),
                             {"limit": MAX_SOURCE_BYTES // 1024}),
    "source_not_utf8": Code(422, _("Your file is not UTF-8 text. Save it as UTF-8 and upload it again.")),
    "source_invalid": Code(422, _("Your submission contains a NUL character.")),
    "source_encoding": Code(422, _("Line %(line)d of your code declares the encoding %(encoding)s; code is read as "
                                   "UTF-8 only. Remove that line, or declare utf-8.")),
    "notebook_invalid": Code(422, _("Your notebook cannot be graded: %(message)s.")),
    "notebook_too_large": Code(413, _("Your notebook is larger than %(limit)d KiB or has more than %(cells)d "
                                      "cells. Clear its outputs and upload it again."),
                               {"limit": MAX_NOTEBOOK_BYTES // 1024, "cells": MAX_NOTEBOOK_CELLS}),
    "syntax_error": Code(422, _("Your code has a syntax error on line %(line)d: %(reason)s. Nothing was submitted; "
                                "no attempt was used.")),
    "unknown_exercise": Code(422),
    # An assignment's rules, now (the pages say when in the course's time, and how long until then)
    "not_open": Code(409, _("This assignment opens at %(when)s, in %(wait)s.")),
    "closed": Code(409, _("This assignment is closed: submissions are no longer accepted.")),
    "no_attempts_left": Code(409, _("You have used all %(n)d attempts.")),
    "cooling_down": Code(429, _("Wait %(wait)s, until %(when)s, before your next attempt.")),
    "time_up": Code(409, _("Your time on this assignment is up (it ended at %(when)s): submissions are no longer "
                           "accepted.")),
    "not_a_member": Code(422, _("You are not a member of this course.")),
    # Running a course
    **dict.fromkeys(("invalid_course", "invalid_roster", "invalid_assignment", "invalid_extension",
                     "invalid_regrade"), _BAD_BODY),
    "extension_not_found": Code(404, _("This student has no extension on this assignment (any more).")),
    "override_not_found": Code(404, _("This student has no score set by hand on this assignment (any more).")),
    # Similar submissions: what is compared at most
    "too_many_students": Code(422, _("More than %(n)d students have a graded submission to this assignment; "
                                     "similar submissions are compared for at most %(n)d students at a time.")),
    "sources_too_large": Code(422, _("The final submissions to this assignment hold more than %(n)s characters of "
                                     "code in all; similar submissions are compared for at most that much.")),
    "starter_unavailable": Code(422, _("The starter code of the exercise version this assignment uses is no longer "
                                       "kept, so code that came with the exercise cannot be told apart from code "
                                       "students share.")),
    "course_code_taken": Code(409, _("There is already a course with the code %(course_code)s. Course codes are "
                                     "unique, whatever their case: choose another.")),
    "lms_course": Code(422, _("An LMS course's members come from the LMS: its launches and its roster.")),
    # Comments on a submission
    "invalid_comment": _BAD_BODY,  # empty, too long, not text: the message says which
    "line_not_in_source": Code(422, _("There is no line %(line)s in the submitted code: its lines are 1 to "
                                      "%(lines)d.")),
    "not_course_staff": Code(403, _("Only the teaching assistants and instructors of this submission's course "
                                    "comment on it.")),
    "comment_not_found": _NOT_FOUND,
    "not_your_comment": Code(403, _("You can delete only your own comments.")),
    # Invitation links: one that never was is not found; one that was good once is gone
    "unknown_invitation": Code(404, _("This invitation link is not one of this grader's. Check that it was "
                                      "copied whole.")),
    "invitation_revoked": Code(410, _("This invitation link was withdrawn by the course's instructor. Ask them "
                                      "for a new one.")),
    "invitation_expired": Code(410, _("This invitation link has expired. Ask the course's instructor for a new "
                                      "one.")),
    "invitation_used_up": Code(410, _("This invitation link has been used as many times as it allows. Ask the "
                                      "course's instructor for a new one.")),
    "invalid_invitation": Code(422, _("A link is valid for 1 to %(days)d days and %(uses)d uses at most (empty: any "
                                      "number), and makes a student or a TA.")),
    "too_many_invitations": Code(422, _("The course has %(n)d open invitation links: revoke one you no longer need "
                                        "first.")),
    # Accounts: made, signed into, their passwords
    "invalid_account": Code(422), "no_account": Code(404),
    "invalid_email": Code(422, _("That is not an e-mail address.")),
    "short_password": Code(422, _("The password must be at least %(n)d characters.")),
    "long_password": Code(422, _("The password is at most 1000 characters.")),
    "passwords_differ": Code(422, _("The two passwords differ.")),
    "invalid_name": Code(422, _("Give your name, at most 200 characters.")),
    "email_taken": Code(409, _("There is already an account with this e-mail address.")),
    "link_spent": Code(410, _("This link does not work: it was used already, has expired, or was not copied whole. "
                              "Ask for a new one.")),
    # Personal tokens
    "token_unnamed": Code(422, _('Name the token (where you will use it, say "laptop" or "Colab").')),
    "token_name_too_long": Code(422, _("A token's name is at most 100 characters.")),
    "too_many_tokens": Code(422, _("You have %(n)d tokens already: revoke one you no longer use first.")),
    # Too much at once, or the service itself
    "rate_limited": Code(429), "too_many_new_users": Code(429), "too_many_checks": Code(429),
    "internal_error": Code(500), "workers_unreachable": Code(503),
}


class Refused(ValueError):
    """A request refused: a registered ``code``, the English ``message``, and details
    (keyword arguments, kept as attributes: ``line``, ``reopens_at``, ``retry_after``...)."""

    def __init__(self, code: str, message: str, **details):
        if code not in CODES:
            raise LookupError(f"{code!r} is not a refusal code of grader.refusals.CODES")
        super().__init__(message)
        self.code, self.message = code, message
        for name, value in details.items():
            setattr(self, name, value)

    @property
    def status(self) -> int:
        return CODES[self.code].status

    @property
    def details(self) -> dict:
        """Everything the refusal carries besides its code and message."""
        return {name: value for name, value in vars(self).items() if name not in ("code", "message")}


def words(refusal: Refused) -> tuple[str | None, dict]:
    """The code's words for people (untranslated; None: the message is all there is) and
    their parameters: the code's fixed values, the message, then the refusal's details."""
    code = CODES[refusal.code]
    return code.words, {**code.values, "message": refusal.message, **refusal.details}
