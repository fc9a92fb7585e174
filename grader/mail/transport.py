"""Handing a mail to the operator's SMTP server, or to the outbox folder where none is set.

``GRADER_SMTP_URL``:
- ``smtp://host[:port]`` (port 25 by default): STARTTLS where the server offers it, plain
  SMTP where it does not; ``?starttls=require`` refuses to send in the clear.
- ``smtps://host[:port]`` (465 by default): TLS from the first byte.
- ``user:password@`` before the host (percent-encoded) signs in once the line is private,
  or in the clear only where STARTTLS is not offered and not required.
- ``?cafile=/path/ca.pem``: trust this CA as well as the system's (a private relay).
Nothing here logs the URL's password.
"""

from __future__ import annotations

import smtplib
import socket
import ssl
from dataclasses import dataclass
from email.message import EmailMessage
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from grader.settings import private_dir, private_file


class NotSent(Exception):
    """The mail did not leave. ``lasting``: the server refused it for good (an address it
    will never take); else a later try may succeed."""

    def __init__(self, message: str, *, lasting: bool = False):
        super().__init__(message)
        self.lasting = lasting


@dataclass(frozen=True)
class Server:
    host: str
    port: int
    implicit_tls: bool
    starttls: str  # "auto" or "require"
    user: str
    password: str
    cafile: str
    timeout_s: float

    def __repr__(self) -> str:  # never the password
        return f"Server({'smtps' if self.implicit_tls else 'smtp'}://{self.host}:{self.port})"


def server_from(url: str, timeout_s: float = 10.0) -> Server | None:
    """The server an SMTP URL names; None for "" (no server: the outbox). A URL that is not
    one raises ValueError saying what is wrong, without the password."""
    if not url:
        return None
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise ValueError("GRADER_SMTP_URL is not a URL such as smtp://user:password@host:587") from None
    if parts.scheme not in ("smtp", "smtps") or not parts.hostname:
        raise ValueError(f"GRADER_SMTP_URL must be smtp://host[:port] or smtps://host[:port], "
                         f"not a {parts.scheme or 'schemeless'} URL")
    query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
    starttls = query.get("starttls", "auto")
    if starttls not in ("auto", "require"):
        raise ValueError(f"GRADER_SMTP_URL's starttls is 'auto' or 'require', not {starttls!r}")
    return Server(host=parts.hostname, port=port or (465 if parts.scheme == "smtps" else 25),
                  implicit_tls=parts.scheme == "smtps", starttls=starttls,
                  user=unquote(parts.username or ""), password=unquote(parts.password or ""),
                  cafile=query.get("cafile", ""), timeout_s=timeout_s)


def _tls(server: Server) -> ssl.SSLContext:
    context = ssl.create_default_context()
    if server.cafile:
        context.load_verify_locations(cafile=server.cafile)
    return context


def send(server: Server, message: EmailMessage) -> None:
    """One try at handing ``message`` to ``server``; raises NotSent."""
    try:
        if server.implicit_tls:
            client = smtplib.SMTP_SSL(server.host, server.port, timeout=server.timeout_s, context=_tls(server))
        else:
            client = smtplib.SMTP(server.host, server.port, timeout=server.timeout_s)
        with client:
            client.ehlo()
            if not server.implicit_tls:
                if client.has_extn("starttls"):
                    client.starttls(context=_tls(server))
                    client.ehlo()
                elif server.starttls == "require":
                    raise NotSent(f"{server.host}:{server.port} offers no STARTTLS and the URL requires it")
            if server.user:
                client.login(server.user, server.password)
            refused = client.send_message(message)
            if refused:
                raise NotSent(f"the server refused {', '.join(refused)}", lasting=True)
    except NotSent:
        raise
    except smtplib.SMTPAuthenticationError as exc:
        raise NotSent(f"the server refused the sign-in ({exc.smtp_code})") from None
    except smtplib.SMTPRecipientsRefused as exc:
        codes = [code for code, _text in exc.recipients.values()]
        raise NotSent(f"the server refused the address ({', '.join(map(str, codes))})",
                      lasting=all(500 <= code < 600 for code in codes)) from None
    except smtplib.SMTPResponseException as exc:
        raise NotSent(f"the server answered {exc.smtp_code}: {_said(exc.smtp_error)}",
                      lasting=500 <= exc.smtp_code < 600) from None
    except (smtplib.SMTPException, OSError, socket.timeout, ssl.SSLError) as exc:
        raise NotSent(f"{type(exc).__name__}: {exc}"[:500]) from None


def _said(error) -> str:
    text = error.decode("utf-8", "replace") if isinstance(error, bytes) else str(error)
    return text[:300]


def to_outbox(folder: Path, name: str, message: EmailMessage) -> Path:
    """Write the mail where no SMTP server is set: the instance folder's outbox (0700),
    one .eml file each (0600), for whoever runs the service to read."""
    path = private_dir(folder) / name
    private_file(path).write_bytes(bytes(message))
    return path
