"""SharePoint Online connector (Microsoft Graph v1.0, app-only)."""

from connectors.sharepoint.client import DeltaGone, GraphClient, NotFound
from connectors.sharepoint.sync import SharePointConfig, SharePointConnector

__all__ = [
    "DeltaGone",
    "GraphClient",
    "NotFound",
    "SharePointConfig",
    "SharePointConnector",
]
