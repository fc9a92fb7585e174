"""The REST API, v1: JSON over HTTP for systems that integrate with the grader.

Every response is JSON, errors included ({"error": {"code", "message"}}); the
OpenAPI document at /api/v1/openapi.json describes it all.
"""

from grader.api.views import bp
from grader.api import assignments, comments, courses, exercises, practice  # noqa: F401  (their routes, on the same blueprint)

__all__ = ["bp"]
