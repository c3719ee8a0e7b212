"""A typed, rate-limit-aware wrapper over ``slack_sdk.WebClient``.

Why a wrapper and not the SDK's built-in ``RateLimitErrorRetryHandler``: in
slack-sdk 3.x that handler computes ``int(retry_after_header) + random()``,
so a fractional ``Retry-After: 0.5`` raises ``ValueError`` out of the HTTP
layer, and it always adds up to a full second of jitter.  ``RetryAfterHandler``
below parses the header as a float (or an HTTP date), never waits less than
the server asked, and keeps jitter small and bounded.

History calls get their own pacing because, since 2025, ``conversations.history``
and ``conversations.replies`` are limited to about one request per minute (and
at most 15 messages per page) for commercially distributed apps outside the
Slack Marketplace; see ``NON_MARKETPLACE_PACING``.
"""

from __future__ import annotations

import random
import ssl
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.http_retry.builtin_handlers import ConnectionErrorRetryHandler
from slack_sdk.http_retry.handler import RetryHandler
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState

from connectors.base import ConnectorError
from core.http import parse_retry_after

SLACK_API_URL = "https://slack.com/api/"

SleepFn = Callable[[float], None]
ClockFn = Callable[[], float]


class RetryAfterHandler(RetryHandler):
    """Retries HTTP 429 after ``Retry-After`` (+ bounded jitter), up to ``max_retry_count`` times."""

    def __init__(
        self,
        max_retry_count: int = 5,
        *,
        jitter_s: float = 0.25,
        default_wait_s: float = 1.0,
        max_wait_s: float = 300.0,
        sleep: SleepFn = time.sleep,
    ) -> None:
        super().__init__(max_retry_count=max_retry_count)
        self.jitter_s = jitter_s
        self.default_wait_s = default_wait_s
        self.max_wait_s = max_wait_s
        self.sleep = sleep
        self.waits: list[float] = []  # what we actually slept, for logs and tests

    def _can_retry(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> bool:
        return response is not None and response.status_code == 429

    def prepare_for_next_attempt(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> None:
        state.next_attempt_requested = True
        header = _header(response.headers if response is not None else {}, "retry-after")
        wait = parse_retry_after(header)
        if wait is None:
            wait = self.default_wait_s
        # Jitter is only ever added: waking before Retry-After just earns another 429, and
        # spreading concurrent workers a little keeps them from retrying in lockstep.
        wait = min(wait, self.max_wait_s) + random.uniform(0.0, self.jitter_s)
        self.waits.append(wait)
        self.sleep(wait)
        state.increment_current_attempt()


def _header(headers: Mapping[str, Any], name: str) -> str | None:
    for key, value in headers.items():
        if key.lower() == name:
            if isinstance(value, (list, tuple)):
                return str(value[0]) if value else None
            return str(value)
    return None


@dataclass(frozen=True)
class HistoryPacing:
    """Client-side pacing for ``conversations.history`` / ``conversations.replies``.

    ``min_interval_s`` is the minimum gap between two calls of the *same* method
    (Slack meters each method separately); ``page_size`` is the ``limit`` sent.
    """

    min_interval_s: float = 0.0
    page_size: int = 200


# Marketplace-approved and internal apps: Tier 3, so no client-side pacing needed beyond 429s.
DEFAULT_PACING = HistoryPacing()
# Commercially distributed, non-Marketplace apps since 2025-05-29: ~1 request/minute, limit <= 15.
NON_MARKETPLACE_PACING = HistoryPacing(min_interval_s=60.0, page_size=15)


class _Pacer:
    def __init__(self, min_interval_s: float, clock: ClockFn, sleep: SleepFn) -> None:
        self.min_interval_s = min_interval_s
        self.clock = clock
        self.sleep = sleep
        self._last: dict[str, float] = {}
        self._lock = threading.Lock()

    def wait(self, key: str) -> None:
        if self.min_interval_s <= 0:
            return
        with self._lock:
            last = self._last.get(key)
            if last is not None:
                remaining = self.min_interval_s - (self.clock() - last)
                if remaining > 0:
                    self.sleep(remaining)
            self._last[key] = self.clock()


@dataclass(frozen=True)
class Page:
    """One page of a cursor-paginated result."""

    items: list[dict[str, Any]]
    next_cursor: str | None


class SlackClient:
    """Only the read methods the connector needs, each raising ``ConnectorError`` on failure."""

    def __init__(
        self,
        token: str,
        *,
        base_url: str = SLACK_API_URL,
        pacing: HistoryPacing = DEFAULT_PACING,
        page_size: int = 200,
        max_rate_limit_retries: int = 5,
        retry_jitter_s: float = 0.25,
        timeout_s: int = 30,
        sleep: SleepFn = time.sleep,
        clock: ClockFn = time.monotonic,
        ca_file: str = "",
    ) -> None:
        # The instance's operator-set CA bundle (ConnectorInstance.tls_ca_file), as the
        # Confluence and Graph sessions get it through connectors.runtime.Outbound: a TLS
        # inspection proxy or a private Slack-compatible endpoint is trusted through it only.
        self.ssl_context = ssl.create_default_context(cafile=ca_file) if ca_file else None
        self.rate_limit_handler = RetryAfterHandler(
            max_retry_count=max_rate_limit_retries, jitter_s=retry_jitter_s, sleep=sleep
        )
        self.web = WebClient(
            token=token,
            base_url=base_url,
            timeout=timeout_s,
            ssl=self.ssl_context,
            retry_handlers=[ConnectionErrorRetryHandler(max_retry_count=1), self.rate_limit_handler],
        )
        self.pacing = pacing
        self.page_size = page_size
        self._pacer = _Pacer(pacing.min_interval_s, clock, sleep)

    # -- single calls -------------------------------------------------------------------------

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        """POST one Web API method; returns the JSON body.  ``None`` params are not sent."""
        clean = {k: v for k, v in params.items() if v is not None}
        try:
            response = self.web.api_call(method, params=clean)
        except SlackApiError as exc:
            raise _connector_error(method, exc) from None
        except (SlackClientError, OSError) as exc:
            # OSError covers URLError/timeouts; the text never includes the token.
            raise ConnectorError(f"Could not reach Slack ({method}): {type(exc).__name__}", item=method) from None
        data = response.data
        if not isinstance(data, dict):
            raise ConnectorError(f"Slack returned an unexpected response to {method}", item=method)
        return data

    def auth_test(self) -> dict[str, Any]:
        return self.call("auth.test")

    def conversation_info(self, channel: str) -> dict[str, Any]:
        return dict(self.call("conversations.info", channel=channel)["channel"])

    def join(self, channel: str) -> dict[str, Any]:
        """``conversations.join`` (bot scope ``channels:join``): public channels only."""
        return dict(self.call("conversations.join", channel=channel).get("channel") or {})

    def user_info(self, user: str) -> dict[str, Any]:
        return dict(self.call("users.info", user=user)["user"])

    def history_page(
        self,
        channel: str,
        *,
        cursor: str | None = None,
        latest: str | None = None,
        oldest: str | None = None,
    ) -> Page:
        """One page of ``conversations.history`` (newest first), paced."""
        self._pacer.wait("conversations.history")
        data = self.call(
            "conversations.history",
            channel=channel,
            cursor=cursor or None,
            latest=latest,
            oldest=oldest,
            limit=self.pacing.page_size,
        )
        return Page(list(data.get("messages") or []), _next_cursor(data))

    def replies_page(self, channel: str, thread_ts: str, *, cursor: str | None = None) -> Page:
        """One page of ``conversations.replies`` (oldest first; the parent comes first on page one), paced."""
        self._pacer.wait("conversations.replies")
        data = self.call(
            "conversations.replies",
            channel=channel,
            ts=thread_ts,
            cursor=cursor or None,
            limit=self.pacing.page_size,
        )
        return Page(list(data.get("messages") or []), _next_cursor(data))

    # -- paginated iterators ------------------------------------------------------------------

    def iter_channels(
        self, *, types: str = "public_channel,private_channel", exclude_archived: bool = False
    ) -> Iterator[dict[str, Any]]:
        yield from self._paginate("conversations.list", "channels", types=types, exclude_archived=exclude_archived)

    def iter_users(self) -> Iterator[dict[str, Any]]:
        yield from self._paginate("users.list", "members")

    def iter_members(self, channel: str) -> Iterator[str]:
        for member in self._paginate("conversations.members", "members", channel=channel):
            yield str(member)

    def iter_replies(self, channel: str, thread_ts: str) -> Iterator[dict[str, Any]]:
        cursor: str | None = None
        while True:
            page = self.replies_page(channel, thread_ts, cursor=cursor)
            yield from page.items
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def _paginate(self, method: str, key: str, **params: Any) -> Iterator[Any]:
        cursor: str | None = None
        while True:
            data = self.call(method, cursor=cursor, limit=self.page_size, **params)
            yield from data.get(key) or []
            cursor = _next_cursor(data)
            if not cursor:
                return


def _next_cursor(data: Mapping[str, Any]) -> str | None:
    # An empty string means "no more pages" (Slack docs, Pagination).
    return (data.get("response_metadata") or {}).get("next_cursor") or None


_USER_MESSAGES = {
    "invalid_auth": "Slack rejected the token (invalid_auth). Reinstall the app or paste a new token.",
    "not_authed": "No Slack token was sent (not_authed).",
    "token_revoked": "The Slack token was revoked. Reinstall the app.",
    "account_inactive": "The Slack token belongs to a deactivated user or app. Reinstall the app.",
    "missing_scope": "The Slack app lacks a required scope",
    "not_in_channel": "The Slack app is not a member of the channel",
    "channel_not_found": "Slack channel not found or not visible to the app",
    "ratelimited": "Slack rate limit reached",
}


class SlackMethodError(ConnectorError):
    """A Slack ``ok: false`` answer, with Slack's error code kept for programmatic handling."""

    def __init__(
        self, message: str, *, code: str, item: str = "", retry_after: float | None = None, needed: str = ""
    ) -> None:
        super().__init__(message, item=item, retry_after=retry_after)
        self.code = code
        self.needed = needed  # for missing_scope: the scope(s) Slack said the method needs


def _connector_error(method: str, exc: SlackApiError) -> SlackMethodError:
    response = exc.response
    data = response.data if isinstance(response.data, dict) else {}
    status = getattr(response, "status_code", 0)
    code = str(data.get("error") or ("ratelimited" if status == 429 else f"http_{status}"))
    retry_after = None
    if status == 429:
        retry_after = parse_retry_after(_header(response.headers or {}, "retry-after")) or 1.0
    message = _USER_MESSAGES.get(code, f"Slack API error in {method}: {code}")
    if code == "missing_scope" and data.get("needed"):
        message += f" ({data['needed']})"
    needed = str(data.get("needed") or "") if code == "missing_scope" else ""
    return SlackMethodError(message, code=code, item=method, retry_after=retry_after, needed=needed)
