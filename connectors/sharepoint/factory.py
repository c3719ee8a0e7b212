"""Build a ``SharePointConnector`` from a stored connector instance (registered in settings)."""

from __future__ import annotations

from typing import Any

from connectors.runtime import Outbound, bounded_sleep
from connectors.sharepoint.client import AUTHORITY_HOST, GRAPH_BASE_URL
from connectors.sharepoint.sync import SharePointConfig, SharePointConnector


def build(instance: Any, credentials: dict[str, Any], outbound: Outbound) -> SharePointConnector:
    cfg = instance.config
    graph = str(cfg.get("graph_base_url") or GRAPH_BASE_URL)
    authority = str(cfg.get("authority_host") or AUTHORITY_HOST)
    config = SharePointConfig(
        tenant_id=str(cfg["tenant_id"]),
        client_id=str(cfg["client_id"]),
        client_secret=str(credentials.get("client_secret", "")),
        site_ids=tuple(cfg.get("site_ids") or ()),
        graph_base_url=graph,
        authority_host=authority,
        include_lists=bool(cfg.get("include_lists", True)),
        include_pages=bool(cfg.get("include_pages", True)),
        site_group_members={k: tuple(v) for k, v in (cfg.get("site_group_members") or {}).items()},
    )
    session = outbound.session([graph, authority], max_response_bytes=110 * 1024 * 1024)
    return SharePointConnector(config, session=session, sleep=bounded_sleep)
