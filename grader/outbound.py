"""Every HTTP request the service makes to a URL someone else chose (webhooks, an LMS's
services) goes through ``session()``.

A URL is parsed once, here, and nothing else gets a say about where it points: userinfo
and backslashes (which parsers disagree on) are refused outright; the host is resolved
once; every address it resolves to must be public; and the connection goes to the address
that was checked, with the Host header and the TLS server name of the URL, so a second
lookup (DNS rebinding) has nothing to change. Redirects are never followed: a public
host could otherwise send the request on to an internal one.

GRADER_OUTBOUND_ALLOW_PRIVATE=1 (or the older GRADER_WEBHOOK_ALLOW_PRIVATE=1) allows
internal addresses, for a deployment whose LMS or receivers live on its own network, and
for the tests' receivers on 127.0.0.1. The parsing rules hold either way.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

import requests
from requests.adapters import HTTPAdapter
from requests.exceptions import InvalidURL

from grader.settings import settings

MAX_URL = 2000
DEFAULT_PORTS = {"http": 80, "https": 443}

# Forms that carry an IPv4 address inside an IPv6 one, or reach one through a relay: a
# public-looking IPv6 address that lands on 127.0.0.1 or 10.x is still internal.
_V4_INSIDE_V6 = {
    "IPv4-compatible": ipaddress.ip_network("::/96"),
    "NAT64": ipaddress.ip_network("64:ff9b::/96"),
    "local NAT64": ipaddress.ip_network("64:ff9b:1::/48"),
    "6to4": ipaddress.ip_network("2002::/16"),
    "Teredo": ipaddress.ip_network("2001::/32"),
}


class Refused(InvalidURL):
    """A URL the service will not call; the message says why (it is shown to whoever
    registered the URL). A requests exception, so a library that catches those treats
    it as the request failing."""


@dataclass(frozen=True)
class Target:
    """Where one request goes: the URL's parts and the address that was checked."""

    scheme: str
    host: str        # as in the URL, lower case, IDNA-encoded; IPv6 without brackets
    port: int
    address: str     # the checked address connected to
    host_header: str

    @property
    def server_name(self) -> str:
        return self.host


def allow_private() -> bool:
    return settings().outbound_allow_private


def parse(url) -> tuple[str, str, int, str]:
    """(scheme, host, port, Host header) of an absolute http(s) URL, or Refused."""
    if not isinstance(url, str) or len(url) > MAX_URL:
        raise Refused(f"the URL must be a string of at most {MAX_URL} characters")
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in url):
        raise Refused("the URL must not contain spaces or control characters")
    if "\\" in url:
        raise Refused("the URL must not contain a backslash")
    parts = urlsplit(url)
    if parts.scheme not in DEFAULT_PORTS or not parts.netloc:
        raise Refused("the URL must be an absolute http or https URL")
    if "@" in parts.netloc:
        raise Refused("the URL must not contain a user name or password")
    host = parts.hostname or ""
    if not host or "%" in host:
        raise Refused("the URL has no usable host")
    try:
        port = parts.port or DEFAULT_PORTS[parts.scheme]
    except ValueError:
        raise Refused("the URL's port is not a number from 1 to 65535") from None
    if port == 0:
        raise Refused("the URL's port is not a number from 1 to 65535")
    literal = _literal(host)
    if literal is None:
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            raise Refused(f"the host {host[:100]!r} is not a valid name") from None
    shown = f"[{host}]" if isinstance(literal, ipaddress.IPv6Address) else host
    host_header = shown if parts.port is None or port == DEFAULT_PORTS[parts.scheme] else f"{shown}:{port}"
    return parts.scheme, host, port, host_header


def _literal(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def internal(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """Why ``ip`` is not a public address, or None when it is."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return internal(ip.ipv4_mapped) or "an IPv4-mapped address"
        for name, network in _V4_INSIDE_V6.items():
            if ip in network:
                return f"a {name} address"
    if ip.is_loopback:
        return "a loopback address"
    if ip.is_link_local:
        return "a link-local address"
    if ip.is_multicast:
        return "a multicast address"
    if ip.is_unspecified or ip.is_reserved or ip.is_private or not ip.is_global:
        return "a private or reserved address"
    return None


def resolve(host: str, port: int) -> list[str]:
    """The addresses ``host`` has now, in the resolver's order (once per request)."""
    literal = _literal(host)
    if literal is not None:
        return [str(literal)]
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError, OSError):
        raise Refused(f"the host {host!r} does not resolve") from None
    addresses = []
    for info in infos:
        if info[0] in (socket.AF_INET, socket.AF_INET6) and info[4][0] not in addresses:
            addresses.append(info[4][0])
    if not addresses:
        raise Refused(f"the host {host!r} does not resolve")
    return addresses


def check(url, *, private: bool | None = None) -> Target:
    """Where a request to ``url`` would go, or Refused. Every address the host resolves
    to must be public (unless ``private``), not only the one used: an answer that mixes
    a public address with an internal one is a trick, not a configuration."""
    scheme, host, port, host_header = parse(url)
    private = allow_private() if private is None else private
    addresses = resolve(host, port)
    if not private:
        for address in addresses:
            why = internal(ipaddress.ip_address(address.split("%", 1)[0]))
            if why:
                raise Refused(f"the host {host!r} is an internal address ({address}: {why}); only public "
                              f"addresses are called "
                              f"(an operator may set GRADER_OUTBOUND_ALLOW_PRIVATE=1)")
    return Target(scheme=scheme, host=host, port=port, address=addresses[0], host_header=host_header)


def vet(url) -> str:
    """The URL, if it may be stored to call later (a webhook, say), else Refused. Where
    internal addresses are allowed the name need not resolve yet; every request checks
    again as it leaves."""
    if allow_private():
        parse(url)
    else:
        check(url, private=False)
    return url


class _PinnedAdapter(HTTPAdapter):
    """requests' adapter, connecting to the checked address instead of looking the host
    up again; TLS still names (and verifies) the URL's host."""

    def __init__(self, target: Target):
        self.target = target
        super().__init__(max_retries=0)

    def get_connection_with_tls_context(self, request, verify, proxies=None, cert=None):
        host_params, pool_kwargs = self.build_connection_pool_key_attributes(request, verify, cert)
        host_params = {**host_params, "host": self.target.address, "port": self.target.port}
        if self.target.scheme == "https":
            pool_kwargs = {**pool_kwargs, "server_hostname": self.target.server_name,
                           "assert_hostname": self.target.server_name}
        return self.poolmanager.connection_from_host(**host_params, pool_kwargs=pool_kwargs)


class Session(requests.Session):
    """A requests session whose every request is checked and pinned (see the module's
    text), with a timeout on each, no redirects and no proxies from the environment."""

    def __init__(self, timeout: float, *, user_agent: str = "autograd-grader", private: bool | None = None):
        super().__init__()
        self.timeout, self.private = timeout, private
        self.trust_env = False  # a proxy from the environment would do the connecting instead
        self.max_redirects = 0
        self.headers["User-Agent"] = user_agent

    def request(self, method, url, *args, **kwargs):
        # The URL as given is the one checked: requests rewrites it while preparing (a
        # backslash becomes a slash, for one), so checking only its version would check
        # a different URL from the one a caller stored.
        self._target = check(url, private=self.private)
        kwargs.setdefault("timeout", self.timeout)
        kwargs["allow_redirects"] = False
        try:
            return super().request(method, url, *args, **kwargs)
        finally:
            self._target = None

    def send(self, request, **kwargs):
        target = getattr(self, "_target", None) or check(request.url, private=self.private)
        _, host, port, _ = parse(request.url)
        if (host, port) != (target.host, target.port):
            raise Refused(f"the URL names {target.host}:{target.port} but would be sent to {host}:{port}")
        request.headers["Host"] = target.host_header
        adapter = _PinnedAdapter(target)
        stream = kwargs.get("stream", False)
        try:
            response = adapter.send(request, **{k: v for k, v in kwargs.items()
                                                if k in ("stream", "timeout", "verify", "cert")})
            if not stream:
                response.content  # read it all before the adapter's pool is closed
        finally:
            if not stream:
                adapter.close()
        return response


def session(timeout: float | None = None, *, user_agent: str = "autograd-grader") -> Session:
    return Session(settings().http_timeout_s if timeout is None else timeout, user_agent=user_agent)
