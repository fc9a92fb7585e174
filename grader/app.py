"""The Flask app: ``create_app()`` builds it, the way Flask's tutorial does."""

from __future__ import annotations

from flask import Flask, request
from werkzeug.exceptions import HTTPException

from grader.settings import MAX_SOURCE_BYTES, settings

# What a JSON error under /api/ is called, by HTTP status.
_HTTP_CODES = {400: "bad_request", 404: "not_found", 405: "method_not_allowed", 413: "request_too_large",
               415: "unsupported_media_type", 500: "internal_error"}


def create_app(config: dict | None = None) -> Flask:
    """The web app. ``config`` overrides the environment's settings (tests pass
    DATABASE_URL, EXERCISES_DIR). Tasks go to the broker worker.app's Celery app was
    made for (GRADER_REDIS_URL)."""
    app = Flask(__name__, instance_relative_config=True)
    defaults = settings()
    app.config.from_mapping(
        DATABASE_URL=defaults.database_url,
        EXERCISES_DIR=defaults.exercises_dir,
        # Room for a largest source written entirely as JSON \uXXXX escapes; the source's
        # own limit is checked after decoding, with a better message.
        MAX_CONTENT_LENGTH=6 * MAX_SOURCE_BYTES + 64 * 1024,
    )
    app.config.update(config or {})

    from grader import api
    app.register_blueprint(api.bp)

    app.register_error_handler(HTTPException, _http_error)
    return app


def _http_error(exc: HTTPException):
    """Under /api/ every error is JSON like the API's own; elsewhere Flask's page."""
    if not request.path.startswith("/api/"):
        return exc
    from grader.api.views import error_response

    status = exc.code or 500
    # Flask has logged a 500's exception already; its text stays in the log.
    message = "internal error; it has been logged" if status >= 500 else (exc.description or exc.name)
    headers = {k: v for k, v in exc.get_headers() if k.lower() == "allow"}  # 405 says what is allowed
    return error_response(status, _HTTP_CODES.get(status, "http_error"), message, headers)
