"""Slack Web API calls the bot makes (chat.postMessage, chat.postEphemeral, conversations.members, users.info).

``api_factory`` is the documented swap point for tests and alternative transports.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from connectors.base import ConnectorError
from connectors.runtime import Outbound, bounded_sleep
from connectors.slack.client import SLACK_API_URL, SlackClient, SlackMethodError, parse_retry_after
from core.crypto import decrypt_json

log = logging.getLogger(__name__)

MAX_CHANNEL_MEMBERS = 1000  # larger audiences are refused in-channel (offer ephemeral instead)


class SlackApi:
    """The four Web API methods the bot uses, through the connector's rate-limit-aware client."""

    def __init__(self, instance: Any) -> None:

        creds = decrypt_json(instance.credentials_encrypted)
        base_url = str(instance.config.get("base_url") or SLACK_API_URL)
        Outbound.for_instance(instance).check_url(base_url)
        # bounded_sleep waits out a short Retry-After in-process and raises RateLimited for a
        # long one, which the task turns into a Celery retry with that countdown.
        self.client = SlackClient(str(creds.get("bot_token") or creds.get("token") or ""), base_url=base_url,
                                  sleep=bounded_sleep)  # fmt: skip

    def _post(self, method: str, body: dict[str, Any]) -> None:
        """chat.* with a JSON body (blocks do not belong in a query string); same 429 handling."""
        from slack_sdk.errors import SlackApiError, SlackClientError

        try:
            self.client.web.api_call(method, json={k: v for k, v in body.items() if v is not None})
        except SlackApiError as exc:
            status = getattr(exc.response, "status_code", 0)
            data = exc.response.data if isinstance(exc.response.data, dict) else {}
            retry = None
            if status == 429:
                retry = parse_retry_after((exc.response.headers or {}).get("retry-after")
                                          or (exc.response.headers or {}).get("Retry-After")) or 1.0  # fmt: skip
            code = str(data.get("error") or f"http_{status}")
            raise SlackMethodError(
                f"Slack {method} failed: {code}", code=code, item=method, retry_after=retry
            ) from None
        except (SlackClientError, OSError) as exc:
            raise ConnectorError(f"Could not reach Slack ({method}): {type(exc).__name__}", item=method) from None

    def post_message(self, channel: str, text: str, blocks: list[dict[str, Any]], thread_ts: str | None) -> None:
        self._post("chat.postMessage", {"channel": channel, "text": text, "blocks": blocks, "thread_ts": thread_ts,
                                        "unfurl_links": False, "unfurl_media": False})  # fmt: skip

    def post_ephemeral(self, channel: str, user: str, text: str, blocks: list[dict[str, Any]] | None = None,
                       thread_ts: str | None = None) -> None:  # fmt: skip
        self._post("chat.postEphemeral", {"channel": channel, "user": user, "text": text, "blocks": blocks,
                                          "thread_ts": thread_ts})  # fmt: skip

    def members(self, channel: str) -> list[str]:
        out: list[str] = []
        for member in self.client.iter_members(channel):
            out.append(member)
            if len(out) > MAX_CHANNEL_MEMBERS:
                break
        return out

    def user_info(self, user: str) -> dict[str, Any]:
        return self.client.user_info(user)


ApiFactory = Callable[[Any], SlackApi]


api_factory: ApiFactory = SlackApi  # tests and alternative transports may swap this
