"""``SlackConnector``: the ``Connector`` for one Slack workspace.

Events are the primary path (``incremental_sync`` drains the event inbox); the
history backfill (``full_sync``) is slow under the 2025 limits for
non-Marketplace apps, so it checkpoints after every message and resumes
mid-channel and mid-thread.

Full-sync checkpoint, per channel::

    {"channels": {"C1": {"cursor": <history cursor of the page being read or null>,
                         "oldest_ts": <ts of the oldest message already handled>,
                         "thread": {"ts": <parent>, "cursor": ..., "last_ts": ...} | null,
                         "done": bool}}}

History is read newest -> oldest, so on resume everything at or above ``oldest_ts``
is skipped; if Slack no longer accepts the cursor, the walk restarts from
``latest=oldest_ts`` instead.  Start a *new* full sync from ``{}``.
"""

from __future__ import annotations

import copy
from collections import deque
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import urlparse

from connectors.base import Checkpoint, ConnectorError, SetGroupMembers, SyncOp, UpdateAcl, UpsertDocument
from connectors.slack.client import SlackClient, SlackMethodError
from connectors.slack.events import EventInbox, event_channel_id, handle_event
from connectors.slack.mapping import (
    ChannelInfo,
    WorkspaceContext,
    has_thread,
    is_content_message,
    is_reply,
    message_external_id,
    message_to_document,
    ts_to_micros,
)
from connectors.slack.permissions import (
    channel_acl,
    channel_members_op,
    display_name,
    external_identity_op,
    identity_op,
    is_external,
    workspace_members_op,
)

# Errors meaning "this channel is not (or no longer) visible to the app": skip its history,
# and treat its membership as empty, because we can no longer prove who may read it.
_GONE = frozenset({"channel_not_found", "not_in_channel", "is_archived_and_not_member", "access_denied"})


def _reason(exc: SlackMethodError) -> str:
    """``missing_scope: channels:join`` style: the code, and the scope Slack said it needed."""
    return f"{exc.code}: {exc.needed}" if exc.needed else exc.code


class SlackConnector:
    kind = "slack"

    def __init__(
        self,
        client: SlackClient,
        *,
        team_id: str | None = None,
        workspace_domain: str | None = None,
        inbox: EventInbox | None = None,
        include_bot_messages: bool = False,
        channel_types: str = "public_channel,private_channel",
        dedupe_window: int = 2000,
    ) -> None:
        self.client = client
        self.inbox = inbox
        self.include_bot_messages = include_bot_messages
        self.channel_types = channel_types
        self.dedupe_window = dedupe_window
        self._team_id = team_id
        self._domain = workspace_domain
        self._team_name = ""
        self._users: dict[str, dict[str, Any]] | None = None
        self._channels: dict[str, ChannelInfo] | None = None
        self._context_cache: WorkspaceContext | None = None  # rebuilt only when a directory changes
        self._not_member: set[str] = set()  # listed channels whose ``is_member`` is false

    # -- Connector ------------------------------------------------------------------------------

    def test_connection(self) -> None:
        data = self.client.auth_test()
        if self._team_id and data.get("team_id") != self._team_id:
            raise ConnectorError("This Slack token belongs to a different workspace than the one configured.")
        self._remember_team(data)

    def full_sync(self, checkpoint: Checkpoint) -> Iterator[tuple[SyncOp, Checkpoint]]:
        cp: dict[str, Any] = copy.deepcopy(dict(checkpoint or {}))
        states: dict[str, Any] = cp.setdefault("channels", {})
        context = self._context(refresh=True)
        skipped: dict[str, str] = cp.setdefault("skipped", {})
        channels = sorted(context.channels.values(), key=lambda c: c.id)
        # Joins first, so every op of the run carries the complete skip list in its checkpoint
        # (the connector's status shows SyncState.checkpoint["skipped"]); a skip is not fatal.
        for channel in channels:
            state = states.setdefault(channel.id, _new_channel_state())
            if state["done"]:
                continue
            reason = self._ensure_member(channel)
            if reason is not None:
                skipped[channel.id] = f"#{channel.name}: {reason}"
                state.update(cursor=None, thread=None, done=True)
            else:
                skipped.pop(channel.id, None)
        for channel in channels:
            state = states[channel.id]
            if not state["done"]:
                yield from self._backfill_channel(channel, context, cp, state)

    def incremental_sync(self, checkpoint: Checkpoint) -> Iterator[tuple[SyncOp, Checkpoint]]:
        if self.inbox is None:
            return
        cp: dict[str, Any] = copy.deepcopy(dict(checkpoint or {}))
        seen: deque[str] = deque(cp.get("seen_event_ids", []), maxlen=self.dedupe_window)
        team_id = self._team()
        for position, payload in self.inbox.read_after(cp.get("inbox_position")):
            ops: list[SyncOp] = []
            event_id = payload.get("event_id")
            if event_id and event_id in seen:
                pass  # a retried delivery we already applied
            elif payload.get("team_id") not in (None, team_id):
                pass  # another tenant's workspace: never let it touch this one
            else:
                ops = self._ops_for_event(payload)
            if event_id and event_id not in seen:
                seen.append(str(event_id))
            before = copy.deepcopy(cp)
            cp["inbox_position"] = position
            cp["seen_event_ids"] = list(seen)
            # Only the event's last op carries the advanced position: a crash in between replays
            # the whole event, which is safe because every op is idempotent.
            for i, op in enumerate(ops):
                yield op, (copy.deepcopy(cp) if i == len(ops) - 1 else before)

    def permission_sync(self, checkpoint: Checkpoint) -> Iterator[tuple[SyncOp, Checkpoint]]:
        cp: dict[str, Any] = copy.deepcopy(dict(checkpoint or {}))
        users = self._load_users(refresh=True)
        team_id = self._team()
        if not cp.get("workspace_done"):
            for user in sorted(users.values(), key=lambda u: str(u["id"])):
                identity = identity_op(user)
                if identity is not None:
                    yield identity, copy.deepcopy(cp)
            cp["workspace_done"] = True
            yield workspace_members_op(team_id, users.values(), team_name=self._team_name), copy.deepcopy(cp)
        done = set(cp.get("channels_done", []))
        for channel in sorted(self._load_channels(refresh=True).values(), key=lambda c: c.id):
            if channel.id in done:
                continue
            ops = self._channel_member_ops(channel.id)
            done.add(channel.id)
            before = copy.deepcopy(cp)
            cp["channels_done"] = sorted(done)
            for i, op in enumerate(ops):
                yield op, (copy.deepcopy(cp) if i == len(ops) - 1 else before)

    def slim_listing(self) -> Iterator[str]:
        context = self._context(refresh=True)
        for channel in sorted(context.channels.values(), key=lambda c: c.id):
            # A channel the app cannot join lists nothing, like one it was removed from (_GONE):
            # nobody can be proven a reader, so its messages leave the index.
            if self._ensure_member(channel) is None:
                yield from self._channel_external_ids(channel)

    def _channel_external_ids(self, channel: ChannelInfo) -> Iterator[str]:
        cursor: str | None = None
        while True:
            try:
                page = self.client.history_page(channel.id, cursor=cursor)
            except SlackMethodError as exc:
                if exc.code in _GONE:
                    return
                raise
            for message in page.items:
                if is_reply(message):
                    continue  # a thread_broadcast copy; listed with its thread
                if self._is_content(message):
                    yield message_external_id(channel.id, str(message["ts"]))
                if has_thread(message):
                    for reply in self.client.iter_replies(channel.id, str(message["ts"])):
                        if is_reply(reply) and self._is_content(reply):
                            yield message_external_id(channel.id, str(reply["ts"]))
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    # -- full sync internals ----------------------------------------------------------------------

    def _ensure_member(self, channel: ChannelInfo) -> str | None:
        """Join a public channel the bot is not in (``conversations.join``, scope ``channels:join``);
        the reason it cannot read the channel otherwise, ``None`` when it can."""
        if channel.id not in self._not_member:
            return None
        if channel.is_private:
            return "not_in_channel: invite the app to this private channel"
        if channel.is_archived:
            return "is_archived: the app cannot join an archived channel"
        try:
            self.client.join(channel.id)
        except SlackMethodError as exc:
            if exc.retry_after is not None:
                raise
            return _reason(exc)
        self._not_member.discard(channel.id)
        return None

    def _backfill_channel(
        self, channel: ChannelInfo, context: WorkspaceContext, cp: dict[str, Any], state: dict[str, Any]
    ) -> Iterator[tuple[SyncOp, Checkpoint]]:
        if state.get("thread"):
            yield from self._backfill_thread(channel, context, cp, state)
        while True:
            try:
                page = self.client.history_page(
                    channel.id,
                    cursor=state["cursor"],
                    latest=None if state["cursor"] else state["oldest_ts"],
                )
            except SlackMethodError as exc:
                if exc.code == "invalid_cursor" and state["cursor"]:
                    state["cursor"] = None  # expired cursor: restart below oldest_ts instead
                    continue
                if exc.code in _GONE:
                    state.update(cursor=None, thread=None, done=True)
                    return
                raise
            oldest = ts_to_micros(state["oldest_ts"]) if state["oldest_ts"] else None
            for message in page.items:
                ts = str(message["ts"])
                if oldest is not None and ts_to_micros(ts) >= oldest:
                    continue  # handled before the restart
                state["oldest_ts"] = ts
                oldest = ts_to_micros(ts)
                if is_reply(message):
                    continue  # a thread_broadcast copy: indexed once, from its thread
                if has_thread(message):
                    state["thread"] = {"ts": ts, "cursor": None, "last_ts": None}
                doc = message_to_document(message, channel, context)
                if doc is not None:
                    yield UpsertDocument(doc), copy.deepcopy(cp)
                if state.get("thread"):
                    yield from self._backfill_thread(channel, context, cp, state)
            if not page.next_cursor:
                state.update(cursor=None, done=True)
                return
            state["cursor"] = page.next_cursor

    def _backfill_thread(
        self, channel: ChannelInfo, context: WorkspaceContext, cp: dict[str, Any], state: dict[str, Any]
    ) -> Iterator[tuple[SyncOp, Checkpoint]]:
        thread = state["thread"]
        while True:
            try:
                page = self.client.replies_page(channel.id, thread["ts"], cursor=thread["cursor"])
            except SlackMethodError as exc:
                if exc.code == "thread_not_found" or exc.code in _GONE:
                    break
                if exc.code == "invalid_cursor" and thread["cursor"]:
                    thread["cursor"] = None  # last_ts still filters what was already emitted
                    continue
                raise
            last = ts_to_micros(thread["last_ts"]) if thread["last_ts"] else None
            for reply in page.items:
                if not is_reply(reply):
                    continue  # the parent, repeated at the top of the page
                ts = str(reply["ts"])
                if last is not None and ts_to_micros(ts) <= last:
                    continue
                thread["last_ts"] = ts
                last = ts_to_micros(ts)
                doc = message_to_document(reply, channel, context)
                if doc is not None:
                    yield UpsertDocument(doc), copy.deepcopy(cp)
            if not page.next_cursor:
                break
            thread["cursor"] = page.next_cursor
        state["thread"] = None

    # -- incremental internals ----------------------------------------------------------------

    def _ops_for_event(self, payload: Mapping[str, Any]) -> list[SyncOp]:
        raw_event = payload.get("event")
        event: Mapping[str, Any] = raw_event if isinstance(raw_event, Mapping) else {}
        channel_id = event_channel_id(event)
        if channel_id and event.get("type") == "message":
            self._channel(channel_id)  # make sure the context knows its name and privacy
        result = handle_event(payload, self._context())
        ops: list[SyncOp] = list(result.ops)
        for refresh_id in result.refresh_channels:
            self._channel(refresh_id, refresh=True)  # name, privacy; a deleted channel keeps its last info
            ops.extend(self._channel_member_ops(refresh_id))
        for reacl_id in result.reacl_channels:
            ops.extend(self._reacl_channel(reacl_id))
        if result.refresh_workspace:
            users = self._load_users(refresh=True)
            user = event.get("user")
            if isinstance(user, Mapping):
                identity = identity_op(user)
                if identity is not None:
                    ops.append(identity)
            ops.append(workspace_members_op(self._team(), users.values(), team_name=self._team_name))
        return ops

    def _reacl_channel(self, channel_id: str) -> Iterator[SyncOp]:
        """``UpdateAcl`` for every message of a channel whose privacy flipped.

        Slow under history pacing (one history/replies page per call), which is why it runs
        only on the privacy-change message, never on ordinary membership events.
        """
        channel = self._channel(channel_id)
        if channel is None:
            return
        acl = channel_acl(channel.id, is_private=channel.is_private, team_id=self._team())
        for external_id in self._channel_external_ids(channel):
            yield UpdateAcl(external_id=external_id, acl=acl)

    def _channel_member_ops(self, channel_id: str) -> list[SyncOp]:
        """The channel's members, preceded by an identity for each Slack Connect member from
        another organisation (fetched with users.info), so an admin can map them."""
        members = self._channel_members(channel_id)
        team_id = self._team()
        users = self._load_users()
        external: list[SyncOp] = []
        for principal in members.member_principals:
            user = users.get(principal.removeprefix("slack:user:"))
            if user is not None and is_external(user, team_id):
                external.append(external_identity_op(user))
        return [*external, members]

    def _channel_members(self, channel_id: str) -> SetGroupMembers:
        channels = self._load_channels()
        name = channels[channel_id].name if channel_id in channels else ""
        try:
            member_ids = list(self.client.iter_members(channel_id))
        except SlackMethodError as exc:
            if exc.code not in _GONE:
                raise
            member_ids = []  # deleted, or the app was removed: nobody can be proven a member
        users = self._load_users()
        for uid in member_ids:
            if uid not in users:
                self._user(uid)
        return channel_members_op(channel_id, member_ids, self._load_users(), channel_name=name)

    # -- directory caches -----------------------------------------------------------------------

    def _team(self) -> str:
        if self._team_id is None or self._domain is None:
            self._remember_team(self.client.auth_test())
        assert self._team_id is not None
        return self._team_id

    def _remember_team(self, data: Mapping[str, Any]) -> None:
        self._team_id = self._team_id or str(data.get("team_id") or "")
        self._team_name = str(data.get("team") or self._team_name)
        if self._domain is None:
            host = urlparse(str(data.get("url") or "")).hostname or ""
            self._domain = host.removesuffix(".slack.com") if host.endswith(".slack.com") else ""

    def _load_users(self, refresh: bool = False) -> dict[str, dict[str, Any]]:
        if self._users is None or refresh:
            self._users = {str(u["id"]): dict(u) for u in self.client.iter_users()}
            self._context_cache = None
        return self._users

    def _user(self, user_id: str) -> dict[str, Any] | None:
        users = self._load_users()
        if user_id not in users:
            try:
                # Slack Connect members from other teams are not in users.list.
                users[user_id] = self.client.user_info(user_id)
                self._context_cache = None
            except SlackMethodError as exc:
                if exc.code not in ("user_not_found", "user_not_visible"):
                    raise
                return None
        return users[user_id]

    def _load_channels(self, refresh: bool = False) -> dict[str, ChannelInfo]:
        if self._channels is None or refresh:
            listed = list(self.client.iter_channels(types=self.channel_types))
            self._channels = {str(c["id"]): ChannelInfo.from_api(c) for c in listed}
            # Bot tokens get ``is_member`` on each conversation; absent means "not said": assume in.
            self._not_member = {str(c["id"]) for c in listed if c.get("is_member") is False}
            self._context_cache = None
        return self._channels

    def _channel(self, channel_id: str, refresh: bool = False) -> ChannelInfo | None:
        channels = self._load_channels()
        if channel_id not in channels or refresh:
            try:
                channels[channel_id] = ChannelInfo.from_api(self.client.conversation_info(channel_id))
                self._context_cache = None
            except SlackMethodError as exc:
                if exc.code not in _GONE:
                    raise
        return channels.get(channel_id)

    def _context(self, refresh: bool = False) -> WorkspaceContext:
        team_id = self._team()
        users = self._load_users(refresh)
        channels = self._load_channels(refresh)
        if self._context_cache is None:
            self._context_cache = WorkspaceContext(
                team_id=team_id,
                workspace_domain=self._domain or "",
                channels=dict(channels),
                user_names={uid: display_name(u) for uid, u in users.items()},
                include_bot_messages=self.include_bot_messages,
            )
        return self._context_cache

    def _is_content(self, message: Mapping[str, Any]) -> bool:
        return is_content_message(message, include_bot_messages=self.include_bot_messages)


def _new_channel_state() -> dict[str, Any]:
    return {"cursor": None, "oldest_ts": None, "thread": None, "done": False}
