"""The platforms' public keysets (JWKS), cached in Redis.

A launch is verified against the cached keyset of its platform registration; the
keyset is fetched again when the cache is older than CACHE_SECONDS, or when the
launch names a key (kid) the cached set lacks: the platform rotated its key. A kid
still missing from a fresh set is remembered for UNKNOWN_KID_SECONDS, so that
launches naming it do not make the tool fetch the keyset each time.
"""

from __future__ import annotations

import hashlib
import json
from typing import Callable

import redis as redis_py

CACHE_SECONDS = 3600
UNKNOWN_KID_SECONDS = 60
MAX_BYTES = 512 * 1024


class KeysetError(Exception):
    """The keyset could not be had: unreachable, or not a JWKS."""


def _name(platform_id: int, url: str) -> str:
    # keyed by the URL too: a registration given a new JWKS URL starts afresh
    return f"lti:jwks:{platform_id}:{hashlib.sha256(url.encode()).hexdigest()[:24]}"


def _kids(keyset: dict) -> set[str]:
    return {key.get("kid") for key in keyset.get("keys", []) if isinstance(key, dict)}


def parse(raw: bytes) -> dict:
    """A JWKS document: an object whose "keys" is a list of objects."""
    try:
        document = json.loads(raw)
    except ValueError:
        raise KeysetError("the keyset is not JSON") from None
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list) \
            or not all(isinstance(key, dict) for key in document["keys"]):
        raise KeysetError('the keyset is not a JWKS (an object with a list of "keys")')
    return {"keys": document["keys"]}


def key_set(client: redis_py.Redis, platform_id: int, url: str, kid: str,
            fetch: Callable[[str], bytes]) -> dict:
    """The keyset to verify a token signed with ``kid`` by: cached, or fetched with ``fetch``."""
    name = _name(platform_id, url)
    raw = client.get(name)
    cached = json.loads(raw) if raw is not None else None
    unknown = f"{name}:unknown:{hashlib.sha256(kid.encode()).hexdigest()[:24]}"
    if cached is not None and (kid in _kids(cached) or client.exists(unknown)):
        return cached
    fresh = parse(fetch(url))
    client.set(name, json.dumps(fresh), ex=CACHE_SECONDS)
    if kid not in _kids(fresh):
        client.set(unknown, "1", ex=UNKNOWN_KID_SECONDS)
    return fresh
