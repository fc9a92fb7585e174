"""The tool's RSA key pairs, kept in the database so that every web process and worker
signs with the same one. The JWKS lists the current key and the one before it: after a
rotation, platforms that cached the old key still verify what it signed."""

from __future__ import annotations

import json

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwcrypto.jwk import JWK
from sqlalchemy import select
from sqlalchemy.orm import Session

from grader.lti.models import LtiKey
from grader.lti.tool import KeyPair

PUBLISHED = 2  # keys in the JWKS: the current one and its predecessor


def public_jwk(public_pem: str) -> dict:
    jwk = json.loads(JWK.from_pem(public_pem.encode("ascii")).export_public())
    jwk.update(alg="RS256", use="sig", kid=jwk.get("kid") or JWK.from_pem(public_pem.encode("ascii")).thumbprint())
    return jwk


def generate(session: Session) -> LtiKey:
    """A new key pair, current from now on."""
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private_pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                        serialization.NoEncryption()).decode("ascii")
    public_pem = private.public_key().public_bytes(serialization.Encoding.PEM,
                                                   serialization.PublicFormat.SubjectPublicKeyInfo).decode("ascii")
    row = LtiKey(kid=JWK.from_pem(public_pem.encode("ascii")).thumbprint(), private_pem=private_pem,
                 public_pem=public_pem)
    session.add(row)
    session.flush()
    return row


def current(session: Session) -> LtiKey:
    """The key the tool signs with; made on first use."""
    row = session.scalars(select(LtiKey).order_by(LtiKey.created_at.desc(), LtiKey.id.desc()).limit(1)).first()
    return row or generate(session)


def current_pair(session: Session) -> KeyPair:
    """The current key as the tool's calls to a platform take it."""
    row = current(session)
    return KeyPair(kid=row.kid, private_pem=row.private_pem, public_pem=row.public_pem)


def jwks(session: Session) -> dict:
    rows = session.scalars(select(LtiKey).order_by(LtiKey.created_at.desc(), LtiKey.id.desc())
                           .limit(PUBLISHED)).all()
    if not rows:
        rows = [generate(session)]
    return {"keys": [public_jwk(row.public_pem) for row in rows]}


def rotate(session: Session) -> LtiKey:
    """Make a new current key; the previous one stays published until the next rotation
    (a first rotation makes the first key too, so that there is a previous one to publish)."""
    current(session)
    return generate(session)
