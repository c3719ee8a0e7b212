"""Confluence Cloud connector: pages, blog posts and their attachments, with CNF permissions."""

from connectors.confluence.client import ConfluenceApiError, ConfluenceClient
from connectors.confluence.sync import ConfluenceConnector, ConfluenceSettings
from connectors.confluence.webhooks import WebhookEvent, WebhookRejected, parse_event, verify_secret

__all__ = [
    "ConfluenceApiError",
    "ConfluenceClient",
    "ConfluenceConnector",
    "ConfluenceSettings",
    "WebhookEvent",
    "WebhookRejected",
    "parse_event",
    "verify_secret",
]
