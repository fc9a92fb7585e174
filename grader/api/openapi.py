"""The OpenAPI 3.1 document of /api/v1.

Every body's schema is generated from its model: the requests' from grader.api.bodies, which
checks them, the responses' from grader.api.answers, which the views build them with. The
operations are written here by hand, with the statuses, error codes and scopes of each.
tests/test_api.py keeps the two in step (every route documented with its methods, every
documented path routed), and tests/openapi_check.py holds every response to it.
"""

from __future__ import annotations

from grader.api import answers, bodies
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


def _schemas(models, mode: str) -> dict:
    """Each model's schema by its name, and the models they use ($defs) beside them: one name,
    one schema, whichever model uses it."""
    found = {}
    for model in models:
        schema = model.model_json_schema(ref_template="#/components/schemas/{model}", mode=mode)
        for name, used in {**schema.pop("$defs", {}), model.__name__: schema}.items():
            if found.setdefault(name, used) != used:
                raise ValueError(f"two schemas are named {name!r}")
    return _untitled(found)


def _or_null(node):
    """pydantic's ``anyOf: [X, null]`` of a plain type written as the type list it is: the
    validators then name what X's own keywords refuse (a date-time without its zone)."""
    if isinstance(node, list):
        return [_or_null(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: _or_null(value) for key, value in node.items()}
    options = node.get("anyOf", [])
    if len(options) == 2 and {"type": "null"} in options:
        other = options[1 - options.index({"type": "null"})]
        if isinstance(other.get("type"), str):
            node.pop("anyOf")
            node = {**other, **node, "type": [other["type"], "null"]}
            if "const" in node:
                node["enum"] = [node.pop("const")]
            if "enum" in node:
                node["enum"] = [*node["enum"], None]
    return node


REQUEST_SCHEMAS = _schemas((bodies.NewSubmission, bodies.NewComment, bodies.NewWebhook, bodies.NewCourse,
                            bodies.Members, bodies.NewAssignment, bodies.NewExtension, bodies.NewOverride),
                           "validation")
RESPONSE_SCHEMAS = _or_null(_schemas(answers.RESPONSES, "serialization"))
if REQUEST_SCHEMAS.keys() & RESPONSE_SCHEMAS.keys():  # one $ref, two schemas
    raise ValueError(f"named for a request and a response: {REQUEST_SCHEMAS.keys() & RESPONSE_SCHEMAS.keys()}")


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
        "paths": _every_operation_may_fail(_paths()),
        "components": {
            "securitySchemes": {"bearerAuth": {"type": "http", "scheme": "bearer",
                                               "description": "An API key: gk_<prefix>_<secret>."}},
            "schemas": {**RESPONSE_SCHEMAS, **REQUEST_SCHEMAS},
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
