"""The one hardened outbound HTTP client of Cairn.

Every outbound call (source connectors, the optional live fetcher, OpenAI-compatible model endpoints)
goes through this module so that SSRF protection, timeouts, size caps, retry behaviour and secret
redaction are decided in exactly one place.

Layers of defence, in the order a request meets them:

1. URL checks (``validate_url``): only http/https, no userinfo, no ambiguous numeric IPv4 spellings
   (``0x7f000001``, ``2130706433``, ``017700000001``), and every address the host resolves to must be
   public unless the operator explicitly allowed that host (``allowed_hosts``) or the session was built
   with ``allow_private=True``.
2. Peer check: after the TCP connect, the socket's real peer address is checked again, because the
   resolver used for step 1 and the one urllib3 uses to connect may answer differently (DNS rebinding).
3. Redirects are never followed by requests itself; ``HardenedSession.follow_redirects`` re-runs the
   checks on every hop and refuses https->http downgrades and hops to hosts that were not allowed.
4. Responses are read through a byte-counting wrapper so the size cap holds for ``.content``,
   ``iter_content`` and ``raw.read`` alike, and also for decompressed bodies.

Errors raised here never carry query strings, userinfo or tokens: they go to logs and task results.

Not covered: HTTP proxies are not supported (``trust_env`` is off and the peer check would see the
proxy, not the origin), and bodies passed as one-shot iterators cannot be re-sent by the retry helper.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import email.utils
import hashlib
import ipaddress
import random
import re
import socket
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, NamedTuple
from urllib.parse import SplitResult, unquote, urljoin, urlsplit, urlunsplit

import requests
import urllib3
from requests.adapters import HTTPAdapter
from requests.models import PreparedRequest, Response
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

__all__ = [
    "BlockedDestination",
    "Destination",
    "FetchResult",
    "FetchTimeout",
    "HardenedSession",
    "OutboundHTTPError",
    "RateLimited",
    "ResponseTooLarge",
    "SafeFetcher",
    "UnsupportedContentType",
    "backoff_delay",
    "build_session",
    "is_blocked_address",
    "parse_retry_after",
    "redact",
    "redact_url",
    "request_with_retries",
    "validate_url",
    "OperatorEndpoints",
    "admin_url_session",
    "check_admin_url",
    "operator_endpoints",
    "origin_of",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
# A resolver maps (host, port) to the IP address strings the host resolves to. Injectable so tests
# (and callers with their own DNS policy) never need real DNS.
Resolver = Callable[[str, int], Iterable[str]]

DEFAULT_PORTS = {"http": 80, "https": 443}
ALLOWED_SCHEMES = frozenset(DEFAULT_PORTS)
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
# Read granularity for capped bodies: small enough that the cap is overshot by at most one chunk
# in memory, large enough not to cost throughput.
_CHUNK = 64 * 1024


# --------------------------------------------------------------------------------------------------
# Redaction
# --------------------------------------------------------------------------------------------------

_REDACTED = "[REDACTED]"
# Parameter names whose values are secrets whether they appear in a query string, a form body or JSON.
_SECRET_KEYS = (
    r"client_secret|client_assertion|access_token|refresh_token|id_token|api[_-]?key|password|passwd"
    r"|secret|token|sig|signature|x-amz-signature|x-amz-credential|x-amz-security-token"
)
_REDACTIONS: tuple[tuple[re.Pattern[str], str], ...] = (
    # Bearer tokens anywhere (log lines, exception text), before the header rule below.
    (re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9\-._~+/]+=*"), r"\1" + _REDACTED),
    # Authorization / Proxy-Authorization header values, as "Name: value" lines or dict reprs; the
    # optional leading word is the auth scheme, so "Basic abc" disappears whole, not just "abc".
    (
        re.compile(r"(?i)((?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?)(?:[a-z][\w.-]*[ \t]+)?[^\s\"',}]+"),
        r"\1" + _REDACTED,
    ),
    # Slack bot/user/app/refresh/config tokens.
    (re.compile(r"\bxox[abeoprs]-[A-Za-z0-9-]+"), _REDACTED),
    (re.compile(r"\bxapp-[A-Za-z0-9-]+"), _REDACTED),
    # Slack incoming-webhook URLs carry their secret in the path.
    (re.compile(r"(?i)(hooks\.slack\.com/services/)[A-Za-z0-9/_-]+"), r"\1" + _REDACTED),
    # key=value in query strings and form bodies.
    (re.compile(rf"(?i)\b({_SECRET_KEYS})=[^&\s#\"']*"), r"\1=" + _REDACTED),
    # "key": "value" in JSON.
    (re.compile(rf"(?i)([\"'](?:{_SECRET_KEYS})[\"']\s*:\s*[\"'])[^\"']*"), r"\1" + _REDACTED),
    # URL userinfo; greedy up to the last '@' of the authority, as URL parsers split it.
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s?#]*@"), r"\1" + _REDACTED + "@"),
)


def redact(text: str) -> str:
    """Remove bearer tokens, Slack tokens, Authorization values, secret parameters and URL userinfo."""
    for pattern, replacement in _REDACTIONS:
        text = pattern.sub(replacement, text)
    return text


def redact_url(url: str) -> str:
    """A URL safe for logs and error messages: no userinfo, no query string, no fragment."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        port = parts.port
    except ValueError:
        return "<unparseable URL>"
    netloc = f"{host}:{port}" if port is not None else host
    query = _REDACTED if parts.query else ""
    return redact(urlunsplit((parts.scheme, netloc, parts.path, query, "")))


# --------------------------------------------------------------------------------------------------
# Exceptions
# --------------------------------------------------------------------------------------------------


def _rebuild_error(cls: type[OutboundHTTPError], args: tuple[Any, ...], state: dict[str, Any]) -> Any:
    err = cls.__new__(cls)
    Exception.__init__(err, *args)
    err.__dict__.update(state)
    return err


class OutboundHTTPError(Exception):
    """Base of every refusal made by this module.

    Deliberately *not* a ``requests.RequestException``: that is an ``OSError``, and urllib3 would catch
    and wrap an ``OSError`` raised from inside a connection, hiding the refusal behind a retryable
    connection error.
    """

    def __init__(self, message: str, *, url: str | None = None) -> None:
        # Only the redacted URL is kept on the object: error trackers serialise exception attributes.
        self.url = redact_url(url) if url else None
        text = redact(message)
        if self.url:
            text = f"{text} [{self.url}]"
        super().__init__(text)

    def __reduce__(self) -> tuple[Any, ...]:
        # Keyword-only constructor arguments break default exception pickling, and Celery pickles
        # exceptions raised by tasks (RateLimited in particular travels back to the scheduler).
        return (_rebuild_error, (type(self), self.args, dict(self.__dict__)))


class BlockedDestination(OutboundHTTPError):
    """The URL, a redirect hop or the connected peer is not an allowed destination."""


class ResponseTooLarge(OutboundHTTPError):
    """The response body exceeded the configured byte limit."""

    def __init__(self, limit: int, *, url: str | None = None) -> None:
        self.limit = limit
        super().__init__(f"response body exceeds {limit} bytes", url=url)


class RateLimited(OutboundHTTPError):
    """The source is throttling us for longer than the caller is willing to block.

    ``retry_after`` is the number of seconds after which the caller (typically a Celery task via
    ``self.retry(countdown=...)``) should try again.
    """

    def __init__(
        self,
        retry_after: float,
        *,
        url: str | None = None,
        status: int | None = None,
        message: str | None = None,
    ) -> None:
        self.retry_after = float(retry_after)
        self.status = status
        detail = message or f"rate limited (status {status}); retry after {self.retry_after:.1f}s"
        super().__init__(detail, url=url)


class UnsupportedContentType(OutboundHTTPError):
    """The live fetcher received a content type outside its allow-list."""


class FetchTimeout(OutboundHTTPError):
    """The live fetch exceeded its total time budget (slow-drip servers defeat read timeouts)."""


# --------------------------------------------------------------------------------------------------
# Address validation
# --------------------------------------------------------------------------------------------------

_CGNAT = ipaddress.IPv4Network("100.64.0.0/10")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")
# One inet_aton(3) component: hex with 0x, octal with a leading 0, or decimal.
_INET_ATON_PART = re.compile(r"^(0x[0-9a-f]*|[0-9]+)$")


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address tunnels to, for the encodings that route to it."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip in _NAT64 or (ip in _IPV4_COMPATIBLE and int(ip) > 1):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    return None


def _is_special(ip: IPAddress) -> bool:
    # is_global alone is not enough: multicast counts as global in the ipaddress module.
    if (
        ip.is_loopback
        or ip.is_private
        or ip.is_link_local
        or ip.is_multicast
        or ip.is_reserved
        or ip.is_unspecified
        or not ip.is_global
    ):
        return True
    if isinstance(ip, ipaddress.IPv4Address):
        return ip in _CGNAT
    return ip.is_site_local


def is_blocked_address(address: str | IPAddress, *, allow_loopback: bool = False) -> bool:
    """True if ``address`` must not be contacted: anything that is not a public unicast address.

    Covers loopback, RFC 1918, link-local (incl. 169.254.169.254 and fe80::/10), unique-local fc00::/7,
    unspecified, multicast, reserved, CGNAT 100.64/10, and IPv6 encodings that embed such an IPv4
    address (mapped, NAT64, 6to4, Teredo). ``allow_loopback`` exempts only loopback, for tests.
    """
    if isinstance(address, str):
        try:
            ip: IPAddress = ipaddress.ip_address(address.split("%", 1)[0])
        except ValueError:
            return True  # not an address at all: never treat as safe
    else:
        ip = address
    candidates: list[IPAddress] = [ip]
    if isinstance(ip, ipaddress.IPv6Address):
        inner = _embedded_ipv4(ip)
        if inner is not None:
            # A mapped/compatible address *is* its IPv4 address; judge that one only (the IPv6 form
            # is "reserved" in the ipaddress module, which would wrongly block mapped public IPs).
            if ip.ipv4_mapped is not None or ip in _NAT64 or ip in _IPV4_COMPATIBLE:
                candidates = [inner]
            else:
                candidates.append(inner)
    for candidate in candidates:
        if allow_loopback and candidate.is_loopback:
            continue
        if _is_special(candidate):
            return True
    return False


def _parse_inet_aton(host: str) -> ipaddress.IPv4Address | None:
    """Parse ``host`` the way inet_aton(3) (and so getaddrinfo) does, or None if it is not numeric.

    Needed because ``0x7f000001``, ``2130706433``, ``017700000001`` and ``127.1`` all connect to
    127.0.0.1 yet are not recognised by ``ipaddress``.
    """
    parts = host.split(".")
    if not 1 <= len(parts) <= 4 or not all(_INET_ATON_PART.match(p) for p in parts):
        return None
    values: list[int] = []
    for part in parts:
        if part.startswith("0x"):
            values.append(int(part[2:] or "0", 16))
        elif len(part) > 1 and part.startswith("0"):
            if any(c in "89" for c in part):
                return None
            values.append(int(part, 8))
        else:
            values.append(int(part))
    *head, last = values
    if any(v > 255 for v in head) or last >= 256 ** (4 - len(head)):
        return None
    number = 0
    for v in head:
        number = number * 256 + v
    number = (number << (8 * (4 - len(head)))) | last
    return ipaddress.IPv4Address(number)


def _default_resolver(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


class Destination(NamedTuple):
    scheme: str
    host: str
    port: int
    addresses: tuple[str, ...]  # empty when the host was exempt and therefore not resolved


def _host_port_key(entry: str) -> tuple[str, int | None]:
    text = entry.strip().lower()
    parts = urlsplit(text if "://" in text else f"//{text}")
    if not parts.hostname:
        raise ValueError(f"invalid allowed host entry: {entry!r}")
    return parts.hostname.rstrip("."), parts.port


@dataclasses.dataclass(frozen=True)
class _Policy:
    allowed_hosts: frozenset[tuple[str, int | None]] = frozenset()
    allow_private: bool = False
    allow_loopback: bool = False
    resolver: Resolver | None = None
    # Admin-supplied URLs: plain http only to an operator-approved host:port (in allowed_hosts).
    https_only: bool = False

    @classmethod
    def build(
        cls,
        allowed_hosts: Iterable[str] = (),
        *,
        allow_private: bool = False,
        allow_loopback: bool = False,
        resolver: Resolver | None = None,
        https_only: bool = False,
    ) -> _Policy:
        if isinstance(allowed_hosts, str):
            raise TypeError("allowed_hosts must be an iterable of host names, not a string")
        keys = frozenset(_host_port_key(h) for h in allowed_hosts)
        return cls(keys, allow_private, allow_loopback, resolver, https_only)

    def host_allowed(self, host: str, port: int) -> bool:
        host = host.lower().strip("[]").rstrip(".")
        return (host, None) in self.allowed_hosts or (host, port) in self.allowed_hosts

    def exempt(self, host: str, port: int) -> bool:
        return self.allow_private or self.host_allowed(host, port)

    def check_url(self, url: str) -> Destination:
        scheme, host, port, literal = _parse_target(url)
        if self.https_only and scheme != "https" and not self.host_allowed(host, port):
            raise BlockedDestination("only https URLs are allowed", url=url)
        if self.exempt(host, port):
            return Destination(scheme, host, port, ())
        if literal is not None:
            if is_blocked_address(literal, allow_loopback=self.allow_loopback):
                raise BlockedDestination(f"address {literal} is not a public address", url=url)
            return Destination(scheme, host, port, (str(literal),))
        resolver = self.resolver or _default_resolver
        try:
            addresses = tuple(resolver(host, port))
        except OSError as exc:
            # Surface as a connection error: it is as transient as the connect that would follow.
            raise requests.exceptions.ConnectionError(f"cannot resolve {host}: {exc}") from None
        if not addresses:
            raise requests.exceptions.ConnectionError(f"cannot resolve {host}: no addresses")
        # ANY bad address blocks: the connect may pick any of them (and attackers choose the order).
        for address in addresses:
            if is_blocked_address(address, allow_loopback=self.allow_loopback):
                raise BlockedDestination(f"{host} resolves to non-public address {address}", url=url)
        return Destination(scheme, host, port, addresses)

    def check_peer(self, host: str, port: int, peer_address: str) -> None:
        if self.exempt(host, port):
            return
        if is_blocked_address(peer_address, allow_loopback=self.allow_loopback):
            raise BlockedDestination(
                f"connected peer {peer_address} for {host} is not a public address (DNS rebinding?)"
            )


def _parse_target(url: str) -> tuple[str, str, int, IPAddress | None]:
    """Scheme, host, port and (if the host is an IP literal) the address; refuses malformed URLs."""
    try:
        parts: SplitResult = urlsplit(url)
        port = parts.port
    except ValueError:
        raise BlockedDestination("malformed URL", url=url) from None
    scheme = parts.scheme.lower()
    if scheme not in ALLOWED_SCHEMES:
        raise BlockedDestination(f"scheme {scheme or '(none)'!r} is not allowed", url=url)
    # Credentials in URLs end up in logs, Referer headers and proxies; connectors use headers instead.
    if "@" in parts.netloc or parts.username is not None or parts.password is not None:
        raise BlockedDestination("credentials in URLs are not allowed", url=url)
    host = (parts.hostname or "").rstrip(".")
    if not host or "\\" in parts.netloc:
        raise BlockedDestination("URL has no valid host", url=url)
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            raise BlockedDestination("URL host is not a valid domain name", url=url) from None
    port = port if port is not None else DEFAULT_PORTS[scheme]
    literal: IPAddress | None
    try:
        literal = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        literal = _parse_inet_aton(host)
        if literal is not None:
            # Hex/octal/integer/short IPv4 spellings only exist to dodge filters; nothing legitimate
            # uses them, so refuse even for exempt hosts rather than reason about what they mean.
            raise BlockedDestination(f"ambiguous numeric host (means {literal})", url=url) from None
    return scheme, host, port, literal


def validate_url(
    url: str,
    *,
    allowed_hosts: Iterable[str] = (),
    allow_private: bool = False,
    allow_loopback: bool = False,
    resolver: Resolver | None = None,
) -> Destination:
    """Refuse (``BlockedDestination``) any URL this client must not contact; return where it goes.

    IP literals are judged without resolving; host names are resolved with ``resolver`` (default
    ``socket.getaddrinfo``) and refused if any address is non-public. Hosts in ``allowed_hosts``
    (``"host"`` or ``"host:port"``) and everything under ``allow_private`` skip the address checks but
    never the scheme/userinfo checks.
    """
    policy = _Policy.build(allowed_hosts, allow_private=allow_private, allow_loopback=allow_loopback, resolver=resolver)
    return policy.check_url(url)


# --------------------------------------------------------------------------------------------------
# Transport: peer check on connect, size cap on read
# --------------------------------------------------------------------------------------------------


class _PeerCheckMixin:
    """Checks the address the socket actually connected to, closing the DNS-rebinding window."""

    _cairn_policy: _Policy
    host: str
    port: int

    def _new_conn(self) -> socket.socket:
        sock: socket.socket = super()._new_conn()  # type: ignore[misc]
        try:
            peer = sock.getpeername()
            self._cairn_policy.check_peer(self.host, self.port, str(peer[0]))
        except BaseException:
            sock.close()
            raise
        return sock


def _guarded_pool_classes(policy: _Policy) -> dict[str, type[HTTPConnectionPool]]:
    # Classes are built per policy because urllib3 instantiates connections itself and pool-manager
    # keyword arguments cannot carry arbitrary objects through its pool keys.
    http_conn = type("GuardedHTTPConnection", (_PeerCheckMixin, HTTPConnection), {"_cairn_policy": policy})
    https_conn = type("GuardedHTTPSConnection", (_PeerCheckMixin, HTTPSConnection), {"_cairn_policy": policy})
    return {
        "http": type("GuardedHTTPConnectionPool", (HTTPConnectionPool,), {"ConnectionCls": http_conn}),
        "https": type("GuardedHTTPSConnectionPool", (HTTPSConnectionPool,), {"ConnectionCls": https_conn}),
    }


class _CappedRaw:
    """Wraps urllib3's response so every read path counts decoded bytes against the cap."""

    def __init__(self, raw: Any, limit: int, url: str) -> None:
        self._raw = raw
        self._limit = limit
        self._url = url
        self._seen = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)

    def _count(self, chunk: bytes) -> bytes:
        self._seen += len(chunk)
        if self._seen > self._limit:
            self._raw.close()
            raise ResponseTooLarge(self._limit, url=self._url)
        return chunk

    def stream(self, amt: int | None = _CHUNK, decode_content: bool | None = None) -> Iterator[bytes]:
        # amt=None would make urllib3 read the whole body in one go before we could count it.
        amt = _CHUNK if amt is None or amt > _CHUNK else amt
        for chunk in self._raw.stream(amt, decode_content=decode_content):
            yield self._count(chunk)

    def read1(self, amt: int | None = _CHUNK, decode_content: bool | None = None) -> bytes:
        amt = _CHUNK if amt is None or amt > _CHUNK else amt
        return self._count(self._raw.read1(amt, decode_content=decode_content))

    def read(self, amt: int | None = None, *args: Any, **kwargs: Any) -> bytes:
        if amt is not None:
            return self._count(self._raw.read(amt, *args, **kwargs))
        chunks = []
        while chunk := self._raw.read(_CHUNK, *args, **kwargs):
            chunks.append(self._count(chunk))
        return b"".join(chunks)


def _complete_timeout(timeout: Any, default: tuple[float, float]) -> Any:
    # None (or a None component) would mean "wait forever" in requests; never allow that.
    if timeout is None:
        return default
    if isinstance(timeout, tuple):
        connect, read = timeout
        return (default[0] if connect is None else connect, default[1] if read is None else read)
    return timeout


class _GuardedAdapter(HTTPAdapter):
    """The single choke point: validates the destination, defaults timeouts, caps response bodies."""

    def __init__(self, policy: _Policy, *, timeout: tuple[float, float], max_response_bytes: int) -> None:
        self._policy = policy
        self._default_timeout = timeout
        self._max_response_bytes = max_response_bytes
        super().__init__(max_retries=0)  # retries are request_with_retries' job, with its budget

    def init_poolmanager(self, connections: int, maxsize: int, block: bool = False, **kw: Any) -> None:
        super().init_poolmanager(connections, maxsize, block=block, **kw)
        self.poolmanager.pool_classes_by_scheme = _guarded_pool_classes(self._policy)

    def send(  # type: ignore[override]
        self,
        request: PreparedRequest,
        stream: bool = False,
        timeout: Any = None,
        verify: Any = True,
        cert: Any = None,
        proxies: Any = None,
    ) -> Response:
        if proxies and any(proxies.values()):
            # Through a proxy the peer check would only see the proxy; refuse rather than pretend.
            raise BlockedDestination("proxies are not supported by the hardened client", url=request.url)
        self._policy.check_url(request.url or "")
        return super().send(
            request,
            stream=stream,
            timeout=_complete_timeout(timeout, self._default_timeout),
            verify=verify,
            cert=cert,
            proxies=None,
        )

    def build_response(self, req: PreparedRequest, resp: Any) -> Response:
        response = super().build_response(req, resp)
        declared = response.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > self._max_response_bytes:
            # Refuse before reading a byte when the server announces an oversize body.
            resp.close()
            raise ResponseTooLarge(self._max_response_bytes, url=req.url)
        response.raw = _CappedRaw(resp, self._max_response_bytes, req.url or "")
        return response


# --------------------------------------------------------------------------------------------------
# Session
# --------------------------------------------------------------------------------------------------


class HardenedSession(requests.Session):
    """A ``requests.Session`` that cannot be pointed at internal addresses by accident or by attacker.

    Differences from ``requests.Session``: redirects are off unless ``follow_redirects=True``; every
    request has a timeout; bodies are size-capped; environment proxies and ``.netrc`` are ignored.
    """

    def __init__(
        self,
        *,
        allowed_hosts: Iterable[str] = (),
        allow_private: bool = False,
        timeout: tuple[float, float] = (5.0, 30.0),
        max_response_bytes: int = 50_000_000,
        user_agent: str = "Cairn/1.0",
        resolver: Resolver | None = None,
        allow_loopback: bool = False,
        https_only: bool = False,
    ) -> None:
        super().__init__()
        self.policy = _Policy.build(
            allowed_hosts,
            allow_private=allow_private,
            allow_loopback=allow_loopback,
            resolver=resolver,
            https_only=https_only,
        )
        self.default_timeout = timeout
        self.max_response_bytes = max_response_bytes
        # Environment proxies would bypass the peer check and .netrc would attach credentials to
        # hosts we never meant to authenticate against.
        self.trust_env = False
        self.headers["User-Agent"] = user_agent
        adapter = _GuardedAdapter(self.policy, timeout=timeout, max_response_bytes=max_response_bytes)
        # Replacing the default mounts also means no unguarded adapter is left for any URL prefix.
        self.adapters.clear()
        self.mount("https://", adapter)
        self.mount("http://", adapter)

    def request(  # type: ignore[override]
        self,
        method: str,
        url: str,
        *,
        follow_redirects: bool = False,
        max_redirects: int = 3,
        **kwargs: Any,
    ) -> Response:
        # requests' own redirect handling re-sends credentials and does not re-validate hops, so it is
        # never used; Session.get() passes allow_redirects=True implicitly, hence it is dropped here.
        kwargs.pop("allow_redirects", None)
        kwargs["timeout"] = _complete_timeout(kwargs.get("timeout"), self.default_timeout)
        response = super().request(method, url, allow_redirects=False, **kwargs)
        if not follow_redirects:
            return response
        send_kwargs = {k: kwargs[k] for k in ("timeout", "stream", "verify", "cert") if k in kwargs}
        return self.follow_redirects(response, max_redirects=max_redirects, **send_kwargs)

    def send(self, request: PreparedRequest, **kwargs: Any) -> Response:
        kwargs["allow_redirects"] = False
        kwargs["timeout"] = _complete_timeout(kwargs.get("timeout"), self.default_timeout)
        return super().send(request, **kwargs)

    # requests annotates a Generator; this returns an empty plain iterator, which is all requests consumes.
    def resolve_redirects(self, *args: Any, **kwargs: Any) -> Iterator[Any]:  # type: ignore[override]
        # Disabled: requests calls this even with allow_redirects=False (to precompute Response.next),
        # and it would read redirect bodies and build unvalidated follow-up requests.
        return iter(())

    def follow_redirects(self, response: Response, max_redirects: int = 3, **send_kwargs: Any) -> Response:
        """Follow ``response``'s redirect chain, re-validating every hop before connecting.

        Refuses https->http downgrades, hops to hosts other than the original one unless they are in
        ``allowed_hosts``, and anything ``validate_url`` refuses. Authorization and Cookie headers are
        dropped when the host changes.
        """
        history: list[Response] = []
        origin = urlsplit(response.url)
        origin_host = (origin.hostname or "").rstrip(".")
        while response.is_redirect:
            if len(history) >= max_redirects:
                response.close()
                raise BlockedDestination(f"more than {max_redirects} redirects", url=response.url)
            previous = response.url
            target = urljoin(previous, response.headers["location"])
            response.close()
            _check_hop(previous, target)
            _scheme, host, port, _literal = _parse_target(target)
            # Host check first: a hop to a foreign host is refused without even resolving it.
            host_changed = host != origin_host
            if host_changed and not self.policy.host_allowed(host, port):
                raise BlockedDestination("redirect to another host is not allowed", url=target)
            self.policy.check_url(target)
            request = _next_request(response, target, strip_credentials=host_changed)
            history.append(response)
            response = self.send(request, **send_kwargs)
        response.history = history
        return response


def _check_hop(previous: str, target: str) -> None:
    if urlsplit(previous).scheme.lower() == "https" and urlsplit(target).scheme.lower() != "https":
        raise BlockedDestination("redirect downgrades https to a weaker scheme", url=target)


def _next_request(response: Response, target: str, *, strip_credentials: bool) -> PreparedRequest:
    original = response.request
    request = original.copy()
    request.prepare_url(target, None)
    # Browser-compatible method rewriting: 303 always, 301/302 for POST, become a bodiless GET.
    status = response.status_code
    if (status == 303 and request.method != "HEAD") or (status in (301, 302) and request.method == "POST"):
        request.method = "GET"
        request.body = None
        for header in ("Content-Length", "Content-Type", "Transfer-Encoding"):
            request.headers.pop(header, None)
    if strip_credentials:
        for header in ("Authorization", "Proxy-Authorization", "Cookie"):
            request.headers.pop(header, None)
    return request


def build_session(
    *,
    allowed_hosts: Iterable[str] = (),
    allow_private: bool = False,
    timeout: tuple[float, float] = (5.0, 30.0),
    max_response_bytes: int = 50_000_000,
    user_agent: str = "Cairn/1.0",
    resolver: Resolver | None = None,
    https_only: bool = False,
) -> HardenedSession:
    """The session every connector and model client must use for outbound HTTP."""
    return HardenedSession(
        allowed_hosts=allowed_hosts,
        allow_private=allow_private,
        timeout=timeout,
        max_response_bytes=max_response_bytes,
        user_agent=user_agent,
        resolver=resolver,
        https_only=https_only,
    )


# --------------------------------------------------------------------------------------------------
# Admin-supplied URLs (LLM endpoint, judge, freshness feeds, connector base URLs)
# --------------------------------------------------------------------------------------------------

Origin = tuple[str, str, int]  # (scheme, host, port), as an operator approves it


def origin_of(url: str) -> Origin:
    """``(scheme, host, port)`` of ``url`` with the default port filled in; refuses malformed URLs."""
    scheme, host, port, _literal = _parse_target(url)
    return scheme, host.lower(), port


class OperatorEndpoints:
    """The exact origins the *operator* lets admin-supplied URLs reach although they are private.

    Entries are ``scheme://host:port`` (the port is mandatory: an approval of ``vllm.corp`` must not
    cover every service on that machine). Only settings and the environment build this; nothing a
    tenant admin can write reaches it.
    """

    def __init__(self, entries: Iterable[str] = ()) -> None:
        if isinstance(entries, str):
            raise TypeError("operator endpoints must be an iterable of URLs, not a string")
        origins: set[Origin] = set()
        for entry in entries:
            text = entry.strip()
            if not text:
                continue
            try:
                explicit_port = urlsplit(text).port
            except ValueError:
                explicit_port = None
            if explicit_port is None or "://" not in text:
                raise ValueError(f"operator endpoint must be scheme://host:port: {redact_url(text)}")
            origins.add(origin_of(text))
        self.origins: frozenset[Origin] = frozenset(origins)

    def __contains__(self, origin: object) -> bool:
        return origin in self.origins


def operator_endpoints() -> OperatorEndpoints:
    """``settings.CAIRN["OPERATOR_PRIVATE_ENDPOINTS"]`` (env ``CAIRN_OPERATOR_PRIVATE_ENDPOINTS``)."""
    from django.conf import settings

    return OperatorEndpoints(settings.CAIRN.get("OPERATOR_PRIVATE_ENDPOINTS", ()))


def _is_localhost_name(host: str) -> bool:
    host = host.lower().rstrip(".")
    return host == "localhost" or host.endswith(".localhost")


def check_admin_url(
    url: str,
    *,
    endpoints: OperatorEndpoints | None = None,
    resolve: bool = True,
    resolver: Resolver | None = None,
) -> Destination:
    """The full outbound policy for a URL a tenant admin typed; ``BlockedDestination`` if refused.

    https only; no userinfo; no loopback, private, link-local, CGNAT, metadata or IPv6-mapped
    addresses (IP literals judged at once, names resolved when ``resolve``; the connect re-checks the
    peer either way). The one exemption is an origin the operator approved, matched on scheme, host
    and port together.
    """
    scheme, host, port = origin_of(url)
    if endpoints is not None and (scheme, host, port) in endpoints:
        return Destination(scheme, host, port, ())
    if scheme != "https":
        raise BlockedDestination("only https URLs are allowed", url=url)
    if _is_localhost_name(host):
        raise BlockedDestination("localhost is not a public host", url=url)
    policy = _Policy.build(resolver=resolver, https_only=True)
    if not resolve:
        _s, _h, _p, literal = _parse_target(url)
        if literal is not None and is_blocked_address(literal):
            raise BlockedDestination(f"address {literal} is not a public address", url=url)
        return Destination(scheme, host, port, ())
    return policy.check_url(url)


def admin_url_session(
    url: str,
    *,
    endpoints: OperatorEndpoints | None = None,
    timeout: tuple[float, float] = (5.0, 30.0),
    max_response_bytes: int = 50_000_000,
    user_agent: str = "Cairn/1.0",
    resolver: Resolver | None = None,
) -> HardenedSession:
    """A session for an admin-supplied URL: the full policy, exempting only an operator-approved origin.

    Nothing derived from ``url`` itself is ever added to the exemptions (the old writer did that, which
    let a tenant admin point it at 127.0.0.1). Raises ``BlockedDestination`` before any connect.
    """
    endpoints = endpoints if endpoints is not None else OperatorEndpoints()
    check_admin_url(url, endpoints=endpoints, resolve=False, resolver=resolver)
    scheme, host, port = origin_of(url)
    approved = (scheme, host, port) in endpoints
    literal_host = f"[{host}]" if ":" in host else host
    return HardenedSession(
        allowed_hosts=[f"{literal_host}:{port}"] if approved else [],
        timeout=timeout,
        max_response_bytes=max_response_bytes,
        user_agent=user_agent,
        resolver=resolver,
        https_only=True,
    )


# --------------------------------------------------------------------------------------------------
# Retries
# --------------------------------------------------------------------------------------------------

_SECONDS = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*$")


def parse_retry_after(value: str | None, *, now: float | dt.datetime | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` value (integer, fractional, or HTTP-date); None if unusable.

    The one parser every client uses (Graph, Confluence, Slack, the writer endpoints). RFC 9110 §10.2.3:
    delay-seconds is a non-negative number, so a negative or non-numeric value is no hint at all (None)
    and the caller falls back to its own backoff. ``now``: epoch seconds or an aware datetime.
    """
    if not value:
        return None
    match = _SECONDS.match(value)
    if match:
        return float(match.group(1))
    try:
        when = email.utils.parsedate_to_datetime(value.strip())
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)  # HTTP-dates are GMT by definition
    if isinstance(now, dt.datetime):
        current = now.timestamp()
    else:
        current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


def backoff_delay(
    attempt: int, rng: Callable[[], float] = random.random, *, base: float = 0.5, cap: float = 30.0
) -> float:
    """Full-jitter exponential backoff: uniform in [0, min(cap, base * 2**(attempt-1)))."""
    exponent = min(max(attempt - 1, 0), 32)  # bounded so huge attempt numbers cannot overflow floats
    return rng() * min(cap, base * (2**exponent))


def request_with_retries(
    session: requests.Session,
    method: str,
    url: str,
    *,
    max_attempts: int = 5,
    max_total_wait: float = 60.0,
    retry_statuses: Sequence[int] = (429, 503),
    sleep: Callable[[float], Any] = time.sleep,
    rng: Callable[[], float] = random.random,
    clock: Callable[[], float] = time.time,
    **kw: Any,
) -> requests.Response:
    """Send a request, retrying throttling responses and (for idempotent methods) connection failures.

    Waits honour ``Retry-After``; otherwise full-jitter backoff. When a wait would push the total past
    ``max_total_wait``, or attempts run out on a throttling status, raises ``RateLimited`` carrying
    the server's wait so a Celery task can reschedule itself rather than hold a worker (one throttled
    source must never starve the others).
    """
    if max_attempts < 1:
        raise ValueError("max_attempts must be at least 1")
    idempotent = method.upper() in IDEMPOTENT_METHODS
    waited = 0.0
    attempt = 0
    while True:
        attempt += 1
        try:
            response = session.request(method, url, **kw)
        except (requests.exceptions.ConnectionError, requests.exceptions.Timeout) as exc:
            # A POST may have reached the server before the connection died: never replay it. TLS
            # failures are configuration problems that retrying cannot fix.
            if not idempotent or attempt >= max_attempts or isinstance(exc, requests.exceptions.SSLError):
                raise
            wait = backoff_delay(attempt, rng)
            if waited + wait > max_total_wait:
                raise
            sleep(wait)
            waited += wait
            continue
        if response.status_code not in retry_statuses:
            return response
        hinted = parse_retry_after(response.headers.get("Retry-After"), now=clock())
        wait = hinted if hinted is not None else backoff_delay(attempt, rng)
        status = response.status_code
        response.close()
        if attempt >= max_attempts or waited + wait > max_total_wait:
            raise RateLimited(retry_after=wait, url=url, status=status)
        sleep(wait)
        waited += wait


# --------------------------------------------------------------------------------------------------
# Live fetcher
# --------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class FetchResult:
    final_url: str
    status: int
    content_type: str
    body: bytes
    sha256: str
    fetched_at: dt.datetime


@dataclasses.dataclass(frozen=True)
class _Prefix:
    scheme: str
    host: str
    port: int
    path: str

    def matches(self, scheme: str, host: str, port: int, path: str) -> bool:
        if (scheme, host, port) != (self.scheme, self.host, self.port):
            return False
        # Segment-aware: "/docs" covers "/docs" and "/docs/x" but not "/docs-private".
        if self.path.endswith("/"):
            return path.startswith(self.path)
        return path == self.path or path.startswith(self.path + "/")


def _split_for_prefix(url: str) -> tuple[str, str, int, str]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").rstrip(".")
    port = parts.port if parts.port is not None else DEFAULT_PORTS.get(scheme, -1)
    return scheme, host, port, parts.path or "/"


class SafeFetcher:
    """Fetches allow-listed URLs for the optional live-fetch feature.

    The allow-list decides *which* URLs may be fetched; the address checks still apply on top, so an
    allow-listed name that resolves to a private or metadata address is refused all the same.
    ``allow_loopback_for_tests`` exempts loopback addresses only (never private or link-local ones).
    """

    def __init__(
        self,
        allowed_url_prefixes: Iterable[str],
        *,
        max_bytes: int = 2_000_000,
        timeout: tuple[float, float] = (3.0, 10.0),
        max_redirects: int = 3,
        allowed_content_types: Iterable[str] = (
            "text/html",
            "text/plain",
            "application/pdf",
            "application/json",
        ),
        resolver: Resolver | None = None,
        allow_loopback_for_tests: bool = False,
        total_timeout: float | None = None,
        user_agent: str = "Cairn/1.0",
    ) -> None:
        if isinstance(allowed_url_prefixes, str):
            raise TypeError("allowed_url_prefixes must be an iterable of URL prefixes, not a string")
        self._prefixes = tuple(self._parse_prefix(p) for p in allowed_url_prefixes)
        self._max_bytes = max_bytes
        self._timeout = timeout
        self._max_redirects = max_redirects
        self._content_types = frozenset(c.strip().lower() for c in allowed_content_types)
        # Read timeouts bound each recv, not the whole body: a server dripping a byte per second
        # would never trip them, so the fetch as a whole gets a deadline too.
        self._total_timeout = total_timeout if total_timeout is not None else timeout[0] + timeout[1]
        self._session = HardenedSession(
            timeout=timeout,
            max_response_bytes=max_bytes,
            user_agent=user_agent,
            resolver=resolver,
            allow_loopback=allow_loopback_for_tests,
        )

    @staticmethod
    def _parse_prefix(prefix: str) -> _Prefix:
        parts = urlsplit(prefix)
        if parts.scheme.lower() not in ALLOWED_SCHEMES or not parts.hostname:
            raise ValueError(f"allowed URL prefix must be an absolute http(s) URL: {redact_url(prefix)}")
        if parts.username is not None or parts.password is not None or parts.query or parts.fragment:
            raise ValueError(f"allowed URL prefix must not carry credentials, query or fragment: {redact_url(prefix)}")
        return _Prefix(*_split_for_prefix(prefix))

    def _check_allowed(self, url: str) -> None:
        _parse_target(url)  # scheme, userinfo and numeric-host refusals, before any matching
        scheme, host, port, path = _split_for_prefix(url)
        decoded = unquote(path)
        # Servers normalise dot segments (also percent-encoded ones); refuse them instead of hoping
        # our normalisation agrees with every server's.
        if "\\" in decoded or any(seg in (".", "..") for seg in decoded.split("/")):
            raise BlockedDestination("URL path contains dot segments", url=url)
        if not any(p.matches(scheme, host, port, path) for p in self._prefixes):
            raise BlockedDestination("URL is outside the live-fetch allow-list", url=url)

    def fetch(self, url: str) -> FetchResult:
        deadline = time.monotonic() + self._total_timeout
        current = url
        for _hop in range(self._max_redirects + 1):
            self._check_allowed(current)
            if time.monotonic() > deadline:
                raise FetchTimeout("live fetch exceeded its time budget", url=current)
            # The session re-checks addresses (pre-connect and peer) for this hop.
            response = self._session.request("GET", current, stream=True, timeout=self._timeout)
            try:
                if response.is_redirect:
                    target = urljoin(current, response.headers["location"])
                    _check_hop(current, target)
                    current = target
                    continue
                return self._read(response, current, deadline)
            finally:
                response.close()
        raise BlockedDestination(f"more than {self._max_redirects} redirects", url=current)

    def _read(self, response: Response, url: str, deadline: float) -> FetchResult:
        content_type = response.headers.get("Content-Type", "")
        media_type = content_type.split(";", 1)[0].strip().lower()
        if media_type not in self._content_types:
            raise UnsupportedContentType(f"content type {media_type or '(missing)'!r} is not allowed", url=url)
        digest = hashlib.sha256()
        chunks: list[bytes] = []
        raw = response.raw
        while True:
            if time.monotonic() > deadline:
                raise FetchTimeout("live fetch exceeded its time budget", url=url)
            try:
                # read1 returns after a single recv, so the deadline is checked at least once per
                # read timeout even when the server drips bytes (a full-chunk read would block).
                chunk = raw.read1(_CHUNK, decode_content=True)
            except urllib3.exceptions.ReadTimeoutError:
                raise FetchTimeout("live fetch read timed out", url=url) from None
            except urllib3.exceptions.HTTPError as exc:
                raise requests.exceptions.ConnectionError(redact(str(exc))) from None
            if not chunk:
                break
            digest.update(chunk)
            chunks.append(chunk)
        return FetchResult(
            final_url=url,
            status=response.status_code,
            content_type=content_type,
            body=b"".join(chunks),
            sha256=digest.hexdigest(),
            fetched_at=dt.datetime.now(dt.UTC),
        )
