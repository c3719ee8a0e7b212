"""Build a ``ConfluenceConnector`` from a stored connector instance (registered in settings)."""

from __future__ import annotations

from typing import Any

from connectors.confluence.client import MEDIA_HOST
from connectors.confluence.sync import ConfluenceConnector, ConfluenceSettings
from connectors.runtime import Outbound


def build(instance: Any, credentials: dict[str, Any], outbound: Outbound) -> ConfluenceConnector:
    cfg = instance.config
    site_url = str(cfg["site_url"]).rstrip("/")
    settings = ConfluenceSettings(
        site_url=site_url,
        email=str(credentials.get("email", "")),
        api_token=str(credentials.get("api_token", "")),
        space_keys=tuple(cfg.get("space_keys") or ()),
        include_blogposts=bool(cfg.get("include_blogposts", True)),
        include_attachments=bool(cfg.get("include_attachments", True)),
        page_size=int(cfg.get("page_size", 100)),
        cql_timezone=str(cfg.get("cql_timezone", "UTC")),
    )
    # The media host serves attachment downloads after a redirect from the site.
    session = outbound.session([site_url], extra_hosts=[MEDIA_HOST])
    return ConfluenceConnector(settings, session=session)
