"""Slack connector: channel messages (public and private) with channel-level permissions.

Entry point: ``connectors.slack.sync.SlackConnector``; webhook helpers in
``connectors.slack.events``.  See README.md in this folder.
"""

from connectors.slack.client import NON_MARKETPLACE_PACING, HistoryPacing, SlackClient
from connectors.slack.events import EventResult, handle_event, verify_signature
from connectors.slack.sync import SlackConnector

__all__ = [
    "NON_MARKETPLACE_PACING",
    "EventResult",
    "HistoryPacing",
    "SlackClient",
    "SlackConnector",
    "handle_event",
    "verify_signature",
]
