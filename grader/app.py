"""The Flask app: ``create_app()`` builds it, the way Flask's tutorial does."""

from __future__ import annotations

import os
import secrets
from datetime import timedelta
from pathlib import Path

from flask import Flask, request
from flask_limiter.errors import RateLimitExceeded
from werkzeug.exceptions import HTTPException
from werkzeug.middleware.proxy_fix import ProxyFix

from grader import api, web
from grader.accounts import users
from grader.api.views import error_response
from grader.catalog import uploads
from grader.extensions import babel, csrf, limiter, locale
from grader.web import lti as lti_views
from grader.web import mail as web_mail
from grader import logs
from grader.ops import views as ops_views
from grader.settings import MAX_SOURCE_BYTES, Settings, private_dir, settings
from grader.web import errors, per_process

# What a JSON error under /api/ is called, by HTTP status.
_HTTP_CODES = {400: "bad_request", 404: "not_found", 405: "method_not_allowed", 413: "request_too_large",
               415: "unsupported_media_type", 429: "rate_limited", 500: "internal_error"}
# Headers an error keeps: what a 405 allows, when a 429 may try again.
_KEPT_HEADERS = ("allow", "retry-after", "x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset")


class _Site(Flask):
    url_map_class = per_process.SettledMap
    url_rule_class = per_process.LazyRule


def create_app(config: dict | None = None, *, using: Settings | None = None) -> Flask:
    """The web app, configured from ``using`` (the process's settings by default); ``config``
    overrides Flask's own configuration (tests pass DATABASE_URL, EXERCISES_DIR). Tasks go
    to the broker grader.tasks' Celery app was made for (GRADER_REDIS_URL)."""
    app = _Site(__name__, instance_relative_config=True)
    app.jinja_options = {**app.jinja_options, "bytecode_cache": per_process.TEMPLATES}
    defaults = using or settings()
    app.extensions["grader.settings"] = defaults
    logs.configure(defaults.log_format)
    app.config.from_mapping(
        DATABASE_URL=defaults.database_url,
        EXERCISES_DIR=defaults.exercises_dir,
        # Room for a largest source written entirely as JSON \uXXXX escapes; the source's
        # own limit is checked after decoding, with a better message.
        MAX_CONTENT_LENGTH=6 * MAX_SOURCE_BYTES + 64 * 1024,
        SUBMISSION_RATE_LIMIT=defaults.submission_rate_limit,
        PRACTICE_RATE_LIMIT=defaults.practice_rate_limit,
        API_KEY_RATE_LIMIT=defaults.api_key_rate_limit,
        API_NEW_USERS_PER_HOUR=defaults.api_new_users_per_hour,
        LOGIN_ACCOUNT_LIMIT=defaults.login_account_limit,
        LOGIN_ADDRESS_LIMIT=defaults.login_address_limit,
        SIGNUP_ADDRESS_LIMIT=defaults.signup_address_limit,
        RESET_ACCOUNT_LIMIT=defaults.reset_account_limit,
        RESET_ADDRESS_LIMIT=defaults.reset_address_limit,
        PERMANENT_SESSION_LIFETIME=timedelta(hours=defaults.session_hours),
        FRAME_ANCESTORS=defaults.frame_ancestors,
        RATELIMIT_STORAGE_URI=defaults.redis_url,
        BABEL_TRANSLATION_DIRECTORIES=str(Path(__file__).parent / "translations"),
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        WTF_CSRF_TIME_LIMIT=None,  # the token lives as long as the session
        REDIS_URL=defaults.redis_url,  # LTI nonces, states and launch data
    )
    if defaults.cookie_secure:
        # Served over HTTPS: an LMS shows the pages in an iframe of another site, where only
        # a SameSite=None cookie (which must be Secure) comes along.
        app.config.update(SESSION_COOKIE_SECURE=True, SESSION_COOKIE_SAMESITE="None")
    app.config.update(config or {})
    users.nobodys_hash()  # before the first sign-in, which must not take longer for it
    if not app.config.get("SECRET_KEY"):
        app.config["SECRET_KEY"] = defaults.secret_key or _instance_secret(defaults.instance_dir)

    # Before the CSRF check reads a form: a bundle's zip may be larger than anything else
    # the site takes, and only the two ways a bundle comes in get that room.
    app.before_request(_room_for_bundles)
    csrf.init_app(app)
    babel.init_app(app, locale_selector=locale)
    limiter.init_app(app)
    csrf.exempt(api.bp)  # bearer keys, not cookies: nothing for a forged form to ride on
    app.register_blueprint(api.bp)
    app.register_blueprint(web.bp)
    # The LMS posts these cross-site; state, nonce and the platform's signature protect them.
    csrf.exempt(lti_views.login)
    csrf.exempt(lti_views.launch)
    # A mail program's one-click unsubscribe (RFC 8058) posts with no session: the link's
    # key is what it proves, and all it can do is switch one kind of mail off.
    csrf.exempt(web_mail.mail_stop)
    app.register_blueprint(lti_views.bp)
    app.register_blueprint(ops_views.bp)  # /healthz, /readyz, /metrics
    if defaults.trusted_proxies:
        # Behind a proxy that terminates HTTPS: the scheme, host and client as the proxy saw them.
        n = defaults.trusted_proxies
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=n, x_proto=n, x_host=n, x_port=n, x_prefix=n)

    app.register_error_handler(HTTPException, _http_error)
    app.url_map.settle()
    return app


def _room_for_bundles() -> None:
    if request.endpoint in ("web.upload", "api.publish_exercise"):
        request.max_content_length = uploads.MAX_REQUEST_BYTES


def _http_error(exc: HTTPException):
    """Under /api/ every error is JSON like the API's own; elsewhere a page of the site's."""
    if not request.path.startswith("/api/"):
        return errors.page(exc)
    status = exc.code or 500
    # Flask has logged a 500's exception already; its text stays in the log.
    message = "internal error; it has been logged" if status >= 500 else (exc.description or exc.name)
    headers = {k: v for k, v in exc.get_headers() if k.lower() in _KEPT_HEADERS}
    if isinstance(exc, RateLimitExceeded):  # its description is the limit; another 429 says why itself
        message = f"too many requests: at most {exc.description}; try again later"
    return error_response(status, _HTTP_CODES.get(status, "http_error"), message, headers)


def _instance_secret(instance_dir: Path) -> str:
    """With no GRADER_SECRET_KEY, a key made once and kept beside the default database, so
    that sessions outlive a restart and every web process of one machine shares it."""
    path = private_dir(instance_dir) / "secret_key"
    if not path.exists():
        draft = path.with_name(f".secret_key.{os.getpid()}")
        with os.fdopen(os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as out:
            out.write(secrets.token_hex(32))
        try:
            os.link(draft, path)  # atomic: of processes starting together, one key wins
        except FileExistsError:
            pass
        finally:
            draft.unlink()
    return path.read_text().strip()
