"""The OpenAPI 3.0 document of /api/v1.

Written by hand, next to the views it describes; tests/test_api.py keeps the two
in step (every route documented with its methods, every documented path routed).
"""

from __future__ import annotations

from grader.settings import MAX_SOURCE_BYTES

# Every error code the API answers with, and its HTTP status.
ERROR_CODES = {
    "missing_api_key": 401, "invalid_api_key": 401, "api_key_revoked": 401,
    "insufficient_scope": 403,
    "not_found": 404, "exercise_not_found": 404, "submission_not_found": 404, "webhook_not_found": 404,
    "method_not_allowed": 405,
    "body_not_utf8": 400, "malformed_json": 400, "bad_request": 400,
    "request_too_large": 413, "source_too_large": 413,
    "unsupported_media_type": 415,
    "invalid_url": 422,
    "invalid_body": 422, "unknown_field": 422, "missing_field": 422, "wrong_type": 422, "invalid_user": 422,
    "unknown_exercise": 422, "source_empty": 422, "source_not_utf8": 422, "source_invalid": 422,
    "rate_limited": 429, "too_many_new_users": 429,
    "internal_error": 500,
    "http_error": 400,  # any other HTTP error, with its own status
}


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
            }}},
    },
    "Exercise": {
        "type": "object", "required": ["slug", "version", "title", "device", "max_score", "functions"],
        "properties": {
            "slug": {"type": "string", "pattern": "^[a-z0-9]+(-[a-z0-9]+)*$", "example": "autograd-basics"},
            "version": {"type": "integer", "minimum": 1},
            "title": _TITLE,
            "device": {"type": "string", "enum": ["cpu", "cuda", "any"],
                       "description": "Where submissions are graded; `any` runs on a GPU where the "
                                      "deployment has one."},
            "max_score": {"type": "number", "description": "The sum of the points of the hidden tests."},
            "functions": {"type": "array", "items": {"type": "string"},
                          "description": "The functions a submission must define."},
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
    "NewSubmission": {
        "type": "object", "required": ["exercise", "source", "user"], "additionalProperties": False,
        "properties": {
            "exercise": {"type": "string", "description": "The exercise's slug.", "example": "autograd-basics"},
            "source": {"type": "string", "minLength": 1,
                       "description": f"The Python source, at most {MAX_SOURCE_BYTES} bytes as UTF-8, "
                                      "not blank, no NUL characters."},
            "user": {"type": "string", "minLength": 1, "maxLength": 480,
                     "description": "Your id for the student; the grader makes a user on first sight."},
        },
    },
    "SubmissionAccepted": {
        "type": "object", "required": ["id", "url", "status"],
        "properties": {
            "id": {"type": "string", "pattern": "^[0-9a-f]{32}$"},
            "url": {"type": "string", "format": "uri", "description": "Where to follow it (GET)."},
            "status": {"type": "string", "enum": ["queued"]},
        },
    },
    "Submission": {
        "type": "object",
        "required": ["id", "exercise", "exercise_version", "user", "status", "progress", "score",
                     "max_score", "failure_reason", "report"],
        "properties": {
            "id": {"type": "string", "pattern": "^[0-9a-f]{32}$"},
            "exercise": {"type": "string"},
            "exercise_version": {"type": "integer"},
            "user": {"type": "string", "nullable": True,
                     "description": "The user's external id (null for users who signed in on the site)."},
            "status": {"type": "string", "enum": ["queued", "running", "graded", "failed"],
                       "description": "`failed`: the grader could not grade it (never a zero score); "
                                      "`failure_reason` says why."},
            "progress": {"type": "object", "required": ["done", "total"],
                         "properties": {"done": {"type": "integer"}, "total": {"type": "integer"}}},
            "score": {"type": "number", "nullable": True},
            "max_score": {"type": "number", "nullable": True},
            "failure_reason": {"type": "string", "nullable": True},
            "report": {"type": "object", "nullable": True, "additionalProperties": True,
                       "description": "The grading report (per test: name, passed, points, max points, "
                                      "message, hint); null until graded."},
        },
    },
    "NewWebhook": {
        "type": "object", "required": ["url"], "additionalProperties": False,
        "properties": {"url": {"type": "string", "format": "uri", "maxLength": 2000,
                               "description": "Where results are POSTed (http or https)."}},
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
}


def _paths() -> dict:
    slug = {"name": "slug", "in": "path", "required": True, "schema": {"type": "string"}}
    submission_id = {"name": "submission_id", "in": "path", "required": True,
                     "schema": {"type": "string", "pattern": "^[0-9a-f]{32}$"}}
    return {
        "/exercises": {"get": {
            "operationId": "listExercises", "summary": "The published exercises",
            "x-required-scope": "exercises:read",
            "responses": {"200": _ok("The exercises, by slug.", "ExerciseList"), **_AUTH_ERRORS},
        }},
        "/exercises/{slug}": {"get": {
            "operationId": "getExercise", "summary": "One published exercise, with its statement",
            "x-required-scope": "exercises:read", "parameters": [slug],
            "responses": {"200": _ok("The exercise.", "ExerciseDetail"), **_AUTH_ERRORS,
                          "404": _error("No published exercise has this slug.", "exercise_not_found")},
        }},
        "/submissions": {"post": {
            "operationId": "createSubmission", "summary": "Submit a solution for grading",
            "description": "Stores the submission and queues it for grading. An unknown exercise is "
                           "422 `unknown_exercise` (the URL exists; the body names something that does "
                           "not). A refused request stores nothing.",
            "x-required-scope": "submissions:write",
            "requestBody": {"required": True,
                            "content": {"application/json": {"schema": _ref("NewSubmission")}}},
            "responses": {
                "202": {**_ok("Queued; follow `url` (also in the Location header).", "SubmissionAccepted"),
                        "headers": {"Location": {"schema": {"type": "string", "format": "uri"}}}},
                "400": _error("The body is not UTF-8 or not JSON.", "body_not_utf8", "malformed_json"),
                **_AUTH_ERRORS,
                "413": _error(f"The source is over {MAX_SOURCE_BYTES} bytes, or the body far over.",
                              "source_too_large", "request_too_large"),
                "415": _error("The body is not application/json (UTF-8).", "unsupported_media_type"),
                "422": _error("The JSON does not describe a submission that can be graded.",
                              "invalid_body", "unknown_field", "missing_field", "wrong_type", "invalid_user",
                              "unknown_exercise", "source_empty", "source_not_utf8", "source_invalid"),
                "429": {**_error("Too many accepted submissions for this user, or for this key whatever the "
                                 "user, lately; or too many new users made by this key in the last hour. "
                                 "The `Retry-After` header says in how many seconds to try again.",
                                 "rate_limited", "too_many_new_users"),
                        "headers": {"Retry-After": {"schema": {"type": "integer"},
                                                    "description": "Seconds until a submission is accepted."}}},
            },
        }},
        "/submissions/{submission_id}": {"get": {
            "operationId": "getSubmission", "summary": "A submission's status, progress and report",
            "x-required-scope": "submissions:read", "parameters": [submission_id],
            "responses": {"200": _ok("The submission.", "Submission"), **_AUTH_ERRORS,
                          "404": _error("This key made no submission with this id.", "submission_not_found")},
        }},
        "/webhooks": {"post": {
            "operationId": "createWebhook", "summary": "Register a callback URL for this key's submissions",
            "description": "When a submission made with this API key is graded (or cannot be), its "
                           "result is POSTed to `url`, signed with the secret returned here once.",
            "x-required-scope": "submissions:write",
            "requestBody": {"required": True,
                            "content": {"application/json": {"schema": _ref("NewWebhook")}}},
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
        "/openapi.json": {"get": {
            "operationId": "getOpenApi", "summary": "This document", "security": [],
            "responses": {"200": {"description": "The OpenAPI document.",
                                  "content": {"application/json": {"schema": {"type": "object"}}}}},
        }},
    }


def document(server: str = "/api/v1") -> dict:
    return {
        "openapi": "3.0.3",
        "info": {"title": "autograd-grader API", "version": "1",
                 "description": "Grades PyTorch autograd exercises. Every request but this document's "
                                "needs an API key (`grader api-key create --scope ...`) as a bearer "
                                "token; each operation names the scope it needs in `x-required-scope`. "
                                "Every error is `{\"error\": {\"code\", \"message\"}}`; unknown paths "
                                "answer 404 `not_found`, wrong methods 405 `method_not_allowed`."},
        "servers": [{"url": server}],
        "security": [{"bearerAuth": []}],
        "paths": _paths(),
        "components": {
            "securitySchemes": {"bearerAuth": {"type": "http", "scheme": "bearer",
                                               "description": "An API key: gk_<prefix>_<secret>."}},
            "schemas": SCHEMAS,
            "responses": {
                "Unauthorized": _error("No API key, or one that is wrong or revoked.",
                                       "missing_api_key", "invalid_api_key", "api_key_revoked"),
                "Forbidden": _error("The API key lacks the operation's scope.", "insufficient_scope"),
            },
        },
    }
