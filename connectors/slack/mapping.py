"""Slack message -> ``SourceDocument``.

One document per message: a top-level message and each thread reply are
separate documents (``msg:<channel>:<ts>``); a reply carries its thread in
``metadata`` (``thread_ts``, ``parent_external_id``).  See README.md for why
this was chosen over one document per thread.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from typing import Any

from connectors.slack.permissions import channel_acl
from retrieval.contracts import SourceDocument

Message = Mapping[str, Any]

# Subtypes that carry something a person wrote.  Everything else (channel_join,
# channel_leave, channel_topic, channel_purpose, channel_name, pinned_item,
# bot_message, tombstone, reminder_add, ...) is channel bookkeeping or bot noise.
CONTENT_SUBTYPES: frozenset[str | None] = frozenset({None, "", "thread_broadcast", "file_share", "me_message"})

TITLE_SNIPPET_CHARS = 80


@dataclass(frozen=True)
class ChannelInfo:
    id: str
    name: str
    is_private: bool
    is_archived: bool = False

    @classmethod
    def from_api(cls, channel: Mapping[str, Any]) -> ChannelInfo:
        return cls(
            id=str(channel["id"]),
            name=str(channel.get("name") or channel["id"]),
            # is_private is authoritative; is_group is the legacy flag for the same thing.
            is_private=bool(channel.get("is_private") or channel.get("is_group")),
            is_archived=bool(channel.get("is_archived")),
        )


@dataclass(frozen=True)
class WorkspaceContext:
    """What mapping needs to know beyond the message itself (a snapshot, so mapping stays pure)."""

    team_id: str
    workspace_domain: str = ""  # "acme" for https://acme.slack.com
    channels: Mapping[str, ChannelInfo] = field(default_factory=dict)
    user_names: Mapping[str, str] = field(default_factory=dict)
    include_bot_messages: bool = False

    @cached_property
    def channel_names(self) -> dict[str, str]:
        # Computed once per snapshot, not once per message.
        return {cid: info.name for cid, info in self.channels.items()}


def ts_to_micros(ts: str) -> int:
    """``"1355517523.000005"`` -> ``1355517523000005``, exactly (no float rounding)."""
    seconds, _, fraction = str(ts).partition(".")
    if not seconds.isdigit() or (fraction and not fraction.isdigit()):
        raise ValueError(f"not a Slack ts: {str(ts)[:40]!r}")
    return int(seconds) * 1_000_000 + int((fraction + "000000")[:6])


def ts_to_datetime(ts: str) -> datetime:
    micros = ts_to_micros(ts)
    return datetime.fromtimestamp(micros // 1_000_000, tz=UTC).replace(microsecond=micros % 1_000_000)


def message_external_id(channel_id: str, ts: str) -> str:
    return f"msg:{channel_id}:{ts}"


def permalink(workspace_domain: str, channel_id: str, ts: str, thread_ts: str | None = None) -> str:
    """The shape Slack's ``chat.getPermalink`` returns, built locally to save an API call per message."""
    host = f"https://{workspace_domain}.slack.com" if workspace_domain else "https://slack.com"
    url = f"{host}/archives/{channel_id}/p{ts.replace('.', '')}"
    if thread_ts and thread_ts != ts:
        url += f"?thread_ts={thread_ts}&cid={channel_id}"
    return url


def source_version(message: Message) -> int:
    """The edit time if edited, else the post time, in microseconds: grows with every edit."""
    edited = message.get("edited") or {}
    return ts_to_micros(str(edited.get("ts") or message["ts"]))


def is_reply(message: Message) -> bool:
    thread_ts = message.get("thread_ts")
    return bool(thread_ts) and thread_ts != message.get("ts")


def has_thread(message: Message) -> bool:
    """A thread parent (replies are fetched separately with ``conversations.replies``)."""
    return not is_reply(message) and (int(message.get("reply_count") or 0) > 0 or bool(message.get("latest_reply")))


def is_content_message(message: Message, *, include_bot_messages: bool = False) -> bool:
    if message.get("type", "message") != "message" or message.get("hidden"):
        return False
    subtype = message.get("subtype")
    if subtype == "bot_message" or message.get("bot_id"):
        return include_bot_messages and bool(str(message.get("text") or "").strip())
    if subtype not in CONTENT_SUBTYPES:
        return False
    return bool(str(message.get("text") or "").strip())


_ENTITY = re.compile(r"<([^<>]*)>")


def mrkdwn_to_text(
    text: str, *, user_names: Mapping[str, str] | None = None, channel_names: Mapping[str, str] | None = None
) -> str:
    """Slack mrkdwn entities to readable plain text.

    ``<@U1>`` -> ``@alice``, ``<#C1|general>`` -> ``#general``, ``<https://x|label>`` ->
    ``label (https://x)``, ``<!here>`` -> ``@here``; then ``&lt; &gt; &amp;`` are unescaped
    (Slack escapes exactly those three in message text).
    """
    users = user_names or {}
    channels = channel_names or {}

    def replace(match: re.Match[str]) -> str:
        body = match.group(1)
        target, _, label = body.partition("|")
        if target.startswith("@"):
            uid = target[1:]
            return "@" + (users.get(uid) or label or uid)
        if target.startswith("#"):
            cid = target[1:]
            return "#" + (label or channels.get(cid) or cid)
        if target.startswith("!"):
            command = target[1:]
            if command in ("here", "channel", "everyone"):
                return "@" + command
            if command.startswith("subteam^"):
                return label or "@" + command.partition("^")[2]
            # <!date^...|fallback> and anything newer: the label is Slack's own plain fallback.
            return label or ""
        if target.startswith("mailto:"):
            return label or target[len("mailto:") :]
        if label and label != target:
            return f"{label} ({target})"
        return target

    return html.unescape(_ENTITY.sub(replace, text)) if "<" in text or "&" in text else text


def _author(message: Message, user_names: Mapping[str, str]) -> str:
    user = message.get("user")
    if user:
        return user_names.get(str(user)) or str(user)
    profile = message.get("bot_profile") or {}
    return str(message.get("username") or profile.get("name") or message.get("bot_id") or "")


def message_to_document(message: Message, channel: ChannelInfo, context: WorkspaceContext) -> SourceDocument | None:
    """The document for one message, or ``None`` if it is not content (system message, bot noise, empty)."""
    if not is_content_message(message, include_bot_messages=context.include_bot_messages):
        return None
    ts = str(message["ts"])
    channel_names = context.channel_names
    if channel.id not in channel_names:
        channel_names = {**channel_names, channel.id: channel.name}
    text = mrkdwn_to_text(str(message.get("text") or ""), user_names=context.user_names, channel_names=channel_names)
    author = _author(message, context.user_names)
    thread_ts = str(message["thread_ts"]) if is_reply(message) else None

    first_line = text.strip().splitlines()[0] if text.strip() else ""
    snippet = first_line if len(first_line) <= TITLE_SNIPPET_CHARS else first_line[: TITLE_SNIPPET_CHARS - 1] + "…"
    edited = message.get("edited") or {}
    metadata = {"channel_id": channel.id, "team_id": context.team_id, "ts": ts}
    if message.get("user"):
        metadata["user_id"] = str(message["user"])
    if thread_ts:
        metadata["thread_ts"] = thread_ts
        metadata["parent_external_id"] = message_external_id(channel.id, thread_ts)
    elif has_thread(message):
        # reply_count is left out on purpose: it changes without an edit (same source_version).
        metadata["thread_ts"] = ts

    return SourceDocument(
        external_id=message_external_id(channel.id, ts),
        title=f"#{channel.name} — {author}: {snippet}" if author else f"#{channel.name}: {snippet}",
        url=permalink(context.workspace_domain, channel.id, ts, thread_ts),
        content=text.encode("utf-8"),
        media_type="text/plain",
        acl=channel_acl(channel.id, is_private=channel.is_private, team_id=context.team_id),
        source_version=source_version(message),
        container=f"#{channel.name}",
        author=author,
        created_at=ts_to_datetime(ts),
        updated_at=ts_to_datetime(str(edited.get("ts") or ts)),
        metadata=metadata,
    )
