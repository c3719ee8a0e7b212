"""SlackClient against the fake Web API: 429 handling, pagination, errors."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from slack_sdk import WebClient
from slack_sdk.http_retry.builtin_handlers import RateLimitErrorRetryHandler

from connectors.base import ConnectorError
from connectors.slack.client import HistoryPacing, SlackClient
from core.http import parse_retry_after
from tests.connectors.slack.fake_slack import TOKEN, FakeSlackServer


@pytest.fixture
def server() -> Iterator[FakeSlackServer]:
    with FakeSlackServer() as srv:
        yield srv


def test_a_429_with_a_fractional_retry_after_is_waited_out_then_retried(server: FakeSlackServer) -> None:
    client = SlackClient(TOKEN, base_url=server.base_url, retry_jitter_s=0.05)
    client.join("C0PROJ")  # a bot token reads only channels the app is in
    server.fake.rate_limit_next("conversations.history", retry_after="0.5")

    page = client.history_page("C0PROJ")

    (limited_at, _, first_status), (retried_at, _, second_status) = server.fake.calls_to("conversations.history")
    assert (first_status, second_status) == (429, 200)
    assert 0.5 <= retried_at - limited_at < 1.0  # honoured, and jitter stays small
    assert 0.5 <= client.rate_limit_handler.waits[0] <= 0.55
    assert [m["ts"] for m in page.items] == ["1717000700.001000", "1717000600.000900"]


def test_the_sdk_builtin_rate_limit_handler_cannot_parse_a_fractional_retry_after(
    server: FakeSlackServer,
) -> None:
    # Why connectors.slack.client has its own handler: slack-sdk does int("0.5").
    web = WebClient(token=TOKEN, base_url=server.base_url, retry_handlers=[RateLimitErrorRetryHandler()])
    server.fake.rate_limit_next("auth.test", retry_after="0.5")

    with pytest.raises(ValueError):
        web.auth_test()


def test_a_429_that_outlasts_the_retries_becomes_a_connector_error_with_retry_after(
    server: FakeSlackServer,
) -> None:
    client = SlackClient(TOKEN, base_url=server.base_url, max_rate_limit_retries=1, retry_jitter_s=0.0)
    server.fake.rate_limit_next("conversations.history", retry_after="0.1")
    server.fake.rate_limit_next("conversations.history", retry_after="0.2", nth=2)

    with pytest.raises(ConnectorError) as caught:
        client.history_page("C0PROJ")

    assert caught.value.retry_after == pytest.approx(0.2)


def test_cursor_pagination_follows_next_cursor_to_the_end(server: FakeSlackServer) -> None:
    client = SlackClient(TOKEN, base_url=server.base_url, page_size=2)

    users = [u["id"] for u in client.iter_users()]

    assert len(users) == 7
    assert len(server.fake.calls_to("users.list")) == 4  # 2 + 2 + 2 + 1


def test_history_pages_use_the_paced_page_size(server: FakeSlackServer) -> None:
    client = SlackClient(TOKEN, base_url=server.base_url, pacing=HistoryPacing(page_size=15))

    client.history_page("C0GENERAL")

    ((_, params, _),) = server.fake.calls_to("conversations.history")
    assert params["limit"] == "15"


def test_slack_error_codes_become_readable_connector_errors(server: FakeSlackServer) -> None:
    client = SlackClient(TOKEN, base_url=server.base_url)

    with pytest.raises(ConnectorError, match="not found") as caught:
        client.conversation_info("C0NOPE")
    assert caught.value.code == "channel_not_found"  # type: ignore[attr-defined]


def test_an_unreachable_server_is_a_connector_error_not_a_crash() -> None:
    with FakeSlackServer() as srv:
        base_url = srv.base_url
    client = SlackClient(TOKEN, base_url=base_url, timeout_s=2)

    with pytest.raises(ConnectorError, match="Could not reach Slack"):
        client.auth_test()


@pytest.mark.parametrize(
    ("header", "seconds"),
    # RFC 9110 §10.2.3: delay-seconds is non-negative, so "-3" is no hint (the caller's own backoff applies).
    [("0.5", 0.5), ("30", 30.0), (" 2 ", 2.0), ("-3", None), ("soon", None), (None, None), ("nan", None)],
)
def test_retry_after_values_parse_as_fractional_seconds(header: str | None, seconds: float | None) -> None:
    assert parse_retry_after(header) == seconds


def test_retry_after_as_an_http_date_is_the_time_remaining() -> None:
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:30 GMT", now=1445412500.0) == pytest.approx(10.0)
