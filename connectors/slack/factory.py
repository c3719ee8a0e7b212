"""Build a ``SlackConnector`` from a stored connector instance (registered in settings).

The Slack SDK does its own HTTP; the base URL is still checked with ``core.http`` rules
(public only, unless the operator allowed the instance a private address).
"""

from __future__ import annotations

from typing import Any

from connectors.inbox import DbEventInbox
from connectors.runtime import Outbound, bounded_sleep
from connectors.slack.client import DEFAULT_PACING, NON_MARKETPLACE_PACING, SLACK_API_URL, SlackClient
from connectors.slack.sync import SlackConnector


def build(instance: Any, credentials: dict[str, Any], outbound: Outbound) -> SlackConnector:
    cfg = instance.config
    base_url = str(cfg.get("base_url") or SLACK_API_URL)
    outbound.check_url(base_url)
    pacing = NON_MARKETPLACE_PACING if cfg.get("non_marketplace") else DEFAULT_PACING
    client = SlackClient(
        str(credentials.get("token", "")),
        base_url=base_url,
        pacing=pacing,
        page_size=int(cfg.get("page_size", 200)),
        sleep=bounded_sleep,
        ca_file=outbound.tls_ca_file,
    )
    return SlackConnector(
        client,
        team_id=cfg.get("team_id") or None,
        workspace_domain=cfg.get("workspace_domain") or None,
        inbox=DbEventInbox(instance.tenant_id, instance.pk),
        include_bot_messages=bool(cfg.get("include_bot_messages", False)),
    )


def signing_secrets(credentials: dict[str, Any]) -> list[str]:
    """The current signing secret and, during a rotation, the previous one."""
    return [s for s in (credentials.get("signing_secret"), credentials.get("previous_signing_secret")) if s][:2]
