"""Slack Events API: request signing and event -> sync operations, as pure functions.

The webhook view (not part of this package) should:

1. read the raw body *before* parsing it and call ``verify_signature`` with the
   ``X-Slack-Request-Timestamp`` / ``X-Slack-Signature`` headers; answer 401 on False;
2. call ``handle_event``; for ``url_verification`` answer the challenge;
3. otherwise store the payload in the tenant's event inbox keyed by
   ``EventResult.dedupe_key`` (``event_id``) and answer 200 within 3 seconds:
   Slack retries unanswered deliveries (``X-Slack-Retry-Num``), so the same
   ``event_id`` can arrive more than once and must be recognised;
4. let ``SlackConnector.incremental_sync`` drain the inbox, which re-runs
   ``handle_event`` with a full ``WorkspaceContext`` and refreshes memberships.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from connectors.base import DeleteDocument, SyncOp, UpsertDocument
from connectors.slack.mapping import (
    ChannelInfo,
    WorkspaceContext,
    message_external_id,
    message_to_document,
    source_version,
)

MAX_SIGNING_SECRETS = 2  # the current secret and, during a rotation, the previous one
MAX_CLOCK_SKEW_S = 300  # Slack's documented five-minute replay window
SIGNATURE_VERSION = "v0"

# Channel lifecycle events whose only safe reaction is "ask Slack who is in the channel now".
# group_* are the private-channel variants; *_deleted and *_left make conversations.members
# fail, which the connector turns into an empty (fail-closed) member list.
MEMBERSHIP_EVENTS = frozenset(
    {
        "member_joined_channel",
        "member_left_channel",
        "channel_created",
        "channel_archive",
        "channel_unarchive",
        "channel_deleted",
        "channel_left",
        "channel_rename",
        "group_archive",
        "group_unarchive",
        "group_deleted",
        "group_left",
        "group_open",
        "group_close",
        "group_rename",
    }
)
# The user directory changed: guests promoted/demoted, accounts deactivated, new members.
WORKSPACE_EVENTS = frozenset({"team_join", "user_change"})
# Message subtypes that announce a membership change (often withheld; member_* events are primary).
MEMBERSHIP_MESSAGE_SUBTYPES = frozenset({"channel_join", "channel_leave", "group_join", "group_leave"})
# Message subtypes that flip a channel between public and private: every stored ACL is stale.
PRIVACY_MESSAGE_SUBTYPES = frozenset({"channel_convert_to_private", "channel_convert_to_public"})


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """``v0=<hex HMAC-SHA256 of "v0:{timestamp}:{raw body}">``, as Slack computes it."""
    base = f"{SIGNATURE_VERSION}:{timestamp}:".encode() + body
    return f"{SIGNATURE_VERSION}=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


def verify_signature(secrets: Sequence[str], timestamp: str, body: bytes, signature: str, now: float) -> bool:
    """True iff ``signature`` was made with one of ``secrets`` and ``timestamp`` is within 5 minutes of ``now``.

    Up to two secrets are accepted so a signing-secret rotation needs no downtime.  Every
    secret is checked (no early exit) and compared in constant time.
    """
    usable = [s for s in secrets if s]
    if not usable:
        return False
    if len(usable) > MAX_SIGNING_SECRETS:
        raise ValueError(f"at most {MAX_SIGNING_SECRETS} signing secrets (current and previous)")
    # The length cap comes first: int() of a string over 4,300 digits raises instead of failing.
    if not timestamp or len(timestamp) > 20 or not timestamp.isascii() or not timestamp.isdigit():
        return False
    if abs(now - int(timestamp)) > MAX_CLOCK_SKEW_S:
        return False  # a replay, or a clock we cannot trust
    if not isinstance(signature, str) or not signature.isascii():
        return False
    given = signature.encode()
    matched = False
    for secret in usable:
        matched |= hmac.compare_digest(sign(secret, timestamp, body).encode(), given)
    return matched


@dataclass(frozen=True)
class EventResult:
    """What one Events API delivery means for Cairn.

    ``ops`` need no further Slack calls.  ``refresh_channels`` / ``refresh_workspace``
    ask the connector to re-read a membership from Slack (events say *that* membership
    changed, and Slack's current member list is the only source of truth for *what* it is).
    """

    kind: Literal["url_verification", "event", "ignored"]
    dedupe_key: str | None = None
    challenge: str | None = None
    team_id: str = ""
    ops: tuple[SyncOp, ...] = ()
    refresh_channels: tuple[str, ...] = ()
    refresh_workspace: bool = False
    reacl_channels: tuple[str, ...] = ()  # privacy flipped: re-send the ACL of every message
    reason: str = ""


def event_channel_id(event: Mapping[str, Any]) -> str | None:
    channel = event.get("channel")
    if isinstance(channel, Mapping):  # channel_created / *_rename carry a channel object
        channel = channel.get("id")
    if channel is None:
        channel = event.get("channel_id")
    return str(channel) if channel else None


def handle_event(payload: Mapping[str, Any], context: WorkspaceContext | None = None) -> EventResult:
    """Map one Events API payload (already signature-checked) to an ``EventResult``.

    ``context`` supplies channel names/privacy, user names and the workspace domain; without
    it, names fall back to ids and a channel of unknown privacy is treated as private.
    """
    outer_type = payload.get("type")
    if outer_type == "url_verification":
        return EventResult(kind="url_verification", challenge=str(payload.get("challenge", "")))
    dedupe_key = str(payload["event_id"]) if payload.get("event_id") else None
    team_id = str(payload.get("team_id") or "")
    if outer_type != "event_callback" or not isinstance(payload.get("event"), Mapping):
        return EventResult(kind="ignored", dedupe_key=dedupe_key, team_id=team_id, reason=f"type {outer_type}")
    event: Mapping[str, Any] = payload["event"]
    ctx = context or WorkspaceContext(team_id=team_id)
    inner_type = event.get("type")

    def result(**kwargs: Any) -> EventResult:
        return EventResult(kind="event", dedupe_key=dedupe_key, team_id=team_id, **kwargs)

    def ignored(reason: str) -> EventResult:
        return EventResult(kind="ignored", dedupe_key=dedupe_key, team_id=team_id, reason=reason)

    if inner_type in MEMBERSHIP_EVENTS:
        channel_id = event_channel_id(event)
        return result(refresh_channels=(channel_id,)) if channel_id else ignored(f"{inner_type} without channel")
    if inner_type in WORKSPACE_EVENTS:
        return result(refresh_workspace=True)
    if inner_type != "message":
        return ignored(f"event {inner_type}")

    channel_id = event_channel_id(event)
    if not channel_id:
        return ignored("message without channel")
    if event.get("channel_type") in ("im", "mpim"):
        return ignored("direct messages are not indexed")
    channel = _channel(channel_id, event, ctx)
    subtype = event.get("subtype")

    if subtype == "message_deleted":
        deleted_ts = event.get("deleted_ts") or (event.get("previous_message") or {}).get("ts")
        if not deleted_ts:
            return ignored("message_deleted without deleted_ts")
        return result(ops=(DeleteDocument(message_external_id(channel_id, str(deleted_ts))),))

    if subtype == "message_changed":
        message = event.get("message") or {}
        if not message.get("ts"):
            return ignored("message_changed without message")
        external_id = message_external_id(channel_id, str(message["ts"]))
        if message.get("subtype") == "tombstone":
            # A deleted thread parent stays as a tombstone while replies exist: gone for good.
            return result(ops=(DeleteDocument(external_id),))
        doc = message_to_document(message, channel, ctx)
        if doc is None:
            # Edited into something that is not content (e.g. text removed): drop what we had, but
            # only up to this version so an older event delivered late cannot resurrect it.
            return result(ops=(DeleteDocument(external_id, source_version=source_version(message)),))
        return result(ops=(UpsertDocument(doc),))

    if subtype in MEMBERSHIP_MESSAGE_SUBTYPES:
        return result(refresh_channels=(channel_id,))
    if subtype in PRIVACY_MESSAGE_SUBTYPES:
        return result(refresh_channels=(channel_id,), reacl_channels=(channel_id,))

    doc = message_to_document(event, channel, ctx)
    if doc is None:
        return ignored(f"not content (subtype {subtype})")
    return result(ops=(UpsertDocument(doc),))


def _channel(channel_id: str, event: Mapping[str, Any], ctx: WorkspaceContext) -> ChannelInfo:
    known = ctx.channels.get(channel_id)
    if known is not None:
        return known
    # Only an explicit "channel" (public) relaxes the ACL; anything unknown is treated as private.
    return ChannelInfo(id=channel_id, name=channel_id, is_private=event.get("channel_type") != "channel")


class EventInbox(Protocol):
    """Verified payloads stored by the webhook view, read back in arrival order."""

    def read_after(self, position: int | None) -> Iterable[tuple[int, Mapping[str, Any]]]: ...


class InMemoryEventInbox:
    """A list-backed ``EventInbox`` (development, tests, and a reference for the DB-backed one)."""

    def __init__(self, payloads: Iterable[Mapping[str, Any]] = ()) -> None:
        self._items: list[Mapping[str, Any]] = list(payloads)

    def append(self, payload: Mapping[str, Any]) -> int:
        self._items.append(payload)
        return len(self._items) - 1

    def read_after(self, position: int | None) -> Iterable[tuple[int, Mapping[str, Any]]]:
        start = 0 if position is None else position + 1
        return [(i, self._items[i]) for i in range(start, len(self._items))]
