"""The OpenAPI 3.1 document of /api/v1.

The request bodies' schemas are generated from their models (grader.api.bodies), which
also check the requests; the rest is written by hand, next to the views it describes.
tests/test_api.py keeps the two in step (every route documented with its methods, every
documented path routed), and tests/openapi_check.py holds every response to it.
"""

from __future__ import annotations

from grader.api import bodies
from grader.courses.similarity import MAX_CHARACTERS, MAX_STUDENTS
from grader.bundle import SLUG
from grader.refusals import CODES
from grader.settings import MAX_NOTEBOOK_BYTES, MAX_NOTEBOOK_CELLS, MAX_SOURCE_BYTES

# Every error code the API answers with, and its HTTP status: grader.refusals owns both.
ERROR_CODES = {code: kind.status for code, kind in CODES.items()}


def _ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def _error(description: str, *codes: str) -> dict:
    listed = ", ".join(f"`{c}`" for c in codes)
    return {"description": f"{description} Codes: {listed}.",
            "content": {"application/json": {"schema": _ref("Error")}}}


def _ok(description: str, schema: str) -> dict:
    return {"description": description, "content": {"application/json": {"schema": _ref(schema)}}}


_AUTH_ERRORS = {
    "401": {"$ref": "#/components/responses/Unauthorized"},
    "403": {"$ref": "#/components/responses/Forbidden"},
}

# What an exercise's slug is; any other is answered as not found.
_SLUG = SLUG.pattern
_SLUG_PARAMETER = {"name": "slug", "in": "path", "required": True, "schema": {"type": "string", "pattern": _SLUG}}

def _untitled(node):
    """The schema without the titles pydantic gives every field (its name, capitalised; a
    property named "title" is a schema, a dict, and stays) or null defaults (absent is none)."""
    if isinstance(node, dict):
        return {key: _untitled(value) for key, value in node.items()
                if not (key == "title" and isinstance(value, str)) and not (key == "default" and value is None)}
    if isinstance(node, list):
        return [_untitled(item) for item in node]
    return node


def _request_schemas() -> dict:
    """Each request body's schema, from its model; the models they use ($defs) beside them."""
    found = {}
    for model in (bodies.NewSubmission, bodies.NewComment, bodies.NewWebhook, bodies.NewCourse, bodies.Members,
                  bodies.NewAssignment, bodies.NewExtension, bodies.NewOverride):
        schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        found.update(schema.pop("$defs", {}))
        found[model.__name__] = schema
    return _untitled(found)


REQUEST_SCHEMAS = _request_schemas()


def _as_3_1(node):
    """OpenAPI 3.0's ``nullable``, in which the response schemas are written, as 3.1 says it:
    a type that also allows null."""
    if isinstance(node, dict):
        node = {key: _as_3_1(value) for key, value in node.items()}
        if node.pop("nullable", False):
            kind = node.get("type")
            if isinstance(kind, str):
                node["type"] = [kind, "null"]
            elif "enum" in node:
                node["enum"] = [*node["enum"], None]
            else:
                node = {"anyOf": [node, {"type": "null"}]}
        return node
    if isinstance(node, list):
        return [_as_3_1(item) for item in node]
    return node


_TITLE = {"type": "object", "required": ["en"],
          "properties": {"en": {"type": "string"}, "ko": {"type": "string"}}}

SCHEMAS = {
    "Error": {
        "type": "object", "required": ["error"],
        "properties": {"error": {
            "type": "object", "required": ["code", "message"],
            "properties": {
                "code": {"type": "string", "enum": sorted(ERROR_CODES),
                         "description": "Machine-readable; stable across versions of v1."},
                "message": {"type": "string", "description": "What is wrong, for people."},
                # Where a source does not parse (syntax_error): nothing was stored, no attempt used.
                "line": {"type": "integer", "minimum": 1,
                         "description": "`syntax_error` only: the line of the source (a notebook's: of its "
                                        "graded source) where it does not parse; absent where the parser "
                                        "cannot say (nesting too deep)."},
                "column": {"type": "integer", "minimum": 1,
                           "description": "`syntax_error` only, with `line`: the column, in characters "
                                          "from 1."},
                "cell": {"type": "integer", "minimum": 1,
                         "description": "`syntax_error` of a notebook only: the cell, counting every cell "
                                        "from 1."},
                "cell_line": {"type": "integer", "minimum": 1,
                              "description": "With `cell`: the line within that cell."},
                "entry": {"type": "string",
                          "description": "`damaged_zip` only: the path inside the zip of the entry that is "
                                         "damaged; absent where the damage is the zip's own (cut short, its "
                                         "directory unreadable)."},
            }}},
    },
    "Exercise": {
        "type": "object", "required": ["slug", "version", "title", "device", "max_score", "functions", "released"],
        "properties": {
            "slug": {"type": "string", "pattern": _SLUG, "example": "autograd-basics"},
            "version": {"type": "integer", "minimum": 1},
            "title": _TITLE,
            "device": {"type": "string", "enum": ["cpu", "cuda", "any"],
                       "description": "Where submissions are graded; `any` runs on a GPU where the "
                                      "deployment has one."},
            "max_score": {"type": "number", "description": "The sum of the points of the hidden tests."},
            "functions": {"type": "array", "items": {"type": "string"},
                          "description": "The functions a submission must define."},
            "released": {"type": "boolean",
                         "description": "In the catalogue, for everyone. `false`: a draft (published through an "
                                        "upload and not released yet), seen only by its author, the "
                                        "administrators and the staff of the courses whose assignments use it; "
                                        "a course's students reach it through those assignments alone."},
        },
    },
    "ExerciseList": {
        "type": "object", "required": ["exercises"],
        "properties": {"exercises": {"type": "array", "items": _ref("Exercise")}},
    },
    "ExerciseDetail": {
        "allOf": [_ref("Exercise"), {
            "type": "object", "required": ["statement"],
            "properties": {"statement": {
                "type": "object", "required": ["en", "ko"],
                "description": "The statement in Markdown; null where the catalogue has no such text.",
                "properties": {"en": {"type": "string", "nullable": True},
                               "ko": {"type": "string", "nullable": True}}}},
        }],
    },
    "ExerciseRegrades": {
        "type": "object", "required": ["exercise", "regrades", "skipped"],
        "properties": {
            "exercise": {"type": "string"},
            "regrades": {"type": "array", "items": _ref("Regrade")},
            "skipped": {"type": "array", "items": {"type": "object", "required": ["assignment", "reason"],
                                                   "properties": {"assignment": {"type": "integer"},
                                                                  "reason": {"type": "string"}}}},
        },
    },
    "ExerciseCheckAccepted": {
        "type": "object", "required": ["id", "url", "status", "slug", "version"],
        "properties": {
            "id": {"type": "integer"}, "url": {"type": "string", "format": "uri"},
            "status": {"type": "string", "enum": ["checking"]},
            "slug": {"type": "string"}, "version": {"type": "integer"},
        },
    },
    "ExerciseCheck": {
        "type": "object",
        "required": ["id", "url", "slug", "version", "status", "error", "uploaded_at", "checked_at", "holds",
                     "violated", "warnings", "checks"],
        "properties": {
            "id": {"type": "integer"}, "url": {"type": "string", "format": "uri"},
            "slug": {"type": "string"}, "version": {"type": "integer"},
            "status": {"type": "string", "enum": ["checking", "published", "rejected"]},
            "error": {"type": "string", "nullable": True, "description": "Why it was rejected."},
            "uploaded_at": {"type": "string", "format": "date-time"},
            "checked_at": {"type": "string", "format": "date-time", "nullable": True},
            "holds": {"type": "integer"}, "violated": {"type": "integer"},
            "warnings": {"type": "array", "items": {"type": "string"},
                         "description": "What the check warns of, failing nothing: a bundle still `grader new`'s "
                                        "template, a title a released exercise has already. Empty while checking."},
            "checks": {"type": "array", "items": {
                "type": "object", "required": ["subject", "expected", "actual", "ok", "reason"],
                "properties": {
                    "subject": {"type": "string", "description": "solution, starter, mutant:<name> or bundle"},
                    "expected": {"type": "string"}, "actual": {"type": "string"}, "ok": {"type": "boolean"},
                    "reason": {"type": "string", "nullable": True, "description": "Why a row failed."}}}},
        },
    },
    "ExerciseVersions": {
        "type": "object", "required": ["slug", "versions"],
        "properties": {"slug": {"type": "string"}, "versions": {"type": "array", "items": {
            "type": "object", "required": ["version", "state", "check", "uploaded_at", "checked_at", "error"],
            "properties": {
                "version": {"type": "integer"},
                "state": {"type": "string", "enum": ["published", "kept", "checking", "rejected"],
                          "description": "`published`: what new submissions are graded against; `kept`: "
                                         "published before, still graded against for the assignments "
                                         "pinned to it."},
                "check": {"type": "string", "format": "uri", "nullable": True,
                          "description": "Its check (null: the site's catalogue folder)."},
                "uploaded_at": {"type": "string", "format": "date-time", "nullable": True},
                "checked_at": {"type": "string", "format": "date-time", "nullable": True},
                "error": {"type": "string", "nullable": True}}}}},
    },
    "SubmissionAccepted": {
        "type": "object", "required": ["id", "url", "status"],
        "properties": {
            "id": {"type": "string", "pattern": "^[0-9a-f]{32}$"},
            "url": {"type": "string", "format": "uri", "description": "Where to follow it (GET)."},
            "status": {"type": "string", "enum": ["queued"]},
            "practice": {"type": "boolean", "description": "Present (true) for a practice run."},
        },
    },
    "PracticeRun": {
        "type": "object",
        "description": "As a Submission, with `practice: true`; its report lists the visible tests alone and its "
                       "score is of their points. Never retried: `failed` (also when it was not run within ten "
                       "minutes) means run it again. A user's latest 20 runs are kept.",
        "required": ["id", "practice", "exercise", "exercise_version", "assignment", "user", "status", "progress",
                     "score", "max_score", "failure_reason", "report", "notebook"],
        "properties": {"id": {"type": "string", "pattern": "^[0-9a-f]{32}$"},
                       "practice": {"type": "boolean", "enum": [True]},
                       "exercise": {"type": "string"}, "exercise_version": {"type": "integer"},
                       "assignment": {"type": "integer", "nullable": True},
                       "user": {"type": "string", "nullable": True},
                       "status": {"type": "string", "enum": ["queued", "running", "graded", "failed"]},
                       "progress": {"type": "object", "required": ["done", "total"],
                                    "properties": {"done": {"type": "integer"}, "total": {"type": "integer"}}},
                       "score": {"type": "number", "nullable": True},
                       "max_score": {"type": "number", "nullable": True},
                       "failure_reason": {"type": "string", "nullable": True},
                       "report": {"type": "object", "nullable": True, "additionalProperties": True},
                       "notebook": {"type": "object", "nullable": True, "additionalProperties": True}},
    },
    "Submission": {
        "type": "object",
        "required": ["id", "exercise", "exercise_version", "assignment", "user", "status", "progress", "score",
                     "max_score", "failure_reason", "report", "notebook", "comments"],
        "properties": {
            "id": {"type": "string", "pattern": "^[0-9a-f]{32}$"},
            "exercise": {"type": "string"},
            "exercise_version": {"type": "integer"},
            "assignment": {"type": "integer", "nullable": True},
            "user": {"type": "string", "nullable": True,
                     "description": "The user's external id (null for users who signed in on the site)."},
            "status": {"type": "string", "enum": ["queued", "running", "graded", "failed"],
                       "description": "`failed`: the grader could not grade it (never a zero score); "
                                      "`failure_reason` says why."},
            "progress": {"type": "object", "required": ["done", "total"],
                         "properties": {"done": {"type": "integer"}, "total": {"type": "integer"}}},
            "delayed": {"type": "boolean",
                        "description": "While queued or running: no worker that takes its queue is up (one "
                                       "stopped); it is graded when one is back, and nothing need be sent "
                                       "again. Within seconds of a worker stopping."},
            "score": {"type": "number", "nullable": True},
            "max_score": {"type": "number", "nullable": True},
            "failure_reason": {"type": "string", "nullable": True},
            "report": {"type": "object", "nullable": True, "additionalProperties": True,
                       "description": "The grading report (per test: name, passed, points, max points, "
                                      "message, hint); null until graded. For a notebook, every line "
                                      "number of the graded source in a message (`File \"submission.py\", "
                                      "line 12`) is followed by its cell, `(cell 3, line 2)`. Read "
                                      "with a personal token before an assignment releases its hidden "
                                      "tests' results, it lists the visible tests alone, its score, "
                                      "duration, warnings and output are empty, and its status is null "
                                      "(graded or not) unless the code failed before any test ran "
                                      "(syntax_error, submission_error): a limit reached may have been a "
                                      "hidden test's."},
            "comments": {"type": "array", "items": _ref("Comment"),
                         "description": "What the course's staff said of it, the overall comments first, then "
                                        "by line. Read with the student's personal token, empty while the "
                                        "assignment holds the feedback (`feedback_held_until`): comments are "
                                        "released with the hidden tests' results."},
            "feedback_held_until": {"type": "string", "format": "date-time",
                                    "description": "Present only when read with the student's personal "
                                                   "token while the assignment holds the hidden tests' "
                                                   "results (and the score) until its due date."},
            "late": {"type": "boolean",
                     "description": "Present for a submission made for an assignment: whether it came after "
                                    "the student's own due date (an extension's included)."},
            "late_penalty_percent": {"type": "number",
                                     "description": "Present with `late`: the percentage of its score this "
                                                    "submission loses for lateness (0 when on time)."},
            "counted_score": {"type": "number", "nullable": True,
                              "description": "Present for a submission made for an assignment: the score "
                                             "that counts for its author on that assignment now (best or "
                                             "latest, late penalties and a score set by hand applied), "
                                             "which may come from another of their submissions. Null while "
                                             "the hidden results are held from the reader, or before any "
                                             "grade."},
            "counted_max_score": {"type": "number", "nullable": True,
                                  "description": "Present with `counted_score`: its maximum."},
            "notebook": {"type": "object", "nullable": True, "required": ["cells"],
                         "description": "Null unless the submission was a notebook: then where each code "
                                        "cell graded is in the graded source.",
                         "properties": {"cells": {"type": "array", "items": {
                             "type": "object", "required": ["cell", "first_line", "lines"],
                             "properties": {
                                 "cell": {"type": "integer", "description": "The cell's number in the "
                                                                            "notebook, from 1."},
                                 "first_line": {"type": "integer",
                                                "description": "The graded source's line of its first line."},
                                 "lines": {"type": "integer"}}}}}},
        },
    },
    "Comment": {
        "type": "object", "required": ["id", "body", "line", "author", "created_at"],
        "additionalProperties": False,
        "properties": {
            "id": {"type": "integer"},
            "body": {"type": "string", "description": "Plain text, as written: escape it where it is shown."},
            "line": {"type": "integer", "minimum": 1, "nullable": True,
                     "description": "The line of the graded source it is on; null: on the whole submission."},
            "author": {"type": "string", "description": "Who wrote it, as the student is shown it: a staff "
                                                        "member's name, or `API key <prefix>`."},
            "created_at": {"type": "string", "format": "date-time"},
        },
    },
    "Webhook": {
        "type": "object", "required": ["id", "url", "secret", "events"],
        "properties": {
            "id": {"type": "integer"},
            "url": {"type": "string", "format": "uri"},
            "secret": {"type": "string",
                       "description": "Signs every delivery; shown only in this response. A delivery is "
                                      "a POST of the submission's result (JSON, `event` and `submission`) "
                                      "with `X-Grader-Timestamp: <unix seconds>` and `X-Grader-Signature: "
                                      "sha256=<hex HMAC-SHA256(secret, \"<timestamp>.<body>\")>`. Any 2xx "
                                      "answer ends it; others are retried with growing delays."},
            "events": {"type": "array", "items": {"type": "string", "enum": ["submission.completed"]}},
        },
    },
    **{
        "Course": {
            "type": "object", "required": ["id", "title", "code", "time_zone", "assignments"],
            "properties": {"id": {"type": "integer"}, "title": {"type": "string"}, "code": {"type": "string"},
                           "time_zone": {"type": "string"},
                           "assignments": {"type": "array", "items": _ref("Assignment")}},
        },
        "Roster": {
            "type": "object", "required": ["added", "changed", "members"],
            "properties": {"added": {"type": "array", "items": {"type": "string"}},
                           "changed": {"type": "array", "items": {"type": "string"}},
                           "members": {"type": "array", "items": {"type": "object"}}},
        },
        "Assignment": {
            "type": "object", "required": ["id", "course", "exercise", "version", "title", "due_at"],
            "description": "Times in the course's time zone, with it: 2026-12-10 23:59 KST (Asia/Seoul).",
            "properties": {"id": {"type": "integer"}, "course": {"type": "integer"}, "exercise": {"type": "string"},
                           "version": {"type": "integer"}, "title": {"type": "string"},
                           "opens_at": {"type": "string", "nullable": True}, "due_at": {"type": "string"},
                           "late_until": {"type": "string", "nullable": True}, "late_policy": {"type": "string"},
                           "late_percent": {"type": "number"}, "late_cap": {"type": "number", "nullable": True},
                           "attempts": {"type": "integer", "nullable": True},
                           "cooldown_minutes": {"type": "integer"}, "counts": {"type": "string"},
                           "feedback": {"type": "string"},
                           "time_limit_minutes": {"type": "integer", "nullable": True,
                                                  "description": "Each student's minutes from their start; null: "
                                                                 "untimed."}},
        },
        "AssignmentList": {
            "type": "object", "required": ["assignments"],
            "properties": {"assignments": {"type": "array", "items": _ref("ListedAssignment")}},
        },
        "ListedAssignment": {
            "type": "object", "required": ["id", "title", "exercise", "course", "due_at", "due_at_shown"],
            "description": "An assignment the caller can submit to. Read with a personal token, it carries where "
                           "the token's owner stands: their own due date (an extension's included), attempts, "
                           "why a submission now would be refused, and the score that counts (null while the "
                           "hidden results are held).",
            "properties": {
                "id": {"type": "integer"}, "title": {"type": "string"}, "exercise": {"type": "string"},
                "course": {"type": "object", "required": ["id", "code", "title"],
                           "properties": {"id": {"type": "integer"}, "code": {"type": "string"},
                                          "title": {"type": "string"}}},
                "due_at": {"type": "string", "format": "date-time"},
                "due_at_shown": {"type": "string", "description": "The due date in the course's zone, with it."},
                "attempts": {"type": "integer", "nullable": True}, "feedback": {"type": "string"},
                "attempts_used": {"type": "integer"}, "attempts_left": {"type": "integer", "nullable": True},
                "refusal": {"type": "string", "nullable": True,
                            "description": "The code a submission now would be refused with (closed, "
                                           "no_attempts_left, cooling_down, not_open, time_up); null: it would "
                                           "be taken."},
                "counted_score": {"type": "number", "nullable": True},
                "counted_max_score": {"type": "number", "nullable": True},
                "feedback_held_until": {"type": "string", "format": "date-time", "nullable": True},
                "time_limit_minutes": {"type": "integer", "nullable": True,
                                       "description": "A timed assignment's minutes from each student's start (with a "
                                                      "personal token: the owner's own, an extension's extra minutes "
                                                      "included); null: untimed."},
                "started_at": {"type": "string", "format": "date-time", "nullable": True,
                               "description": "When the owner started this timed assignment (its page's start "
                                              "button, or their first submission); null: not yet."},
                "ends_at": {"type": "string", "format": "date-time", "nullable": True,
                            "description": "The owner's own deadline on a timed assignment they started: their "
                                           "start plus their time limit, or the close date if sooner. A "
                                           "submission after it is refused with time_up."}},
        },
        "Extension": {"type": "object", "required": ["assignment", "user", "extra_attempts", "reason"],
                      "properties": {"assignment": {"type": "integer"}, "user": {"type": "string"},
                                     "due_at": {"type": "string", "nullable": True},
                                     "extra_attempts": {"type": "integer"}, "extra_minutes": {"type": "integer"},
                                     "reason": {"type": "string"}}},
        "ListedExtension": {
            "type": "object",
            "required": ["user_id", "user", "extra_attempts", "reason", "granted_by", "granted_at"],
            "properties": {"user_id": {"type": "integer", "description": "The student, as the revoke's path names "
                                                                         "them."},
                           "user": {"type": "string", "description": "The student as the gradebook names them "
                                                                     "(your key's own id for them)."},
                           "name": {"type": "string"},
                           "due_at": {"type": "string", "format": "date-time", "nullable": True},
                           "due_at_shown": {"type": "string", "nullable": True,
                                            "description": "The new due date in the course's time zone."},
                           "extra_attempts": {"type": "integer"}, "extra_minutes": {"type": "integer"},
                           "reason": {"type": "string"},
                           "granted_by": {"type": "string"},
                           "granted_at": {"type": "string", "format": "date-time",
                                          "description": "When it was granted or last changed."}}},
        "ExtensionList": {"type": "object", "required": ["assignment", "extensions"],
                          "properties": {"assignment": {"type": "integer"},
                                         "extensions": {"type": "array", "items": _ref("ListedExtension")}}},
        "ListedOverride": {
            "type": "object", "required": ["user_id", "user", "score", "reason", "granted_by", "granted_at"],
            "properties": {"user_id": {"type": "integer", "description": "The student, as the revoke's path names "
                                                                         "them."},
                           "user": {"type": "string", "description": "The student as the gradebook names them "
                                                                     "(your key's own id for them)."},
                           "name": {"type": "string"}, "score": {"type": "number"}, "reason": {"type": "string"},
                           "granted_by": {"type": "string"},
                           "granted_at": {"type": "string", "format": "date-time",
                                          "description": "When it was set or last changed."}}},
        "OverrideList": {"type": "object", "required": ["assignment", "overrides"],
                         "properties": {"assignment": {"type": "integer"},
                                        "overrides": {"type": "array", "items": _ref("ListedOverride")}}},
        "Override": {"type": "object", "required": ["assignment", "user", "score", "reason", "set_by", "set_at"],
                     "properties": {"assignment": {"type": "integer"}, "user": {"type": "string"},
                                    "score": {"type": "number"}, "reason": {"type": "string"},
                                    "set_by": {"type": "string"}, "set_at": {"type": "string"}}},
        "Regrade": {
            "type": "object", "required": ["id", "assignment", "version", "status", "progress", "students", "unchanged"],
            "description": "Every graded source of the assignment graded again against the exercise's current "
                           "version, as new grades beside the old ones. `students`: those whose score that counts "
                           "or whose tests' verdicts changed (when no longer running).",
            "properties": {"id": {"type": "integer"}, "assignment": {"type": "integer"}, "version": {"type": "integer"},
                           "status": {"type": "string", "enum": ["running", "ready", "published", "discarded"]},
                           "requested_by": {"type": "string"}, "created_at": {"type": "string"},
                           "url": {"type": "string", "format": "uri"},
                           "progress": {"type": "object", "properties": {"done": {"type": "integer"},
                                                                         "total": {"type": "integer"}}},
                           "students": {"type": "array", "items": {"type": "object"}},
                           "unchanged": {"type": "integer"}},
        },
        "Similarity": {
            "type": "object", "required": ["assignment", "students", "pairs_sharing_code", "pairs"],
            "description": "Every pair of students' final submissions (the one whose score counts, else the latest "
                           "graded) that shares code beyond the exercise's starter file, most similar first, as "
                           "copydetect finds it (tokenized, names and comments ignored; never run). For a reader's "
                           "judgement: it never changes a score. `similarity` = (a.shared_tokens + "
                           "b.shared_tokens) / (a.own_tokens + b.own_tokens); ties: more shared tokens first.",
            "properties": {
                "assignment": {"type": "integer"},
                "students": {"type": "integer", "description": "Students with a graded submission, compared."},
                "pairs_sharing_code": {"type": "integer",
                                       "description": "All of them; `pairs` holds the first `limit`."},
                "pairs": {"type": "array", "items": {
                    "type": "object", "required": ["similarity", "a", "b"],
                    "properties": {"similarity": {"type": "number", "minimum": 0, "maximum": 1},
                                   "a": _ref("SimilarSide"), "b": _ref("SimilarSide")}}},
            },
        },
        "SimilarSide": {
            "type": "object",
            "required": ["student", "name", "submission", "share", "own_tokens", "shared_tokens", "regions"],
            "properties": {
                "student": {"type": "string"}, "name": {"type": "string"},
                "submission": {"type": "string", "pattern": "^[0-9a-f]{32}$"},
                "share": {"type": "number", "description": "shared_tokens / own_tokens: the part of this submission's "
                                                           "own code that the other has too."},
                "own_tokens": {"type": "integer", "description": "Its tokenized characters beyond the starter code."},
                "shared_tokens": {"type": "integer"},
                "regions": {"type": "array", "description": "Where the shared code is in this source.", "items": {
                    "type": "object", "required": ["start", "end", "first_line", "last_line"],
                    "properties": {"start": {"type": "integer", "description": "Character offset, from 0."},
                                   "end": {"type": "integer", "description": "Character offset, excluded."},
                                   "first_line": {"type": "integer", "description": "From 1."},
                                   "last_line": {"type": "integer"}}}},
            },
        },
        "Gradebook": {
            "type": "object", "required": ["course", "assignments", "students"],
            "description": "Per student, each assignment's score that counts under its rules (best or latest, "
                           "after late penalties; or the override), with its late mark, extension and override; "
                           "each assignment's `max_score`, and each student's `total` out of `max_total` (the sum "
                           "of the assignments' maxima). The CSV per student ends with `total` and `max_total`.",
            "properties": {"course": {"type": "object"}, "assignments": {"type": "array", "items": {"type": "object"}},
                           "students": {"type": "array", "items": {"type": "object"}}},
        },
        "Analytics": {
            "type": "object",
            "required": ["assignment", "at", "students", "scores", "tests", "misconceptions", "full_marks",
                         "not_yet_full_marks"],
            "description": "Where the class is stuck on one assignment, computed on request from the course's "
                           "students (their role in it: student) and their submissions. Each student's score is "
                           "the gradebook's (under their extension; an override replaces it). Times in the "
                           "course's time zone, with it.",
            "properties": {
                "assignment": {"type": "object"}, "at": {"type": "string", "description": "The time it was computed."},
                "students": {"type": "integer"},
                "scores": {"type": "object", "description": "The scores that count, in percent of the maximum: "
                           "`scored` students have one, `unscored` have none (nothing graded, no override); bins "
                           "of 10 percent from `from_percent` (in) to `to_percent` (out, but 100 is in the last).",
                           "properties": {"max_score": {"type": "number", "nullable": True},
                                          "scored": {"type": "integer"}, "unscored": {"type": "integer"},
                                          "mean_percent": {"type": "number", "nullable": True},
                                          "median_percent": {"type": "number", "nullable": True},
                                          "bins": {"type": "array", "items": {"type": "object"}}}},
                "tests": {"type": "array", "description": "Per test, the visible ones (`visible`: true) and the "
                          "hidden: how many of the students' counting submissions (none for a score set by hand) "
                          "and of all their graded submissions passed it; one whose report does not list it did "
                          "not.", "items": {"type": "object"}},
                "misconceptions": {"type": "array", "description": "Each distinct hint failed tests gave, once "
                                   "however many tests gave it, with those `tests` (`id`, `name`): `students` it was "
                                   "given to, most first; `got_past`: those of them with a graded submission after "
                                   "the last one that gave it, passing every test that had given it to them.",
                                   "items": {"type": "object"}},
                "full_marks": {"type": "object", "description": "`reached`: students with a graded submission "
                               "passing every test (before late penalties); the attempts up to the first such "
                               "(failed gradings are no attempt) and the seconds from their first submission to "
                               "it; `never`: the other students."},
                "not_yet_full_marks": {"type": "array", "description": "The students who have not reached full "
                                       "marks, with their own due date (an extension's) and the seconds left "
                                       "(negative once past), soonest first.", "items": {"type": "object"}},
            },
        },
    },
}


def _paths() -> dict:
    slug = _SLUG_PARAMETER
    submission_id = {"name": "submission_id", "in": "path", "required": True,
                     "schema": {"type": "string", "pattern": "^[0-9a-f]{32}$"}}
    return {
        "/exercises": {"get": {
            "operationId": "listExercises", "summary": "The published exercises the caller sees",
            "description": "The released catalogue, and the drafts the caller sees: a service's key, those it "
                           "published and those the assignments of its courses use; a personal token, those "
                           "its owner sees on the site (their own uploads; as a course's staff, those its "
                           "assignments use; every one for an administrator).",
            "x-required-scope": "exercises:read",
            "responses": {"200": _ok("The exercises, by slug.", "ExerciseList"), **_AUTH_ERRORS},
        }, "post": {
            "operationId": "publishExercise", "summary": "Send a bundle to be checked and, if it holds, published",
            "description": "The body is a zip of the exercise's folder (as `grader exercise push` makes it), or a "
                           "multipart form with the zip in the field `bundle`. It is stored and checked on a "
                           "worker as an upload through the instructor page is: the reference must score full "
                           "marks, the starter less, every mutant fail as declared. It is published only if "
                           "every check holds; follow `url`. A key publishes new exercises and new versions of "
                           "those it published itself. A refused bundle stores nothing. A new exercise is a "
                           "draft until released (`POST /exercises/{slug}/release`); a new version of a released "
                           "one stays released.",
            "x-required-scope": "exercises:write",
            "requestBody": {"required": True, "content": {
                "application/zip": {"schema": {"type": "string", "format": "binary"}},
                "multipart/form-data": {"schema": {"type": "object", "required": ["bundle"], "properties": {
                    "bundle": {"type": "string", "format": "binary"}}}}}},
            "responses": {
                "202": {**_ok("Stored and being checked; follow `url` (also in the Location header).",
                              "ExerciseCheckAccepted"),
                        "headers": {"Location": {"schema": {"type": "string", "format": "uri"}}}},
                **_AUTH_ERRORS,
                "403": _error("The key lacks the scope, or the exercise was published by the catalogue or "
                              "another key.", "insufficient_scope", "exercise_not_yours"),
                "413": _error("The body is over the zip's limit.", "request_too_large"),
                "415": _error("Not a zip, nor a multipart form.", "unsupported_media_type"),
                "422": _error("Not a bundle: the message names the file and what is wrong with it. "
                              "`damaged_zip`: the zip's bytes do not hold together (cut short, a header that "
                              "disagrees with the data, a bad checksum, an encrypted entry, a compression "
                              "other than deflate, bzip2 or LZMA); `entry` names the damaged entry.",
                              "invalid_bundle", "damaged_zip", "missing_field"),
                "429": _error("Too many bundles sent lately, or too many of this key's being checked; see "
                              "`Retry-After`.", "rate_limited", "too_many_checks"),
                "503": _error("The workers cannot be reached; nothing was stored.", "workers_unreachable"),
            },
        }},
        "/exercises/{slug}": {"get": {
            "operationId": "getExercise", "summary": "One published exercise, with its statement",
            "x-required-scope": "exercises:read", "parameters": [slug],
            "responses": {"200": _ok("The exercise.", "ExerciseDetail"), **_AUTH_ERRORS,
                          "404": _error("No published exercise the caller sees has this slug (a draft that is "
                                        "not theirs is not told apart).", "exercise_not_found")},
        }},
        "/exercises/{slug}/release": {"post": {
            "operationId": "releaseExercise", "summary": "Release a draft to the catalogue, for everyone",
            "description": "Only the key that published the exercise releases it (an exercise of the catalogue "
                           "folder or of the instructor page is the administrators'). Releasing a released "
                           "exercise changes nothing and answers the same.",
            "x-required-scope": "exercises:write", "parameters": [slug],
            "responses": {"200": _ok("The exercise, released.", "Exercise"), **_AUTH_ERRORS,
                          "403": _error("The key lacks the scope, or another key or an administrator published "
                                        "the exercise.", "insufficient_scope", "exercise_not_yours"),
                          "404": _error("No published exercise the caller sees has this slug.",
                                        "exercise_not_found")},
        }},
        "/submissions": {"post": {
            "operationId": "createSubmission", "summary": "Submit a solution for grading",
            "description": "Stores the submission and queues it for grading. An unknown exercise is "
                           "422 `unknown_exercise` (the URL exists; the body names something that does "
                           "not). A refused request stores nothing.",
            "x-required-scope": "submissions:write",
            "requestBody": _json_body("NewSubmission"),
            "responses": {
                "202": {**_ok("Queued; follow `url` (also in the Location header).", "SubmissionAccepted"),
                        "headers": {"Location": {"schema": {"type": "string", "format": "uri"}}},
                        # A generated client follows these; a practice run's is followed at getPracticeRun.
                        "links": {"getSubmission": {
                            "operationId": "getSubmission", "parameters": {"submission_id": "$response.body#/id"},
                            "description": "The submission, as it is graded (not for a practice run)."}}},
                "400": _error("The body is not UTF-8 or not JSON.", "body_not_utf8", "malformed_json"),
                **_AUTH_ERRORS,
                "413": _error(f"The source is over {MAX_SOURCE_BYTES} bytes, the notebook over "
                              f"{MAX_NOTEBOOK_BYTES} bytes or {MAX_NOTEBOOK_CELLS} cells, or the body far over.",
                              "source_too_large", "notebook_too_large", "request_too_large"),
                "415": _error("The body is not application/json (UTF-8).", "unsupported_media_type"),
                "404": _error("This key has no assignment with this id.", "assignment_not_found"),
                "409": _error("The assignment takes no submission from this student now: not open yet, "
                              "closed, all attempts used, or the student's time on a timed assignment is up "
                              "(time_up; their first submission starts their clock where they never pressed "
                              "start). The message says until when where it reopens.",
                              "not_open", "closed", "no_attempts_left", "time_up"),
                "422": _error("The JSON does not describe a submission that can be graded.",
                              "invalid_body", "unknown_field", "missing_field", "wrong_type", "invalid_user",
                              "unknown_exercise", "source_empty", "source_not_utf8", "source_invalid",
                              "source_encoding", "notebook_invalid", "not_a_member", "syntax_error"),
                "429": {**_error("Too many accepted submissions (or practice runs, counted apart) for this "
                                 "user, or for this key whatever the user, lately; too many new users made by this key in the last hour; or the "
                                 "assignment's cool-down between attempts. The `Retry-After` header says in "
                                 "how many seconds to try again.",
                                 "rate_limited", "too_many_new_users", "cooling_down"),
                        "headers": {"Retry-After": {"schema": {"type": "integer"},
                                                    "description": "Seconds until a submission is accepted."}}},
            },
        }},
        "/assignments": {"get": {
            "operationId": "listAssignments", "summary": "The assignments the caller can submit to",
            "description": "With a personal token: those of its owner's courses, with where the owner stands. "
                           "With an API key: those of the key's courses. The notebook client finds an "
                           "assignment here by its course's code and its title.",
            "x-required-scope": "submissions:read",
            "responses": {"200": _ok("The assignments, by due date.", "AssignmentList"), **_AUTH_ERRORS}}},
        "/submissions/{submission_id}": {"get": {
            "operationId": "getSubmission", "summary": "A submission's status, progress and report",
            "x-required-scope": "submissions:read", "parameters": [submission_id],
            "responses": {"200": _ok("The submission.", "Submission"), **_AUTH_ERRORS,
                          "404": _error("This key made no submission with this id.", "submission_not_found")},
        }},
        "/submissions/{submission_id}/comments": {"post": {
            "operationId": "createComment", "summary": "Comment on a submission, overall or on one line of its code",
            "description": "For the staff of the submission's course: a personal token (with submissions:write) "
                           "of a teaching assistant or instructor of that course, or an API key with "
                           "grades:write on the work of its own courses. The student sees the comment beside "
                           "the code, and reads it in `comments` of the submission, once its feedback is "
                           "released (at once, or after the due date where the assignment holds it); they are "
                           "mailed then. A refused request stores nothing.",
            "x-required-scope": "grades:write", "parameters": [submission_id],
            "requestBody": _json_body("NewComment"),
            "responses": {
                "201": _ok("The comment as stored.", "Comment"),
                "400": _error("The body is not UTF-8 or not JSON.", "body_not_utf8", "malformed_json"),
                **_AUTH_ERRORS,
                "403": _error("The key lacks the scope, or the personal token's owner is not a teaching assistant "
                              "or instructor of the submission's course.", "insufficient_scope",
                              "not_course_staff"),
                "404": _error("No submission with this id that the caller may see (for an API key: of its own "
                              "courses).", "submission_not_found"),
                "415": _error("The body is not application/json (UTF-8).", "unsupported_media_type"),
                "422": _error("The JSON is not a comment: no body, a blank or too long one, control characters, "
                              "or a line outside the source.", "invalid_body", "unknown_field", "missing_field",
                              "wrong_type", "invalid_comment", "line_not_in_source"),
            },
        }},
        "/practice-runs/{run_id}": {"get": {
            "operationId": "getPracticeRun", "summary": "A practice run's status, progress and report",
            "x-required-scope": "submissions:read",
            "parameters": [{"name": "run_id", "in": "path", "required": True,
                            "schema": {"type": "string", "pattern": "^[0-9a-f]{32}$"}}],
            "responses": {"200": _ok("The practice run.", "PracticeRun"), **_AUTH_ERRORS,
                          "404": _error("No user of this key has a practice run with this id.",
                                        "practice_run_not_found")},
        }},
        "/webhooks": {"post": {
            "operationId": "createWebhook", "summary": "Register a callback URL for this key's submissions",
            "description": "When a submission made with this API key is graded (or cannot be), its "
                           "result is POSTed to `url`, signed with the secret returned here once.",
            "x-required-scope": "submissions:write",
            "requestBody": _json_body("NewWebhook"),
            "responses": {
                "201": _ok("Registered; keep the secret, it is not shown again.", "Webhook"),
                "400": _error("The body is not UTF-8 or not JSON.", "body_not_utf8", "malformed_json"),
                **_AUTH_ERRORS,
                "415": _error("The body is not application/json (UTF-8).", "unsupported_media_type"),
                "422": _error("The JSON does not name a usable URL.", "invalid_body", "unknown_field",
                              "missing_field", "invalid_url"),
            },
        }},
        "/webhooks/{webhook_id}": {"delete": {
            "operationId": "deleteWebhook", "summary": "Stop deliveries to a webhook of this key",
            "x-required-scope": "submissions:write",
            "parameters": [{"name": "webhook_id", "in": "path", "required": True, "schema": {"type": "integer"}}],
            "responses": {"204": {"description": "Deleted; nothing more is delivered there."}, **_AUTH_ERRORS,
                          "404": _error("This key has no webhook with this id.", "webhook_not_found")},
        }},
        **_exercise_paths(),
        **_course_paths(),
        "/openapi.json": {"get": {
            "operationId": "getOpenApi", "summary": "This document", "security": [],
            "responses": {"200": {"description": "The OpenAPI document.",
                                  "content": {"application/json": {"schema": {"type": "object"}}}}},
        }},
    }


def _exercise_paths() -> dict:
    slug = _SLUG_PARAMETER
    return {
        "/exercises/{slug}/versions": {"get": {
            "operationId": "listExerciseVersions", "summary": "An exercise's versions and their state",
            "description": "The published version, earlier published versions still kept for the assignments "
                           "pinned to them, and this key's own uploads still checking or rejected.",
            "x-required-scope": "exercises:read", "parameters": [slug],
            "responses": {"200": _ok("Newest first.", "ExerciseVersions"), **_AUTH_ERRORS,
                          "404": _error("No such exercise.", "exercise_not_found")}}},
        "/exercise-checks/{check_id}": {"get": {
            "operationId": "getExerciseCheck", "summary": "The check of a bundle this key sent, and its table",
            "x-required-scope": "exercises:write",
            "parameters": [{"name": "check_id", "in": "path", "required": True, "schema": {"type": "integer"}}],
            "responses": {"200": _ok("The check: `checking` until a worker has graded the bundle's own files.",
                                     "ExerciseCheck"), **_AUTH_ERRORS,
                          "404": _error("This key sent no bundle with this check id.", "check_not_found")}}},
    }


def _json_body(schema: str, also: dict | None = None) -> dict:
    """A JSON body of a model's schema, with the model's first example for a client to start from."""
    media = {"schema": _ref(schema)}
    if REQUEST_SCHEMAS[schema].get("examples"):
        media["example"] = REQUEST_SCHEMAS[schema]["examples"][0]
    return {"required": True, "content": {"application/json": media, **(also or {})}}


def _course_paths() -> dict:
    def ids(*names):
        return [{"name": n, "in": "path", "required": True, "schema": {"type": "integer"}} for n in names]

    bad = ("invalid_body", "unknown_field", "missing_field", "wrong_type")
    course_missing = {"404": _error("This key has no course with this id.", "course_not_found")}
    assignment_missing = {"404": _error("This key has no assignment with this id.", "assignment_not_found")}
    regrade_missing = {"404": _error("This key has no regrade with this id.", "regrade_not_found")}
    return {
        "/courses": {"post": {
            "operationId": "createCourse", "summary": "Make a course (this key's own)",
            "x-required-scope": "courses:write", "requestBody": _json_body("NewCourse"),
            "responses": {"201": _ok("Made.", "Course"), **_AUTH_ERRORS,
                          "409": _error("Another course has this code (codes are unique on the site, whatever "
                                        "their case).", "course_code_taken"),
                          "422": _error("Not a course.", *bad, "invalid_course")}}},
        "/courses/{course_id}": {"get": {
            "operationId": "getCourse", "summary": "A course and its assignments",
            "x-required-scope": "courses:read", "parameters": ids("course_id"),
            "responses": {"200": _ok("The course.", "Course"), **_AUTH_ERRORS, **course_missing}}},
        "/courses/{course_id}/members": {"put": {
            "operationId": "putMembers", "summary": "Add members or change their roles",
            "description": "JSON (`members`), or `text/csv` whose first line is `user,name,role` or "
                           "`email,name,role`. A line with a `user` is one of your key's users; a line with an "
                           "`email` a local account, made where there is none and mailed a link to set its "
                           "password. Every line is checked first: one bad line imports nothing, and the error "
                           "names the lines.",
            "x-required-scope": "courses:write", "parameters": ids("course_id"),
            "requestBody": _json_body("Members", also={"text/csv": {"schema": {"type": "string"}}}),
            "responses": {"200": _ok("The course's members now.", "Roster"), **_AUTH_ERRORS, **course_missing,
                          "422": _error("A line is not a member.", *bad, "invalid_roster", "invalid_user")}}},
        "/courses/{course_id}/assignments": {"post": {
            "operationId": "createAssignment", "summary": "Place an exercise in the course, with its rules",
            "x-required-scope": "courses:write", "parameters": ids("course_id"),
            "requestBody": _json_body("NewAssignment"),
            "responses": {"201": _ok("Made.", "Assignment"), **_AUTH_ERRORS, **course_missing,
                          "422": _error("Not an assignment.", *bad, "invalid_assignment", "unknown_exercise")}}},
        "/courses/{course_id}/gradebook": {"get": {
            "operationId": "getGradebook", "summary": "Every student against every assignment",
            "x-required-scope": "grades:read", "parameters": ids("course_id") + [
                {"name": "format", "in": "query", "schema": {"type": "string", "enum": ["json", "csv"]}},
                {"name": "per", "in": "query", "schema": {"type": "string", "enum": ["student", "submission"]},
                 "description": "CSV rows: one per student (default) or one per submission."}],
            "responses": {"200": {"description": "The gradebook.",
                                  "content": {"application/json": {"schema": _ref("Gradebook")},
                                              "text/csv": {"schema": {"type": "string"}}}},
                          "400": _error("An unknown format.", "bad_request"), **_AUTH_ERRORS, **course_missing}}},
        "/assignments/{assignment_id}/extensions": {"get": {
            "operationId": "listExtensions", "summary": "The assignment's extensions, one per student",
            "x-required-scope": "grades:read", "parameters": ids("assignment_id"),
            "responses": {"200": _ok("By the students' names.", "ExtensionList"), **_AUTH_ERRORS,
                          **assignment_missing}}, "post": {
            "operationId": "grantExtension", "summary": "A later due date or extra attempts for one student",
            "description": "Granting one to a student who has one changes it.",
            "x-required-scope": "grades:write", "parameters": ids("assignment_id"),
            "requestBody": _json_body("NewExtension"),
            "responses": {"201": _ok("Granted (it replaces an earlier one).", "Extension"), **_AUTH_ERRORS,
                          **assignment_missing,
                          "422": _error("Not an extension.", *bad, "invalid_extension", "invalid_user",
                                        "not_a_member")}}},
        "/assignments/{assignment_id}/extensions/{user_id}": {"delete": {
            "operationId": "revokeExtension", "summary": "Take a student's extension back",
            "description": "The student's due date and attempts are the assignment's again, and what counts is "
                           "counted under them (a submission made late for the assignment counts late again); "
                           "the LMS and the student hear of it as after a grant. `user_id` as the listing gives it.",
            "x-required-scope": "grades:write", "parameters": ids("assignment_id", "user_id"),
            "responses": {"204": {"description": "Revoked."}, **_AUTH_ERRORS,
                          "404": _error("This key has no assignment with this id, or the student has no extension "
                                        "on it.", "assignment_not_found", "extension_not_found")}}},
        "/assignments/{assignment_id}/overrides": {"get": {
            "operationId": "listOverrides", "summary": "The assignment's scores set by hand, one per student",
            "x-required-scope": "grades:read", "parameters": ids("assignment_id"),
            "responses": {"200": _ok("By the students' names.", "OverrideList"), **_AUTH_ERRORS,
                          **assignment_missing}}, "post": {
            "operationId": "setOverride", "summary": "Set one student's score by hand, with the reason",
            "description": "Setting one for a student who has one changes it.",
            "x-required-scope": "grades:write", "parameters": ids("assignment_id"),
            "requestBody": _json_body("NewOverride"),
            "responses": {"201": _ok("Set (it replaces an earlier one).", "Override"), **_AUTH_ERRORS,
                          **assignment_missing,
                          "422": _error("Not a score.", *bad, "invalid_assignment", "invalid_user", "not_a_member")}}},
        "/assignments/{assignment_id}/overrides/{user_id}": {"delete": {
            "operationId": "revokeOverride", "summary": "Take a score set by hand back",
            "description": "The rules count the student's graded work again; the LMS and the student hear of it "
                           "as after setting one. `user_id` as the listing gives it.",
            "x-required-scope": "grades:write", "parameters": ids("assignment_id", "user_id"),
            "responses": {"204": {"description": "Revoked."}, **_AUTH_ERRORS,
                          "404": _error("This key has no assignment with this id, or the student has no score set "
                                        "by hand on it.", "assignment_not_found", "override_not_found")}}},
        "/assignments/{assignment_id}/similarity": {"get": {
            "operationId": "getSimilarity", "summary": "Pairs of students' final submissions, most similar first",
            "description": f"Computed on request: refused above {MAX_STUDENTS} students with a graded submission, "
                           f"or {MAX_CHARACTERS:,} characters of final sources in all. It informs; it never changes "
                           "a score.",
            "x-required-scope": "grades:read", "parameters": ids("assignment_id") + [
                {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "default": 100},
                 "description": "How many of the most similar pairs to return."}],
            "responses": {"200": _ok("The pairs.", "Similarity"), "400": _error("A bad limit.", "bad_request"),
                          **_AUTH_ERRORS, **assignment_missing,
                          "422": _error("Too many students or too much code to compare now, or the starter code "
                                        "of the pinned version is no longer kept.", "too_many_students",
                                        "sources_too_large", "starter_unavailable")}}},
        "/assignments/{assignment_id}/regrades": {"post": {
            "operationId": "startRegrade", "summary": "Grade the assignment's sources again against the current version",
            "description": "On a queue workers take only when no live submission waits; follow `url`.",
            "x-required-scope": "grades:write", "parameters": ids("assignment_id"),
            "responses": {"202": _ok("Started.", "Regrade"), **_AUTH_ERRORS, **assignment_missing,
                          "422": _error("Nothing to regrade, or one is running.", "invalid_regrade")}}},
        "/exercises/{slug}/regrades": {"post": {
            "operationId": "startExerciseRegrades",
            "summary": "Regrade every assignment of an exercise in this key's courses, one regrade each",
            "description": "After a test of the exercise was fixed: each assignment's sources are graded again "
                           "against the exercise's current version, as `POST /assignments/{id}/regrades` does; "
                           "each regrade is published or discarded on its own. Assignments with nothing to "
                           "regrade, or with a regrade running, are listed in `skipped` with the reason.",
            "x-required-scope": "grades:write",
            "parameters": [_SLUG_PARAMETER],
            "responses": {"202": _ok("Started.", "ExerciseRegrades"),
                          "200": _ok("Every assignment was skipped: `skipped` says why for each.",
                                     "ExerciseRegrades"),
                          **_AUTH_ERRORS,
                          "404": _error("No assignment of this key's courses is of this exercise.",
                                        "exercise_not_found")}}},
        "/regrades/{regrade_id}": {"get": {
            "operationId": "getRegrade", "summary": "A regrade's progress and diff",
            "x-required-scope": "grades:read", "parameters": ids("regrade_id"),
            "responses": {"200": _ok("The regrade.", "Regrade"), **_AUTH_ERRORS, **regrade_missing}}},
        "/regrades/{regrade_id}/publish": {"post": {
            "operationId": "publishRegrade", "summary": "Make the new grades count (LMS and webhooks hear of it)",
            "x-required-scope": "grades:write", "parameters": ids("regrade_id"),
            "responses": {"200": _ok("Published.", "Regrade"), **_AUTH_ERRORS, **regrade_missing,
                          "422": _error("Not finished, or decided already.", "invalid_regrade")}}},
        "/regrades/{regrade_id}/discard": {"post": {
            "operationId": "discardRegrade", "summary": "Drop the new grades; nothing changes",
            "x-required-scope": "grades:write", "parameters": ids("regrade_id"),
            "responses": {"200": _ok("Discarded.", "Regrade"), **_AUTH_ERRORS, **regrade_missing,
                          "422": _error("Decided already.", "invalid_regrade")}}},
        "/assignments/{assignment_id}/submissions.zip": {"get": {
            "operationId": "getSubmissionsZip", "summary": "Every student's submissions to the assignment, as one zip",
            "description": "A folder per student, named by their e-mail (else name, else your `user` value) made "
                           "safe and their user id, holding each attempt in the order made: its source as "
                           "`attempt-<n>.py` (a notebook's: the Python made of its code cells), and, once graded, "
                           "its report as `attempt-<n>.report.json` (as `GET /submissions/{id}` gives it) and "
                           "`attempt-<n>.report.txt` (in the language `Accept-Language` asks: en or ko). "
                           "`index.csv` at the top has a row per attempt: `student`, `name`, `user_id`, `attempt`, "
                           "`submission`, `submitted_at` (ISO 8601 in the course's time zone, with its offset), "
                           "`status`, `score`, `max_score`, `counted` and `late` (yes or no, as the gradebook "
                           "counts them) and the paths of its files. Nothing is held: the key runs the course. "
                           "The file's name is in `Content-Disposition`, as `filename*` (UTF-8) and an ASCII "
                           "`filename`.",
            "x-required-scope": "grades:read", "parameters": ids("assignment_id"),
            "responses": {"200": {"description": "The zip.",
                                  "content": {"application/zip": {"schema": {"type": "string", "format": "binary"}}}},
                          **_AUTH_ERRORS, **assignment_missing}}},
        "/assignments/{assignment_id}/analytics": {"get": {
            "operationId": "getAnalytics", "summary": "Where the class is stuck: scores, pass rates, hints hit",
            "x-required-scope": "grades:read", "parameters": ids("assignment_id"),
            "responses": {"200": _ok("The numbers.", "Analytics"), **_AUTH_ERRORS, **assignment_missing}}},
    }


# Refusals of a body that come before a view reads it (or as it does), the same for every
# operation that takes one: listed on each, unless the operation words its own.
_BODY_REFUSALS = {"400": "MalformedBody", "413": "TooLarge", "415": "UnsupportedMediaType"}


def _every_operation_may_fail(paths: dict) -> dict:
    """Any operation can meet a fault of the service's own, and one that takes a body can be
    sent one that is not JSON, too large, or of another type: each answered as JSON, listed."""
    for item in paths.values():
        for operation in item.values():
            if isinstance(operation, dict) and "responses" in operation:
                responses = operation["responses"]
                if "requestBody" in operation:
                    for status, name in _BODY_REFUSALS.items():
                        responses.setdefault(status, {"$ref": f"#/components/responses/{name}"})
                responses.setdefault("500", {"$ref": "#/components/responses/InternalError"})
    return paths


def document(server: str = "/api/v1") -> dict:
    return {
        "openapi": "3.1.0",
        "info": {"title": "autograd-grader API", "version": "1",
                 "description": "Grades PyTorch autograd exercises. Every request but this document's "
                                "needs an API key (`grader api-key create --scope ...`) as a bearer "
                                "token, or a user's personal token (made on their Tokens page: it "
                                "holds exercises:read, submissions:read and submissions:write, reads the "
                                "exercises its owner sees on the site, submits as its owner "
                                "and reads their own submissions and practice runs, as the site "
                                "shows them); each operation names the scope it needs in `x-required-scope`. "
                                "Every error is `{\"error\": {\"code\", \"message\"}}`, also where it is refused "
                                "before an operation runs: a missing or malformed `Authorization` header is 401, "
                                "a body that is too large 413, of another content type 415, not UTF-8 or not "
                                "JSON 400 (each operation lists those it can meet); unknown paths under this "
                                "server answer 404 `not_found` and wrong methods 405 `method_not_allowed` "
                                "(`components.responses` NotFound and MethodNotAllowed)."},
        "servers": [{"url": server}],
        "security": [{"bearerAuth": []}],
        "paths": _as_3_1(_every_operation_may_fail(_paths())),
        "components": {
            "securitySchemes": {"bearerAuth": {"type": "http", "scheme": "bearer",
                                               "description": "An API key: gk_<prefix>_<secret>."}},
            "schemas": _as_3_1({**SCHEMAS, **REQUEST_SCHEMAS}),
            "responses": {
                "Unauthorized": _error("No API key, or one that is wrong or revoked.",
                                       "missing_api_key", "invalid_api_key", "api_key_revoked"),
                "Forbidden": _error("The API key lacks the operation's scope.", "insufficient_scope"),
                "MalformedBody": _error("The body is not UTF-8, or not the JSON it says it is.", "body_not_utf8",
                                        "malformed_json", "bad_request"),
                "TooLarge": _error("The body is larger than the service reads for this operation; nothing of it "
                                   "was read or stored.", "request_too_large"),
                "UnsupportedMediaType": _error("The body is not of a content type the operation takes (JSON: "
                                               "UTF-8 only).", "unsupported_media_type"),
                # Answers of no operation: a path under /api/v1 that is none, a method a path does not take.
                "NotFound": _error("No operation has this path (or a path parameter of the wrong kind: a "
                                   "number's).", "not_found"),
                "MethodNotAllowed": {**_error("The path takes other methods, which `Allow` lists.",
                                              "method_not_allowed"),
                                     "headers": {"Allow": {"schema": {"type": "string"}}}},
                "InternalError": _error("A fault of the service's own; it has been logged, and the message "
                                        "says nothing more.", "internal_error"),
            },
        },
    }
