"""Behaviour of core.http, the hardened outbound HTTP client.

Network rule for this file: the only sockets ever connected are to the local test server on
127.0.0.1 (or ::1). The autouse ``connect_log`` fixture enforces that by failing any other connect,
so every "refused" test also proves the refusal happened before a connection was attempted.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import email.utils
import gzip
import hashlib
import http.server
import io
import pickle
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests

from core.http import (
    BlockedDestination,
    FetchTimeout,
    HardenedSession,
    OutboundHTTPError,
    RateLimited,
    ResponseTooLarge,
    SafeFetcher,
    UnsupportedContentType,
    backoff_delay,
    build_session,
    is_blocked_address,
    parse_retry_after,
    redact,
    redact_url,
    request_with_retries,
    validate_url,
)

LOOPBACK = ("127.0.0.1", "::1")
PUBLIC_IP = "93.184.216.34"  # only ever returned by fake resolvers; never connected to


# --------------------------------------------------------------------------------------------------
# Fixtures: network guard and a scriptable local server
# --------------------------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def connect_log(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """Record every socket connect and fail the test on any non-loopback destination."""
    attempts: list[tuple[Any, ...]] = []
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def check(sock: socket.socket, address: Any) -> None:
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            attempts.append(tuple(address))
            if address[0] not in LOOPBACK:
                raise AssertionError(f"test attempted a non-loopback connection to {address!r}")

    def guarded_connect(sock: socket.socket, address: Any) -> None:
        check(sock, address)
        real_connect(sock, address)

    def guarded_connect_ex(sock: socket.socket, address: Any) -> int:
        check(sock, address)
        return real_connect_ex(sock, address)

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    monkeypatch.setattr(socket.socket, "connect_ex", guarded_connect_ex)
    return attempts


@dataclasses.dataclass
class Reply:
    status: int = 200
    headers: dict[str, str] = dataclasses.field(default_factory=lambda: {"Content-Type": "text/plain"})
    body: bytes = b"ok"
    send_length: bool = True  # False: HTTP/1.0 body delimited by connection close
    delay: float = 0.0  # seconds before the status line
    drip: float = 0.0  # seconds between body bytes


@dataclasses.dataclass
class Hit:
    method: str
    path: str
    headers: dict[str, str]


class LocalServer:
    """ThreadingHTTPServer on 127.0.0.1 serving scripted replies per path, recording each request."""

    def __init__(self) -> None:
        self.routes: dict[str, list[Reply]] = {}
        self.hits: list[Hit] = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                server.hits.append(Hit(self.command, self.path, dict(self.headers.items())))
                replies = server.routes.get(self.path.split("?", 1)[0], [Reply(404, body=b"missing")])
                reply = replies.pop(0) if len(replies) > 1 else replies[0]
                time.sleep(reply.delay)
                self.send_response(reply.status)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                if reply.send_length:
                    self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                if self.command == "HEAD":
                    return
                if reply.drip:
                    for i in range(len(reply.body)):
                        self.wfile.write(reply.body[i : i + 1])
                        time.sleep(reply.drip)
                else:
                    self.wfile.write(reply.body)

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _handle

        class QuietServer(http.server.ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # clients hanging up early (size caps, timeouts) are expected here

        self.httpd = QuietServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)

    def route(self, path: str, *replies: Reply) -> str:
        self.routes[path] = list(replies)
        return self.url(path)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def paths_hit(self) -> list[str]:
        return [h.path for h in self.hits]


@pytest.fixture
def server() -> Iterator[LocalServer]:
    srv = LocalServer()
    srv.thread.start()
    yield srv
    srv.httpd.shutdown()
    srv.httpd.server_close()


@pytest.fixture
def local_session(server: LocalServer) -> HardenedSession:
    # Operators allow their connector base URL explicitly; tests do the same for the local server.
    return build_session(allowed_hosts=[f"127.0.0.1:{server.port}"], timeout=(2.0, 5.0))


def no_resolver(host: str, port: int) -> list[str]:
    raise AssertionError(f"resolver must not be consulted for {host!r}")


def fixed_resolver(*addresses: str) -> Callable[[str, int], list[str]]:
    return lambda host, port: list(addresses)


def closed_local_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


# --------------------------------------------------------------------------------------------------
# Destination validation
# --------------------------------------------------------------------------------------------------

BLOCKED_HOSTS = [
    "10.0.0.1",
    "172.16.0.1",
    "192.168.1.1",
    "127.0.0.1",
    "169.254.169.254",
    "100.64.0.1",
    "0.0.0.0",
    "[::1]",
    "[fe80::1]",
    "[fd00::1]",
    "[::ffff:127.0.0.1]",
    "[::ffff:169.254.169.254]",
    "[64:ff9b::a9fe:a9fe]",  # NAT64 form of the metadata address
    "[::]",
    "224.0.0.1",
    "0x7f000001",
    "2130706433",
    "017700000001",
    "127.1",
    "0177.0.0.1",
]


@pytest.mark.parametrize("host", BLOCKED_HOSTS)
def test_blocked_addresses_are_refused_by_validation_without_resolving_or_connecting(
    host: str, connect_log: list[tuple[Any, ...]]
) -> None:
    with pytest.raises(BlockedDestination):
        validate_url(f"http://{host}/latest/meta-data", resolver=no_resolver)
    assert connect_log == []


@pytest.mark.parametrize("address", ["8.8.8.8", PUBLIC_IP, "2606:4700::1111", "::ffff:8.8.8.8"])
def test_public_addresses_are_not_blocked(address: str) -> None:
    assert is_blocked_address(address) is False


def test_loopback_exemption_for_tests_does_not_extend_to_private_or_metadata_addresses() -> None:
    assert is_blocked_address("127.0.0.1", allow_loopback=True) is False
    assert is_blocked_address("::1", allow_loopback=True) is False
    assert is_blocked_address("169.254.169.254", allow_loopback=True) is True
    assert is_blocked_address("10.0.0.1", allow_loopback=True) is True


def test_a_hostname_is_refused_if_any_of_its_addresses_is_private() -> None:
    with pytest.raises(BlockedDestination, match="10.0.0.5"):
        validate_url("https://intranet.example.com/", resolver=fixed_resolver(PUBLIC_IP, "10.0.0.5"))


def test_a_hostname_resolving_only_to_public_addresses_passes_and_reports_them() -> None:
    destination = validate_url("https://api.example.com/v1", resolver=fixed_resolver(PUBLIC_IP))
    assert (destination.scheme, destination.host, destination.port) == ("https", "api.example.com", 443)
    assert destination.addresses == (PUBLIC_IP,)


def test_allowed_hosts_exempt_only_the_named_host_and_port() -> None:
    validate_url("http://127.0.0.1:8080/x", allowed_hosts=["127.0.0.1:8080"], resolver=no_resolver)
    validate_url("http://127.0.0.1:9090/x", allowed_hosts=["127.0.0.1"], resolver=no_resolver)
    validate_url("http://wiki.corp/x", allowed_hosts=["https://WIKI.corp/"], resolver=no_resolver)
    with pytest.raises(BlockedDestination):
        validate_url("http://127.0.0.1:9090/x", allowed_hosts=["127.0.0.1:8080"], resolver=no_resolver)


def test_allow_private_skips_address_checks_but_not_scheme_or_credential_checks() -> None:
    validate_url("http://10.1.2.3/", allow_private=True, resolver=no_resolver)
    with pytest.raises(BlockedDestination, match="credentials"):
        validate_url("http://u:p@10.1.2.3/", allow_private=True)
    with pytest.raises(BlockedDestination, match="scheme"):
        validate_url("file:///etc/passwd", allow_private=True)


@pytest.mark.parametrize(
    "url", ["file:///etc/passwd", "ftp://example.com/", "gopher://example.com/", "example.com/path"]
)
def test_non_http_schemes_are_refused(url: str) -> None:
    with pytest.raises(BlockedDestination, match="scheme"):
        validate_url(url, resolver=no_resolver)


def test_urls_with_credentials_are_refused_without_echoing_the_password(
    local_session: HardenedSession, server: LocalServer
) -> None:
    url = f"http://admin:hunter2@127.0.0.1:{server.port}/"
    with pytest.raises(BlockedDestination) as excinfo:
        local_session.get(url)
    assert "hunter2" not in str(excinfo.value)
    assert "admin" not in str(excinfo.value)
    assert server.hits == []


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_peer_address_is_rechecked_after_connect_to_defeat_dns_rebinding(server: LocalServer, scheme: str) -> None:
    # The validation resolver says "public"; the real connect lands on loopback, as a rebinding
    # attacker's DNS would arrange. The connected socket's peer address must stop the request (for
    # https before the TLS handshake, so the plain-HTTP test server is never spoken to at all).
    server.route("/secret", Reply(body=b"internal"))
    session = build_session(resolver=fixed_resolver(PUBLIC_IP), timeout=(2.0, 2.0))
    with pytest.raises(BlockedDestination, match="connected peer"):
        session.get(f"{scheme}://localhost:{server.port}/secret")
    assert server.hits == []


def test_explicit_proxies_are_refused_because_the_peer_check_cannot_see_through_them(
    local_session: HardenedSession, server: LocalServer, connect_log: list[tuple[Any, ...]]
) -> None:
    with pytest.raises(BlockedDestination, match="prox"):
        local_session.get(server.url("/"), proxies={"http": f"http://127.0.0.1:{closed_local_port()}"})
    assert connect_log == []


# --------------------------------------------------------------------------------------------------
# Timeouts
# --------------------------------------------------------------------------------------------------


def test_requests_without_a_timeout_get_the_session_default(server: LocalServer) -> None:
    url = server.route("/slow", Reply(delay=3.0))
    session = build_session(allow_private=True, timeout=(1.0, 0.3))
    started = time.monotonic()
    with pytest.raises(requests.exceptions.ReadTimeout):
        session.get(url)
    assert time.monotonic() - started < 2.0


def test_an_explicit_none_timeout_is_replaced_rather_than_waiting_forever(server: LocalServer) -> None:
    url = server.route("/slow", Reply(delay=3.0))
    session = build_session(allow_private=True, timeout=(1.0, 0.3))
    with pytest.raises(requests.exceptions.ReadTimeout):
        session.get(url, timeout=None)
    with pytest.raises(requests.exceptions.ReadTimeout):
        session.get(url, timeout=(1.0, None))


def test_sending_a_prepared_request_directly_also_gets_the_default_timeout(server: LocalServer) -> None:
    url = server.route("/slow", Reply(delay=3.0))
    session = build_session(allow_private=True, timeout=(1.0, 0.3))
    prepared = session.prepare_request(requests.Request("GET", url))
    with pytest.raises(requests.exceptions.ReadTimeout):
        session.send(prepared)


# --------------------------------------------------------------------------------------------------
# Redirects
# --------------------------------------------------------------------------------------------------


def test_redirects_are_not_followed_by_default_even_through_session_get(
    local_session: HardenedSession, server: LocalServer
) -> None:
    url = server.route("/start", Reply(302, {"Location": "/end"}, b""))
    server.route("/end", Reply(body=b"end"))
    response = local_session.get(url)
    assert response.status_code == 302
    assert server.paths_hit() == ["/start"]


def test_same_host_redirects_are_followed_on_request_and_recorded_in_history(
    local_session: HardenedSession, server: LocalServer
) -> None:
    url = server.route("/start", Reply(302, {"Location": "/middle"}, b""))
    server.route("/middle", Reply(301, {"Location": server.url("/end")}, b""))
    server.route("/end", Reply(body=b"end"))
    response = local_session.get(url, follow_redirects=True)
    assert (response.status_code, response.content) == (200, b"end")
    assert [r.status_code for r in response.history] == [302, 301]
    assert server.paths_hit() == ["/start", "/middle", "/end"]
    assert server.hits[-1].headers["User-Agent"] == "Cairn/1.0"


def test_redirect_to_the_metadata_address_is_refused_without_connecting(
    local_session: HardenedSession, server: LocalServer, connect_log: list[tuple[Any, ...]]
) -> None:
    url = server.route("/start", Reply(302, {"Location": "http://169.254.169.254/latest/meta-data"}, b""))
    with pytest.raises(BlockedDestination, match="169.254.169.254"):
        local_session.get(url, follow_redirects=True)
    assert server.paths_hit() == ["/start"]
    assert {address[0] for address in connect_log} == {"127.0.0.1"}


def test_redirect_to_another_host_is_refused_unless_that_host_is_allowed(server: LocalServer) -> None:
    url = server.route("/start", Reply(302, {"Location": f"http://localhost:{server.port}/end"}, b""))
    server.route("/end", Reply(body=b"end"))
    strict = build_session(allowed_hosts=[f"127.0.0.1:{server.port}"])
    with pytest.raises(BlockedDestination, match="another host"):
        strict.get(url, follow_redirects=True, headers={"Authorization": "Bearer s3cr3t"})
    assert server.paths_hit() == ["/start"]

    lenient = build_session(allowed_hosts=[f"127.0.0.1:{server.port}", "localhost"])
    response = lenient.get(url, follow_redirects=True, headers={"Authorization": "Bearer s3cr3t"})
    assert response.content == b"end"
    # Credentials for one host must never be replayed to another.
    assert server.hits[-1].path == "/end"
    assert "Authorization" not in server.hits[-1].headers


def test_https_to_http_downgrade_is_refused_before_sending(
    local_session: HardenedSession, connect_log: list[tuple[Any, ...]]
) -> None:
    response = requests.Response()
    response.status_code = 302
    response.url = "https://127.0.0.1:8443/start"
    response.headers["Location"] = "http://127.0.0.1:8443/start"
    response.raw = io.BytesIO(b"")
    response.request = local_session.prepare_request(requests.Request("GET", response.url))
    with pytest.raises(BlockedDestination, match="downgrade"):
        local_session.follow_redirects(response)
    assert connect_log == []


def test_redirect_chains_longer_than_the_limit_are_refused(local_session: HardenedSession, server: LocalServer) -> None:
    url = server.route("/loop", Reply(302, {"Location": "/loop"}, b""))
    with pytest.raises(BlockedDestination, match="redirects"):
        local_session.get(url, follow_redirects=True, max_redirects=2)
    assert server.paths_hit() == ["/loop"] * 3


def test_a_303_after_post_is_followed_with_a_bodiless_get(local_session: HardenedSession, server: LocalServer) -> None:
    url = server.route("/form", Reply(303, {"Location": "/done"}, b""))
    server.route("/done", Reply(body=b"done"))
    response = local_session.post(url, data=b"payload", follow_redirects=True)
    assert response.content == b"done"
    assert [(h.method, h.path) for h in server.hits] == [("POST", "/form"), ("GET", "/done")]
    assert "Content-Length" not in server.hits[-1].headers


# --------------------------------------------------------------------------------------------------
# Response size cap
# --------------------------------------------------------------------------------------------------


def capped_session(server: LocalServer, limit: int) -> HardenedSession:
    return build_session(allowed_hosts=[f"127.0.0.1:{server.port}"], max_response_bytes=limit)


def test_a_declared_content_length_over_the_cap_is_refused(server: LocalServer) -> None:
    url = server.route("/big", Reply(body=b"x" * 2000))
    with pytest.raises(ResponseTooLarge):
        capped_session(server, 1000).get(url)


def test_a_body_without_length_is_cut_off_while_streaming(server: LocalServer) -> None:
    url = server.route("/big", Reply(body=b"x" * 200_000, send_length=False))
    with pytest.raises(ResponseTooLarge):
        capped_session(server, 100_000).get(url)


def test_the_cap_also_applies_to_stream_true_consumers(server: LocalServer) -> None:
    url = server.route("/big", Reply(body=b"x" * 5000, send_length=False))
    session = capped_session(server, 1000)
    with pytest.raises(ResponseTooLarge):
        list(session.get(url, stream=True).iter_content(chunk_size=None))
    with pytest.raises(ResponseTooLarge):
        session.get(url, stream=True).raw.read()


def test_the_cap_counts_decompressed_bytes_so_gzip_bombs_are_refused(server: LocalServer) -> None:
    bomb = gzip.compress(b"\0" * 1_000_000)
    assert len(bomb) < 10_000
    url = server.route("/bomb", Reply(headers={"Content-Encoding": "gzip"}, body=bomb))
    with pytest.raises(ResponseTooLarge):
        capped_session(server, 100_000).get(url)


def test_a_body_exactly_at_the_cap_is_returned_whole(server: LocalServer) -> None:
    url = server.route("/exact", Reply(body=b"y" * 1000, send_length=False))
    assert capped_session(server, 1000).get(url).content == b"y" * 1000


# --------------------------------------------------------------------------------------------------
# Retries
# --------------------------------------------------------------------------------------------------

NOW = 1_700_000_000.0


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("0.2", 0.2),
        ("3", 3.0),
        (" 7 ", 7.0),
        (email.utils.formatdate(NOW + 42, usegmt=True), 42.0),
        (email.utils.formatdate(NOW - 42, usegmt=True), 0.0),
        ("soon", None),
        ("-1", None),
        ("", None),
        (None, None),
    ],
)
def test_retry_after_parses_seconds_fractions_and_http_dates(value: str | None, expected: float | None) -> None:
    assert parse_retry_after(value, now=NOW) == (pytest.approx(expected) if expected is not None else None)


def test_backoff_delay_is_full_jitter_exponential_and_capped_at_thirty_seconds() -> None:
    assert [backoff_delay(n, lambda: 1.0) for n in (1, 2, 3, 4)] == [0.5, 1.0, 2.0, 4.0]
    assert backoff_delay(7, lambda: 1.0) == 30.0
    assert backoff_delay(10_000, lambda: 1.0) == 30.0
    assert backoff_delay(3, lambda: 0.0) == 0.0
    assert backoff_delay(3, lambda: 0.25) == 0.5


def test_a_429_with_fractional_retry_after_sleeps_that_long_then_succeeds(
    local_session: HardenedSession, server: LocalServer
) -> None:
    url = server.route("/api", Reply(429, {"Retry-After": "0.2"}, b"slow down"), Reply(body=b"done"))
    sleeps: list[float] = []
    response = request_with_retries(local_session, "GET", url, sleep=sleeps.append)
    assert response.content == b"done"
    assert sleeps == [pytest.approx(0.2)]
    assert server.paths_hit() == ["/api", "/api"]


def test_a_503_with_an_http_date_retry_after_waits_until_that_date(
    local_session: HardenedSession, server: LocalServer
) -> None:
    retry_at = email.utils.formatdate(NOW + 7, usegmt=True)
    url = server.route("/api", Reply(503, {"Retry-After": retry_at}, b""), Reply(body=b"done"))
    sleeps: list[float] = []
    response = request_with_retries(local_session, "GET", url, sleep=sleeps.append, clock=lambda: NOW)
    assert response.status_code == 200
    assert sleeps == [pytest.approx(7.0)]


def test_without_retry_after_waits_use_jittered_exponential_backoff(
    local_session: HardenedSession, server: LocalServer
) -> None:
    url = server.route("/api", Reply(503, body=b""), Reply(429, body=b""), Reply(503, body=b""), Reply())
    draws = iter([0.5, 0.1, 0.9])
    sleeps: list[float] = []
    response = request_with_retries(local_session, "GET", url, sleep=sleeps.append, rng=lambda: next(draws))
    assert response.status_code == 200
    # attempt n waits rng() * 0.5 * 2**(n-1)
    assert sleeps == [pytest.approx(0.25), pytest.approx(0.1), pytest.approx(1.8)]


def test_rate_limited_is_raised_instead_of_blocking_past_max_total_wait(
    local_session: HardenedSession, server: LocalServer
) -> None:
    url = server.route("/api", Reply(429, {"Retry-After": "120"}, b""))
    sleeps: list[float] = []
    with pytest.raises(RateLimited) as excinfo:
        request_with_retries(local_session, "GET", url, max_total_wait=60.0, sleep=sleeps.append)
    assert excinfo.value.retry_after == 120.0
    assert excinfo.value.status == 429
    assert sleeps == []
    assert server.paths_hit() == ["/api"]


def test_rate_limited_is_raised_when_cumulative_waits_would_exceed_the_budget(
    local_session: HardenedSession, server: LocalServer
) -> None:
    url = server.route("/api", Reply(429, {"Retry-After": "1"}, b""))
    sleeps: list[float] = []
    with pytest.raises(RateLimited) as excinfo:
        request_with_retries(local_session, "GET", url, max_total_wait=2.5, sleep=sleeps.append)
    assert sleeps == [1.0, 1.0]
    assert excinfo.value.retry_after == 1.0
    assert len(server.hits) == 3


def test_running_out_of_attempts_on_a_throttling_status_raises_rate_limited(
    local_session: HardenedSession, server: LocalServer
) -> None:
    url = server.route("/api", Reply(503, body=b""))
    with pytest.raises(RateLimited):
        request_with_retries(local_session, "GET", url, max_attempts=2, sleep=lambda s: None)
    assert len(server.hits) == 2


def test_non_retryable_statuses_are_returned_without_waiting(
    local_session: HardenedSession, server: LocalServer
) -> None:
    url = server.route("/api", Reply(500, body=b"boom"))
    sleeps: list[float] = []
    assert request_with_retries(local_session, "GET", url, sleep=sleeps.append).status_code == 500
    assert sleeps == []


def test_connection_errors_are_retried_for_idempotent_methods_only(
    connect_log: list[tuple[Any, ...]],
) -> None:
    port = closed_local_port()
    url = f"http://127.0.0.1:{port}/api"
    session = build_session(allow_private=True, timeout=(1.0, 1.0))

    sleeps: list[float] = []
    with pytest.raises(requests.exceptions.ConnectionError):
        request_with_retries(session, "GET", url, max_attempts=3, sleep=sleeps.append, rng=lambda: 1.0)
    assert sleeps == [0.5, 1.0]
    assert len([a for a in connect_log if a[1] == port]) == 3

    connect_log.clear()
    sleeps.clear()
    with pytest.raises(requests.exceptions.ConnectionError):
        request_with_retries(session, "POST", url, max_attempts=3, sleep=sleeps.append, data=b"x")
    assert sleeps == []
    assert len([a for a in connect_log if a[1] == port]) == 1


# --------------------------------------------------------------------------------------------------
# Redaction and error messages
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("Authorization: Bearer eyJhbGciOi.payload.sig", "eyJhbGciOi"),
        ("headers={'Authorization': 'Basic dXNlcjpwYXNz'}", "dXNlcjpwYXNz"),
        ("proxy-authorization: Negotiate YIIabc", "YIIabc"),
        ("calling slack with xoxb-1234-5678-abcdEFGH", "abcdEFGH"),
        ("user token xoxp-99-88-77-secretpart", "secretpart"),
        ("app token xapp-1-A0-12345-deadbeef", "deadbeef"),
        ("POST /token body=grant_type=client_credentials&client_secret=sh%2Fhh&scope=x", "sh%2Fhh"),
        ('{"client_secret": "json-secret", "client_id": "abc"}', "json-secret"),
        ("GET https://acct.blob.core.windows.net/c/b?sv=2020&sig=AbC%2Bdef&se=1", "AbC%2Bdef"),
        ("GET https://x.s3.amazonaws.com/k?X-Amz-Signature=feedface", "feedface"),
        ("error from https://svc:p4ssw0rd@wiki.corp/rest/api", "p4ssw0rd"),
        ("webhook https://hooks.slack.com/services/T000/B000/XXXXSECRET", "XXXXSECRET"),
    ],
)
def test_redact_removes_credentials(text: str, secret: str) -> None:
    cleaned = redact(text)
    assert secret not in cleaned
    assert "[REDACTED]" in cleaned


def test_redact_leaves_ordinary_text_alone() -> None:
    text = "fetched 12 pages from https://wiki.corp/display/ENG?pageId=42 in 3.1s"
    assert redact(text) == text


def test_redact_url_drops_query_string_and_userinfo() -> None:
    assert redact_url("https://u:pw@api.corp:8443/v1/items?access_token=abc#frag") == (
        "https://api.corp:8443/v1/items?[REDACTED]"
    )


def test_error_messages_never_contain_query_strings_or_tokens(server: LocalServer) -> None:
    blocked_url = "http://10.0.0.1/callback?access_token=SEKRET1&code=SEKRET2"
    with pytest.raises(BlockedDestination) as blocked:
        validate_url(blocked_url, resolver=no_resolver)

    url = server.route("/big", Reply(body=b"x" * 2000)) + "?token=SEKRET3"
    with pytest.raises(ResponseTooLarge) as too_large:
        capped_session(server, 10).get(url)

    limited = RateLimited(retry_after=5, url="https://slack.com/api/x?token=xoxb-1-SEKRET4", status=429)

    for error in (blocked.value, too_large.value, limited):
        assert isinstance(error, OutboundHTTPError)
        rendered = f"{error} {error!r} {error.url}"
        assert "SEKRET" not in rendered


def test_outbound_errors_survive_pickling_for_celery() -> None:
    original = RateLimited(retry_after=12.5, url="https://graph.example/v1?x=1", status=429)
    restored = pickle.loads(pickle.dumps(original))
    assert type(restored) is RateLimited
    assert (restored.retry_after, restored.status, str(restored)) == (12.5, 429, str(original))
    too_large = pickle.loads(pickle.dumps(ResponseTooLarge(10, url="http://a/b")))
    assert too_large.limit == 10


# --------------------------------------------------------------------------------------------------
# SafeFetcher
# --------------------------------------------------------------------------------------------------


def local_fetcher(server: LocalServer, *extra_prefixes: str, **kwargs: Any) -> SafeFetcher:
    kwargs.setdefault("allow_loopback_for_tests", True)
    return SafeFetcher([server.url("/docs/"), *extra_prefixes], **kwargs)


def test_fetch_of_an_allow_listed_url_returns_body_hash_and_metadata(server: LocalServer) -> None:
    body = b"<html><p>Handbook</p></html>"
    url = server.route("/docs/handbook", Reply(headers={"Content-Type": "text/html; charset=utf-8"}, body=body))
    result = local_fetcher(server).fetch(url)
    assert result.final_url == url
    assert result.status == 200
    assert result.content_type == "text/html; charset=utf-8"
    assert result.body == body
    assert result.sha256 == hashlib.sha256(body).hexdigest()
    assert result.fetched_at.tzinfo is not None
    assert abs((dt.datetime.now(dt.UTC) - result.fetched_at).total_seconds()) < 60


def test_fetch_follows_redirects_that_stay_inside_the_allow_list(server: LocalServer) -> None:
    url = server.route("/docs/old", Reply(301, {"Location": "/docs/new"}, b""))
    server.route("/docs/new", Reply(body=b"new"))
    result = local_fetcher(server).fetch(url)
    assert (result.final_url, result.body) == (server.url("/docs/new"), b"new")


@pytest.mark.parametrize(
    "path_or_url",
    [
        "/other",
        "/docs-private/x",
        "/docs/../admin",
        "/docs/%2e%2e/admin",
        "/docs/..%2fadmin",
        "https://127.0.0.1:{port}/docs/x",
        "http://127.0.0.1:{other}/docs/x",
        "http://127.0.0.1.evil.test:{port}/docs/x",
    ],
)
def test_fetch_refuses_urls_outside_the_allow_list(server: LocalServer, path_or_url: str) -> None:
    url = path_or_url.format(port=server.port, other=server.port + 1)
    url = url if "://" in url else server.url(url)
    with pytest.raises(BlockedDestination):
        local_fetcher(server, resolver=no_resolver).fetch(url)
    assert server.hits == []


def test_fetch_refuses_loopback_unless_the_test_flag_is_set(server: LocalServer) -> None:
    url = server.route("/docs/page", Reply())
    with pytest.raises(BlockedDestination):
        local_fetcher(server, allow_loopback_for_tests=False).fetch(url)
    assert server.hits == []


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data",
        "http://10.0.0.1/docs",
        "http://[fd00::1]/docs",
        "http://internal.example/docs",  # allow-listed name that resolves to a private address
    ],
)
def test_fetch_applies_address_checks_even_to_allow_listed_urls(url: str, connect_log: list[tuple[Any, ...]]) -> None:
    fetcher = SafeFetcher(
        ["http://169.254.169.254/", "http://10.0.0.1/", "http://[fd00::1]/", "http://internal.example/"],
        resolver=fixed_resolver("192.168.0.10"),
        allow_loopback_for_tests=True,
    )
    with pytest.raises(BlockedDestination):
        fetcher.fetch(url)
    assert connect_log == []


@pytest.mark.parametrize(
    "location",
    [
        "http://169.254.169.254/latest/meta-data",
        "http://10.0.0.1/docs",
        "http://[::1]:{port}/docs/x",
        "http://0x7f000001:{port}/docs/x",
        "http://2130706433:{port}/docs/x",
        "http://017700000001:{port}/docs/x",
        "http://user:pw@127.0.0.1:{port}/docs/x",
        "file:///etc/passwd",
        "/elsewhere",
    ],
)
def test_every_redirect_hop_of_a_fetch_is_validated_before_connecting(
    server: LocalServer, location: str, connect_log: list[tuple[Any, ...]]
) -> None:
    url = server.route("/docs/start", Reply(302, {"Location": location.format(port=server.port)}, b""))
    server.route("/elsewhere", Reply())
    # The private targets are allow-listed on purpose: the address checks must refuse them anyway.
    fetcher = local_fetcher(server, "http://169.254.169.254/", "http://10.0.0.1/")
    with pytest.raises(BlockedDestination):
        fetcher.fetch(url)
    assert server.paths_hit() == ["/docs/start"]
    assert {address[0] for address in connect_log} == {"127.0.0.1"}


def test_fetch_refuses_content_types_outside_its_list(server: LocalServer) -> None:
    binary = server.route("/docs/bin", Reply(headers={"Content-Type": "application/octet-stream"}, body=b"\0"))
    untyped = server.route("/docs/untyped", Reply(headers={}, body=b"?"))
    fetcher = local_fetcher(server)
    with pytest.raises(UnsupportedContentType):
        fetcher.fetch(binary)
    with pytest.raises(UnsupportedContentType):
        fetcher.fetch(untyped)


def test_fetch_enforces_its_byte_limit_with_and_without_content_length(server: LocalServer) -> None:
    declared = server.route("/docs/declared", Reply(body=b"x" * 5000))
    undeclared = server.route("/docs/undeclared", Reply(body=b"x" * 5000, send_length=False))
    fetcher = local_fetcher(server, max_bytes=1000)
    with pytest.raises(ResponseTooLarge):
        fetcher.fetch(declared)
    with pytest.raises(ResponseTooLarge):
        fetcher.fetch(undeclared)


def test_fetch_refuses_more_redirects_than_allowed(server: LocalServer) -> None:
    url = server.route("/docs/loop", Reply(302, {"Location": "/docs/loop"}, b""))
    with pytest.raises(BlockedDestination, match="redirects"):
        local_fetcher(server, max_redirects=2).fetch(url)
    assert len(server.hits) == 3


def test_fetch_gives_up_on_a_server_that_drips_bytes_past_the_total_deadline(server: LocalServer) -> None:
    url = server.route("/docs/drip", Reply(body=b"z" * 100, send_length=False, drip=0.1))
    fetcher = local_fetcher(server, timeout=(1.0, 1.0), total_timeout=0.5)
    started = time.monotonic()
    with pytest.raises(FetchTimeout):
        fetcher.fetch(url)
    assert time.monotonic() - started < 3.0


def test_fetcher_rejects_allow_list_entries_that_are_not_plain_http_prefixes() -> None:
    for prefix in ("ftp://files.corp/", "https://u:p@wiki.corp/", "https://wiki.corp/?q=1", "wiki.corp"):
        with pytest.raises(ValueError):
            SafeFetcher([prefix])
