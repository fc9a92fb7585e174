"""A real SMTP server for the tests (aiosmtpd on loopback, STARTTLS and sign-in where
asked), and the test's hand-over of queued mail: the Celery messages the service put on
Redis, run by the mail task itself as a worker would."""

from __future__ import annotations

import base64
import datetime
import email
import email.policy
import json
import socket
import ssl
from dataclasses import dataclass, field
from email.message import EmailMessage
from pathlib import Path

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and localhost, and its key (the certificate is its own CA)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    import ipaddress

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = folder / "smtp-cert.pem", folder / "smtp-key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


@dataclass
class Received:
    sender: str
    recipients: list[str]
    message: EmailMessage
    tls: bool
    login: str | None


class _Handler:
    def __init__(self, box: "Mailbox"):
        self.box = box

    async def handle_RCPT(self, server, session, envelope, address, options):
        if address in self.box.refuse:
            return "550 5.1.1 no such mailbox"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        self.box.received.append(Received(envelope.mail_from, list(envelope.rcpt_tos), message,
                                          tls=session.ssl is not None,
                                          login=session.auth_data if session.authenticated else None))
        return "250 Message accepted"


@dataclass
class Mailbox:
    """An SMTP server on 127.0.0.1; ``url`` is what GRADER_SMTP_URL would be."""

    folder: Path
    starttls: bool = False
    login: tuple[str, str] | None = None
    received: list[Received] = field(default_factory=list)
    refuse: set[str] = field(default_factory=set)
    port: int = 0
    controller: Controller | None = None
    cafile: Path | None = None

    def start(self) -> "Mailbox":
        self.port = self.port or free_port()
        kwargs = {}
        if self.starttls:
            cert, key = self_signed(self.folder)
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(cert, key)
            kwargs.update(tls_context=context, require_starttls=True)
            self.cafile = cert
        if self.login is not None:
            wanted = self.login

            def authenticate(server, session, envelope, mechanism, data):
                ok = isinstance(data, LoginPassword) and (data.login.decode(), data.password.decode()) == wanted
                return AuthResult(success=ok, auth_data=data.login.decode() if ok else None)

            kwargs.update(authenticator=authenticate, auth_require_tls=self.starttls)
        self.controller = Controller(_Handler(self), hostname="127.0.0.1", port=self.port, **kwargs)
        self.controller.start()
        return self

    def stop(self) -> None:
        if self.controller is not None:
            self.controller.stop()
            self.controller = None

    @property
    def url(self) -> str:
        user = f"{self.login[0]}:{self.login[1]}@" if self.login else ""
        query = f"?cafile={self.cafile}" if self.cafile else ""
        return f"smtp://{user}127.0.0.1:{self.port}{query}"

    def to(self, address: str) -> list[EmailMessage]:
        return [r.message for r in self.received if address in r.recipients]


def text_of(message: EmailMessage) -> str:
    return message.get_body(("plain",)).get_content()


def html_of(message: EmailMessage) -> str:
    return message.get_body(("html",)).get_content()


def link_in(message: EmailMessage) -> str:
    """The mailed link into an account (its path after the site's address)."""
    for word in text_of(message).split():
        if "/account/link/" in word:
            return word[word.index("/account/link/"):]
    raise AssertionError(f"no account link in: {text_of(message)}")


class Inbox:
    """What the tests' SMTP server received from now on (what was queued before is handed
    over and left out: a roster's "added" notice, say); every read hands over the mail
    queued so far first."""

    def __init__(self, box: Mailbox, deliver):
        self.box, self.deliver = box, deliver
        deliver()
        box.received.clear()

    def links(self, address: str, says: str = "") -> list[str]:
        """The account links mailed to ``address`` in mails that say ``says``, in the order
        they were handed over (the order of mails queued together is the queue's)."""
        self.deliver()
        return [link_in(m) for m in self.box.to(address) if "/account/link/" in text_of(m) and says in text_of(m)]

    def link(self, address: str, says: str = "") -> str:
        found = self.links(address, says)
        assert len(found) == 1, (address, says, found, self.recipients())
        return found[0]

    def mails(self, address: str) -> list:
        self.deliver()
        return self.box.to(address)

    def recipients(self) -> set[str]:
        self.deliver()
        return {a for r in self.box.received for a in r.recipients}

    def everything(self) -> str:
        """Every mail received, headers and all, as one text."""
        self.deliver()
        return "\n".join(r.message.as_string() for r in self.box.received)


def queued_mail(redis) -> list[list]:
    """The mail tasks waiting on the cpu queue (their arguments), taken off it."""
    kept, mail = [], []
    for raw in redis.lrange("cpu", 0, -1):
        message = json.loads(raw)
        if message["headers"]["task"] == "grader.mail.deliver":
            args, _kwargs, _embed = json.loads(base64.b64decode(message["body"]))
            mail.append(args)
        else:
            kept.append(raw)
    redis.delete("cpu")
    for raw in reversed(kept):
        redis.lpush("cpu", raw)
    return mail


def deliver_queued(redis, database_url: str, monkeypatch) -> int:
    """Run every queued mail task as a worker would (the task's own code, in this process,
    against the test's database); returns how many ran."""
    from grader.mail import tasks

    monkeypatch.setenv("GRADER_DATABASE_URL", database_url)
    ran = 0
    for args in queued_mail(redis):
        tasks.deliver.apply(args=args)
        ran += 1
    return ran
