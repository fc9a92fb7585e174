"""The JSON bodies /api/v1 takes, each declared once: the model checks the request, and the
OpenAPI document's request schemas are generated from it (grader.api.openapi).

A view reads its body with ``parse(Model)``. What is wrong answers as every refusal does
(grader.refusals): an unknown field ``unknown_field``, a missing one ``missing_field``, a
field of another JSON type the model's ``wrong_type`` code, a value out of bounds its
``invalid`` code (or the field's own, in ``codes``); the message names the field. What needs
the database (an exercise, a member, a course code) the domain checks, as for the site.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, ClassVar, Literal

from flask import request
from pydantic import (AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, StrictInt,
                      StrictStr, ValidationError, model_validator)
from pydantic_core import PydanticCustomError

from grader.courses import rules
from grader.courses.assignments import MAX_TIME_LIMIT_MINUTES
from grader.courses.codes import CODE_LENGTH
from grader.courses.comments import MAX_BODY as COMMENT_MAX
from grader.courses.models import MEMBER_ROLES
from grader.refusals import CODES, Refused
from grader.settings import MAX_NOTEBOOK_BYTES, MAX_NOTEBOOK_CELLS, MAX_SOURCE_BYTES

USER_MAX = 480  # users.external_id's width, less the key's namespace ("api:<key id>:")
_TIME = "ISO 8601 with its zone (2026-12-10T23:59+09:00)."


def user_problem(user: str) -> str | None:
    """What is wrong with a key's own id for a person, or None."""
    if not user.strip():
        return "'user' must not be empty"
    if len(user) > USER_MAX:
        return f"'user' is {len(user)} characters; the limit is {USER_MAX}"
    if not is_text(user) or any(ord(c) < 32 or ord(c) == 127 for c in user):
        return "'user' must be printable text"
    return None


def is_text(value: str) -> bool:
    """JSON's \\ud800-style escapes can make unpaired surrogates, which no database stores."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _a_string(value):
    if not isinstance(value, str):
        raise PydanticCustomError("wrong_type", "'user' must be a string, not {kind}", {"kind": _json_type(value)})
    return value


def _user(value: str) -> str:
    problem = user_problem(value)
    if problem:
        raise PydanticCustomError("invalid_user", problem)
    return value


def _source(value: str) -> str:
    if not is_text(value):
        raise PydanticCustomError("source_not_utf8", "the source contains an unpaired surrogate")
    return value


def _blank_is_none(value):
    """An empty string is "not given", as in the site's forms (the domain reads it so too)."""
    return None if value == "" else value


User = Annotated[StrictStr, BeforeValidator(_a_string), AfterValidator(_user),
                 Field(description="Your id for the person; the grader makes a user on first sight.",
                       json_schema_extra={"minLength": 1, "maxLength": USER_MAX})]
# Checked by the domain (grader.courses.fields.moment), which needs the zone.
Time = Annotated[StrictStr, Field(json_schema_extra={"format": "date-time"})]
Reason = Annotated[StrictStr, Field(max_length=2000, description="Shown to the student.")]


def _optional(kind, description: str | None = None, **bounds):
    """An optional number (numeric strings taken, as the domain takes them; "" is none)."""
    return Annotated[Annotated[kind, Field(**bounds)] | None, BeforeValidator(_blank_is_none),
                     Field(default=None, description=description)]


class Body(BaseModel):
    """A request body: no field beyond those declared."""

    model_config = ConfigDict(extra="forbid")
    wrong_type: ClassVar[str] = "wrong_type"  # a field of another JSON type
    invalid: ClassVar[str] = "invalid_body"  # a value out of bounds
    codes: ClassVar[dict[str, str]] = {}  # a field whose values have their own code


# ------------------------------------------------------------------ submissions

class NewSubmission(Body):
    model_config = ConfigDict(json_schema_extra={
        "description": "Names an exercise (on its own, graded against its published version) or an assignment of "
                       "one of this key's courses (for a personal token: of a course its owner is a member of; "
                       "under its rules, against the version it pinned), not both; and sends the code as a "
                       "`source` or a `notebook`, exactly one of them. With `\"practice\": true` it is a practice "
                       "run instead.",
        # A whole request a client may start from: autograd-basics' function, for a student of the key's.
        "examples": [{"exercise": "autograd-basics", "user": "student-42",
                      "source": "import torch\n\n\ndef grad_2xtx(x):\n    x = x.detach().requires_grad_(True)\n"
                                "    (2 * x @ x).backward()\n    return x.grad\n"}]})

    # Each may be absent; none may be null. (A default is not validated: absent stays None.)
    exercise: StrictStr = Field(None, description="The exercise's slug.",
                                       json_schema_extra={"examples": ["autograd-basics"]})
    assignment: StrictInt = Field(None, description="An assignment's id.")
    # Blank, too large or with a NUL: the domain refuses it (source_empty, source_too_large, source_invalid).
    source: Annotated[StrictStr, AfterValidator(_source)] = Field(
        None, description=f"The Python source, at most {MAX_SOURCE_BYTES} bytes as UTF-8, not blank, no NUL "
                          "characters.", json_schema_extra={"minLength": 1})
    notebook: dict[str, Any] = Field(
        None, description="A Jupyter notebook (the .ipynb file's JSON object, nbformat 4, at most "
                          f"{MAX_NOTEBOOK_BYTES} bytes and {MAX_NOTEBOOK_CELLS} cells) in place of `source`. What "
                          "is graded is its code cells in order, less those tagged `skip-grading`, each after a "
                          "line `# %% cell N` (N counts every cell from 1), with IPython magics and shell commands "
                          "(lines starting a statement with `%` or `!`, `x = !cmd`, `x = %magic`, and whole `%%` "
                          f"cells) turned into comments; that Python is held to the {MAX_SOURCE_BYTES} bytes of a "
                          "source. A notebook that is not JSON, not nbformat 4, invalid, or has no code is 422 "
                          "`notebook_invalid`, the message saying what is wrong.")
    user: User = Field(None, description="Your id for the student; the grader makes a user on first sight. "
                                                "Required with a service's key; refused with a personal token, "
                                                "which submits as its owner.")
    practice: StrictBool = Field(False, description=(
        "A practice run: the code runs against the exercise's visible tests alone, through the same queue and "
        "sandbox, and counts for nothing (no best score, no attempt of an assignment, whose rules and window do "
        "not apply to it; no gradebook, LMS passback or webhook). Limited per user apart from submissions. "
        "Follow `url`: a PracticeRun."))

    @model_validator(mode="before")
    @classmethod
    def _owner_only(cls, data, info):
        # Before the fields: whatever 'user' holds (empty, a number, an object), a personal
        # token names no one but its owner; unknown fields still answer first, as everywhere.
        if isinstance(data, dict) and "user" in data and (info.context or {}).get("personal") \
                and set(data) <= set(cls.model_fields):
            raise PydanticCustomError("invalid_body", "a personal token submits as its owner: leave out 'user'")
        return data

    @model_validator(mode="after")
    def _one_of_each(self, info):
        personal = bool((info.context or {}).get("personal"))
        given = self.model_fields_set
        missing = (([] if given & {"source", "notebook"} else ["source (or notebook)"])
                   + ([] if personal or "user" in given else ["user"])
                   + ([] if given & {"exercise", "assignment"} else ["exercise"]))
        if missing:
            raise PydanticCustomError("missing_field", "missing required fields {missing}", {"missing": missing})
        if {"exercise", "assignment"} <= given:
            raise PydanticCustomError("invalid_body", "name an exercise or an assignment, not both")
        if {"source", "notebook"} <= given:
            raise PydanticCustomError("invalid_body", "send a source or a notebook, not both")
        return self


# ------------------------------------------------------------------ courses

class NewCourse(Body):
    wrong_type = invalid = "invalid_course"

    title: StrictStr = Field(max_length=500)
    code: StrictStr = Field(max_length=CODE_LENGTH, description="Unique on the site, whatever its case (DL101).")
    time_zone: StrictStr | None = Field(None, max_length=64, json_schema_extra={"examples": ["Asia/Seoul"]},
                                        description="An IANA name; every time of the course is shown in it "
                                                    "(default UTC).")


# One line of a roster; the domain checks each (grader.courses.roster), with invalid_roster.
class Member(BaseModel):
    model_config = ConfigDict(extra="ignore", json_schema_extra={"anyOf": [{"required": ["user"]},
                                                                          {"required": ["email"]}]})
    user: StrictStr | None = Field(None, description="Your id for the person, as in submissions.")
    email: StrictStr | None = Field(None, json_schema_extra={"format": "email"}, description=(
        "A local account's address: found, or made without a password and mailed a link to choose one, so the "
        "person signs in on the site."))
    name: StrictStr | None = None
    # Read as a CSV's column is (any case), and refused with the line's number, by the domain.
    role: StrictStr | None = Field(None, description=", ".join(MEMBER_ROLES[:-1]) + f" or {MEMBER_ROLES[-1]}; student where absent.")

    @model_validator(mode="wrap")
    @classmethod
    def _as_roster(cls, value, handler):
        # One bad line is the roster's refusal, as for a CSV: the line and what is wrong with it.
        try:
            return handler(value)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(map(str, first["loc"]))
            raise PydanticCustomError("invalid_roster", "{problem}", {
                "problem": f"{field} {_problem(first)}" if field else _problem(first)}) from None


class Members(Body):
    members: list[Member]


class NewAssignment(Body):
    model_config = ConfigDict(json_schema_extra={"description": "Times are " + _TIME})
    wrong_type = invalid = "invalid_assignment"

    exercise: StrictStr
    due_at: Time
    title: StrictStr | None = Field(None, max_length=500)
    opens_at: Time | None = None
    late_until: Time | None = Field(None, description="Late submissions are taken until then; none without it.")
    late_policy: Annotated[Literal[rules.LATE_POLICIES] | None, BeforeValidator(_blank_is_none)] = None
    late_percent: _optional(float, ge=0, le=100, allow_inf_nan=False,
                            description="Lost per begun day or hour late.")
    late_cap: _optional(float, ge=0, le=100, allow_inf_nan=False)
    attempts: _optional(int, ge=1, le=10_000)
    cooldown_minutes: _optional(int, ge=0, le=60 * 24 * 7)
    counts: Annotated[Literal[rules.COUNTS] | None, BeforeValidator(_blank_is_none)] = None
    feedback: Annotated[Literal[rules.FEEDBACK] | None, BeforeValidator(_blank_is_none)] = Field(
        None, description="When students see their hidden tests' results.")
    version: _optional(int, ge=1, le=10**9,
                       description="The exercise version to pin (default: the one published now).")
    time_limit_minutes: _optional(int, ge=1, le=MAX_TIME_LIMIT_MINUTES, description=(
        "A timed assignment: each student has this many minutes from when they start it (at most a week), ending "
        "sooner if the assignment closes first; absent: untimed."))


class NewExtension(Body):
    # The domain's codes for these values (grader.courses.fields).
    wrong_type = invalid = "invalid_assignment"
    codes = {"reason": "invalid_course"}

    user: User
    due_at: Time | None = None
    extra_attempts: _optional(int, ge=0, le=10_000)
    extra_minutes: _optional(int, ge=0, le=MAX_TIME_LIMIT_MINUTES, description=(
        "Minutes on top of a timed assignment's limit for this student. A later due date alone never lengthens "
        "the limit."))
    reason: Reason


class NewOverride(Body):
    wrong_type = invalid = "invalid_assignment"
    codes = {"reason": "invalid_course"}

    user: User
    # At most the exercise's maximum, which the domain knows.
    score: Annotated[float, Field(ge=0, allow_inf_nan=False)]
    reason: Reason


# ------------------------------------------------------------------ comments, webhooks

class NewComment(Body):
    body: StrictStr = Field(
        description=f"Plain text, at most {COMMENT_MAX} characters (not blank; line ends and tabs are the only "
                    "control characters taken). Kept as written and shown escaped.",
        # Checked, trimmed, by the domain (grader.courses.comments.clean_body): invalid_comment.
        json_schema_extra={"minLength": 1, "maxLength": COMMENT_MAX})
    line: StrictInt | None = Field(None, description=(
        "A line of the submission's graded source (a notebook's: of the Python made from it), from 1; absent or "
        "null: a comment on the whole submission. A line outside the source is 422 `line_not_in_source`."))


class NewWebhook(Body):
    wrong_type = invalid = "invalid_url"

    url: StrictStr = Field(max_length=2000, json_schema_extra={"format": "uri"},
                           description="Where results are POSTed (http or https).")


# ------------------------------------------------------------------ reading one

def json_body() -> dict:
    """The request's body: a JSON object, sent as UTF-8 application/json."""
    if request.mimetype != "application/json":
        raise Refused("unsupported_media_type",
                      f"send the body as application/json, not {request.mimetype or 'no content type'!r}")
    charset = request.mimetype_params.get("charset", "utf-8").lower()
    if charset not in ("utf-8", "utf8"):
        raise Refused("unsupported_media_type", f"JSON must be UTF-8, not {charset!r}")
    raw = request.get_data(cache=False)
    try:
        text = raw.decode("utf-8")  # strictly: json.loads would also guess UTF-16 and UTF-32
    except UnicodeDecodeError as exc:
        raise Refused("body_not_utf8", f"the body is not UTF-8 text (byte {exc.start})") from None
    try:
        body = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise Refused("malformed_json", f"the body is not valid JSON: {str(exc)[:200]}") from None
    if not isinstance(body, dict):
        raise Refused("invalid_body", "the body must be a JSON object")
    return body


def parse(model: type[Body], body: dict | None = None, **context):
    """The request's body (or ``body``) as ``model``, or the refusal of what is wrong with it."""
    try:
        return model.model_validate(json_body() if body is None else body, context=context)
    except ValidationError as exc:
        raise refusal(model, exc) from None


_TYPES = {"string_type": "a string", "int_type": "a whole number", "int_parsing": "a whole number",
          "int_from_float": "a whole number", "float_type": "a number", "float_parsing": "a number",
          "bool_type": "true or false", "bool_parsing": "true or false", "dict_type": "an object",
          "model_type": "an object", "model_attributes_type": "an object", "list_type": "an array"}


def refusal(model: type[Body], exc: ValidationError) -> Refused:
    """Today's order: every unknown field, else every missing one, else the first other fault."""
    errors = exc.errors(include_url=False)
    unknown = [e["loc"][0] for e in errors if e["type"] == "extra_forbidden" and len(e["loc"]) == 1]
    if unknown:
        return Refused("unknown_field", f"unknown fields {sorted(unknown)}; known: {list(model.model_fields)}")
    missing = [e["loc"][0] for e in errors if e["type"] == "missing" and len(e["loc"]) == 1]
    if missing:
        return Refused("missing_field", f"missing required fields {missing}")
    first = errors[0]
    field = _path(first["loc"])
    if first["type"] in CODES:  # a rule's own refusal (a validator of the model's)
        return Refused(first["type"], f"{field}: {first['msg']}" if len(first["loc"]) > 1 else first["msg"])
    if first["type"] in _TYPES:
        return Refused(model.wrong_type, f"{field!r} must be {_TYPES[first['type']]}, not {_json_type(first['input'])}")
    return Refused(model.codes.get(str(first["loc"][0]) if first["loc"] else "", model.invalid),
                   f"{field!r}: {_problem(first)}")


def _path(loc) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".") or "body"


def _problem(error) -> str:
    if error["type"] in _TYPES:
        return f"must be {_TYPES[error['type']]}, not {_json_type(error['input'])}"
    message = error["msg"]
    for said in ("Input should be", "String should have", "Value should be"):
        message = message.replace(said, "must be" if said != "String should have" else "must have")
    return message


def _json_type(value) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", int: "a number",
            float: "a number", type(None): "null"}.get(type(value), type(value).__name__)
