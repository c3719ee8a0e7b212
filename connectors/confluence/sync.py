"""``ConfluenceConnector``: Confluence Cloud → sync operations (see ``connectors.base``).

Checkpoints (JSON, persisted by the caller after each applied op):

* full / permission sync walk ``spaces (sorted by key) × (page, blogpost)``; the
  checkpoint holds the space (id + index), the kind, the URL of the listing page
  being worked on (``cursor``; ``None`` for the first page) and how far into it we
  are (``offset`` + ``last_id``).  A restart re-reads that one listing page and
  skips what was finished, never re-fetching finished spaces or pages.  Ops of
  one content item carry the checkpoint *before* the item except the last, which
  carries the one after it, so a crash mid-item redoes that item (at-least-once).
  Then a ``principals`` phase emits ``SetGroupMembers`` + ``IdentitySeen``.
* incremental sync runs CQL ``lastmodified >= "<since minus overlap>"``; its
  checkpoint holds ``since``, ``run_started`` and the same cursor/offset.
* the last op of a finished run carries ``complete: True`` and ``since`` (the
  run's start), which the next incremental sync starts from.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import requests

from connectors.base import (
    Checkpoint,
    ConnectorError,
    DeleteDocument,
    IdentitySeen,
    SetGroupMembers,
    SyncOp,
    UpdateAcl,
    UpsertDocument,
)
from connectors.confluence.client import V2, Batch, ConfluenceApiError, ConfluenceClient, expanded_read_restriction
from connectors.confluence.mapping import attachment_document, content_document, external_id
from connectors.confluence.permissions import (
    Clause,
    build_acl,
    group_principal,
    restriction_clause,
    space_clause,
    user_principal,
)
from connectors.confluence.webhooks import WebhookEvent
from retrieval.contracts import Acl
from retrieval.extract import SUPPORTED_MEDIA_TYPES

log = logging.getLogger(__name__)

# Attachments of these media types are downloaded for their text (what retrieval.extract can read);
# every other attachment (images, archives, ...) is still indexed, by its metadata only, with its
# container's ACL, so a reader can find it and a non-reader cannot (issue 15).
DEFAULT_ATTACHMENT_MEDIA_TYPES: tuple[str, ...] = tuple(
    sorted(t for t in SUPPORTED_MEDIA_TYPES if t != "application/vnd.atlassian.storage+xml")
)
# Statuses under which Confluence says the item itself is gone from view (v2 ContentStatus).
_GONE_STATUSES = frozenset({"trashed", "deleted", "purged", "historical"})
# The listings a content walk reads (recorded in permission-walk checkpoints): v2 per space, or the v1
# listing with restrictions and ancestors expanded (``ConfluenceClient.acl_listing_batch``).
_V2_LISTING = "v2"
_ACL_LISTING = "v1-acl"


@dataclass(frozen=True)
class ConfluenceSettings:
    site_url: str  # https://<site>.atlassian.net (a trailing /wiki is accepted)
    email: str = ""  # account e-mail for basic auth with an API token
    api_token: str = ""
    space_keys: tuple[str, ...] = ()  # empty: every current space the account can see
    include_blogposts: bool = True
    include_attachments: bool = True
    attachment_media_types: tuple[str, ...] = DEFAULT_ATTACHMENT_MEDIA_TYPES
    max_attachment_bytes: int = 50 * 1024 * 1024
    page_size: int = 100
    # CQL compares minutes in the *querying account's* profile time zone and the index lags
    # a little, so look back a safety margin; re-upserting an unchanged version is a no-op.
    incremental_overlap: timedelta = timedelta(minutes=30)
    cql_timezone: str = "UTC"  # the API account's Confluence profile time zone
    initial_lookback: timedelta = timedelta(days=1)  # incremental run with no known "since"
    # Atlassian accounts sign in with a verified e-mail; managed by Atlassian, not the site.
    trust_atlassian_emails: bool = True


@dataclass
class _RunCache:
    """Per-run memo; never persisted (a resumed run simply re-reads what it needs)."""

    spaces_by_id: dict[str, dict[str, Any]] = field(default_factory=dict)
    space_clauses: dict[str, Clause] = field(default_factory=dict)
    restrictions: dict[str, Clause | None] = field(default_factory=dict)


_SENTINEL: Any = object()


def _checkpointed(ops: Iterable[SyncOp], before: Checkpoint, after: Checkpoint) -> Iterator[tuple[SyncOp, Checkpoint]]:
    """All ops of one item carry ``before`` except the last, which carries ``after``."""
    pending: Any = _SENTINEL
    try:
        for op in ops:
            if pending is not _SENTINEL:
                yield pending, dict(before)
            pending = op
    except Exception:
        # Hand over what was produced before the failure (still "before": the item gets redone).
        if pending is not _SENTINEL:
            yield pending, dict(before)
        raise
    if pending is not _SENTINEL:
        yield pending, dict(after)


def _finalised(stream: Iterable[tuple[SyncOp, Checkpoint]], final: Checkpoint) -> Iterator[tuple[SyncOp, Checkpoint]]:
    """Mark the run's last op with the completion checkpoint (one op of look-ahead)."""
    pending: Any = _SENTINEL
    try:
        for pair in stream:
            if pending is not _SENTINEL:
                yield pending
            pending = pair
    except Exception:
        # The held-back op is complete work: let the caller apply it before the error surfaces,
        # so a restart does not redo it.
        if pending is not _SENTINEL:
            yield pending
        raise
    if pending is not _SENTINEL:
        yield pending[0], dict(final)


def _resume_offset(items: list[dict[str, Any]], offset: int, last_id: str | None) -> int:
    # Prefer the id: if the listing page shifted since the crash, the count alone could skip an item.
    if last_id is not None:
        for idx, item in enumerate(items):
            if str(item.get("id")) == last_id:
                return idx + 1
    return max(0, min(offset, len(items)))


def _iso(value: datetime) -> str:
    return value.astimezone(UTC).isoformat()


def _parse_iso(value: object) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


class ConfluenceConnector:
    """Implements ``connectors.base.Connector`` for Confluence Cloud."""

    kind = "confluence"

    def __init__(
        self,
        settings: ConfluenceSettings,
        *,
        session: requests.Session | None = None,
        client: ConfluenceClient | None = None,
        now: Callable[[], datetime] | None = None,
    ) -> None:
        self.settings = settings
        self.client = client or ConfluenceClient(
            settings.site_url,
            session=session,
            email=settings.email,
            api_token=settings.api_token,
            page_size=settings.page_size,
        )
        self._now = now or (lambda: datetime.now(UTC))
        self._cache = _RunCache()
        self._acl_listing_available = True

    # ------------------------------------------------------------ protocol

    def full_sync(self, checkpoint: Checkpoint) -> Iterator[tuple[SyncOp, Checkpoint]]:
        yield from self._walk("full", checkpoint)

    def permission_sync(self, checkpoint: Checkpoint) -> Iterator[tuple[SyncOp, Checkpoint]]:
        """ACLs of every page and blog post (``UpdateAcl``, no bodies or downloads), then groups and identities.

        One v1 listing request per ``page_size`` items carries each item's read restriction and
        ancestors (``ConfluenceClient.acl_listing_batch``); a per-item request is made only for a
        restriction list that may be truncated and for ancestors not listed yet.  Attachments are
        updated from the index (``UpdateAcl.inherited_by_container``), and the applier queues an
        ACL event only where the ACL changed.
        """
        yield from self._walk("permissions", checkpoint)

    def incremental_sync(self, checkpoint: Checkpoint) -> Iterator[tuple[SyncOp, Checkpoint]]:
        self._cache = _RunCache()
        resuming = checkpoint.get("mode") == "incremental" and not checkpoint.get("complete")
        now = self._now()
        since = _parse_iso(checkpoint.get("since")) or (now - self.settings.initial_lookback)
        run_started = str(checkpoint.get("run_started")) if resuming else _iso(now)
        cql = self.cql_since(since - self.settings.incremental_overlap)
        base: Checkpoint = {"mode": "incremental", "since": _iso(since), "run_started": run_started}
        final: Checkpoint = {"mode": "incremental", "since": run_started, "complete": True}
        yield from _finalised(self._incremental_ops(cql, base, checkpoint if resuming else {}), final)

    def slim_listing(self) -> Iterator[str]:
        self._cache = _RunCache()
        for space in self._spaces():
            for kind in self._kinds():
                for item in self._iter_space_content(kind, str(space["id"])):
                    yield external_id(kind, str(item["id"]))
                    if self.settings.include_attachments:
                        for att in self.client.attachments(kind, str(item["id"])):
                            yield external_id("attachment", str(att["id"]))

    def test_connection(self) -> None:
        try:
            self.client.get_json(f"{V2}/spaces", {"limit": 1})
            if self.settings.space_keys:
                found = {str(s.get("key")) for s in self.client.spaces(self.settings.space_keys)}
                missing = sorted(set(self.settings.space_keys) - found)
                if missing:
                    raise ConnectorError(
                        "These Confluence spaces do not exist or the account cannot view them: " + ", ".join(missing)
                    )
        except ConfluenceApiError as exc:
            if exc.status in (401, 403):
                raise ConnectorError("Confluence rejected the e-mail/API token; check them and the site URL") from None
            if exc.status == 404:
                raise ConnectorError("No Confluence Cloud site answers at this URL") from None
            raise

    # ------------------------------------------------------------ webhooks

    def webhook_ops(self, event: WebhookEvent) -> Iterator[SyncOp]:
        """The ops for one verified, parsed webhook event (see ``webhooks.parse_event``).

        A webhook is a hint, not a fact: whatever its route or body says, the item is fetched
        from the REST API and only what Confluence answers decides the op.  A forged or replayed
        ``page_trashed`` for a live page re-upserts it (a no-op at the same version); a replayed
        ``page_updated`` carrying an old version cannot roll back, because the version indexed is
        the one the API returns.  The body's version and status are never used.
        """
        self._cache = _RunCache()
        ops = list(self._content_ops(event.kind, event.content_id))
        yield from ops
        confirmed_gone = any(
            isinstance(op, DeleteDocument) and op.external_id == external_id(event.kind, event.content_id) for op in ops
        )
        if confirmed_gone:
            # Best effort: a trashed page's attachments go too (the slim listing prunes any left over).
            try:
                for att in self.client.attachments(event.kind, event.content_id):
                    yield DeleteDocument(external_id("attachment", str(att["id"])))
            except ConnectorError:
                pass
            return
        if event.action == "refresh_tree" and event.kind == "page":
            # Descendants inherit the moved page's new ancestor path: recompute their ACLs.
            for desc in self.client.iterate(f"{V2}/pages/{event.content_id}/descendants", {"limit": 250}):
                if desc.get("type") == "page":
                    yield from self._content_ops("page", str(desc["id"]), acl_only=True)

    # ------------------------------------------------------------ walks

    def _walk(self, mode: str, checkpoint: Checkpoint) -> Iterator[tuple[SyncOp, Checkpoint]]:
        self._cache = _RunCache()
        resuming = checkpoint.get("mode") == mode and not checkpoint.get("complete")
        cp: Checkpoint = checkpoint if resuming else {}
        started_at = str(cp.get("started_at") or _iso(self._now()))
        final: Checkpoint = {"mode": mode, "complete": True, "since": started_at}
        yield from _finalised(self._walk_ops(mode, cp, started_at), final)

    def _walk_ops(self, mode: str, cp: Checkpoint, started_at: str) -> Iterator[tuple[SyncOp, Checkpoint]]:
        spaces = self._spaces()
        kinds = self._kinds()
        if cp.get("phase", "content") == "content":
            start_si = self._resume_space_index(cp, spaces)
            for si in range(start_si, len(spaces)):
                space = spaces[si]
                space_id = str(space["id"])
                resuming_space = bool(cp) and si == start_si and str(cp.get("space_id")) == space_id
                start_ki = kinds.index(cp["kind"]) if resuming_space and cp.get("kind") in kinds else 0
                for ki in range(start_ki, len(kinds)):
                    kind = kinds[ki]
                    # A cursor is only good for the listing that issued it (a checkpoint written by
                    # the v2 walk, or before the ACL listing existed, restarts this kind's listing).
                    here = (
                        resuming_space
                        and ki == start_ki
                        and cp.get("kind") == kind
                        and cp.get("listing", _V2_LISTING) == self._listing(mode)
                    )
                    cursor: str | None = cp.get("cursor") if here else None
                    offset = int(cp.get("offset", 0)) if here else 0
                    last_id: str | None = cp.get("last_id") if here else None
                    while True:
                        batch = self._listing_batch(mode, kind, space, cursor)
                        listing = self._listing(mode)
                        items = batch.results
                        base: Checkpoint = {
                            "mode": mode,
                            "phase": "content",
                            "started_at": started_at,
                            "space_index": si,
                            "space_id": space_id,
                            "kind": kind,
                            "cursor": cursor,
                        }
                        if listing != _V2_LISTING:
                            base["listing"] = listing
                        for idx in range(_resume_offset(items, offset, last_id), len(items)):
                            item = items[idx]
                            before = {
                                **base,
                                "offset": idx,
                                "last_id": str(items[idx - 1]["id"]) if idx else None,
                            }
                            after = {**base, "offset": idx + 1, "last_id": str(item["id"])}
                            if listing == _ACL_LISTING:
                                ops = self._listed_acl_ops(kind, item, space)
                            else:
                                ops = self._content_ops(
                                    kind, str(item["id"]), listed=item, acl_only=(mode == "permissions")
                                )
                            yield from _checkpointed(ops, before, after)
                        if not batch.next_url:
                            break
                        cursor, offset, last_id = batch.next_url, 0, None
        principals_cp: Checkpoint = {"mode": mode, "phase": "principals", "started_at": started_at}
        for op in self._principal_ops(spaces):
            yield op, dict(principals_cp)

    def _listing(self, mode: str) -> str:
        """Which listing a walk reads: the permission walk the v1 ACL listing while it answers."""
        return _ACL_LISTING if mode == "permissions" and self._acl_listing_available else _V2_LISTING

    def _listing_batch(self, mode: str, kind: str, space: Mapping[str, Any], cursor: str | None) -> Batch:
        if self._listing(mode) == _ACL_LISTING:
            try:
                return self.client.acl_listing_batch(kind, str(space.get("key") or ""), cursor)
            except ConfluenceApiError as exc:
                # The deprecated v1 listing withdrawn (404/410 on a listing's first page): walk the
                # v2 listing item by item, as before it existed.  A later page failing is an error.
                if cursor is not None or exc.status not in (404, 410):
                    raise
                log.warning("confluence: v1 content listing answered %s; permission walk falls back to v2", exc.status)
                self._acl_listing_available = False
        return self.client.content_batch(kind, str(space["id"]), cursor)

    def _listed_acl_ops(self, kind: str, item: Mapping[str, Any], space: Mapping[str, Any]) -> Iterator[SyncOp]:
        """The ACL of one item of the v1 ACL listing, from what the listing expanded.

        Its own read restriction and its ancestors come with it; an ancestor's restriction is the
        one its own listing entry carried (cached for the run) or, for one not listed yet, one
        request per ancestor per run.  A restriction list that may be cut short is read on its own
        (``expanded_read_restriction`` returns ``None``), and so are ancestors the listing did not
        expand, so nothing is granted on a partial answer.  Attachments are not listed: the applier
        gives the page's ACL to the attachments indexed under it (``inherited_by_container``).
        """
        content_id = str(item["id"])
        status = str(item.get("status") or "current")
        if status in _GONE_STATUSES:
            yield DeleteDocument(external_id(kind, content_id))
            return
        if status != "current":
            log.info("confluence: %s %s has status %r; left as indexed", kind, content_id, status)
            return
        own = expanded_read_restriction(item)
        if own is None:
            clause = self._restriction(content_id)
        else:
            clause = restriction_clause(own)
            self._cache.restrictions[content_id] = clause
        path: list[Clause | None] = []
        if kind == "page":
            listed = item.get("ancestors")
            ids = (
                [str(a["id"]) for a in listed if isinstance(a, Mapping) and a.get("id")]
                if isinstance(listed, list)
                else []
            )
            if not isinstance(listed, list) or len(ids) != len(listed):
                ids = [str(a["id"]) for a in self.client.ancestors(content_id)]
            path = [self._restriction(ancestor) for ancestor in ids]
        acl = build_acl(self._space_clause(str(space["id"])), [*path, clause])
        yield UpdateAcl(external_id(kind, content_id), acl, inherited_by_container=content_id)

    def _incremental_ops(self, cql: str, base: Checkpoint, cp: Checkpoint) -> Iterator[tuple[SyncOp, Checkpoint]]:
        cursor: str | None = cp.get("cursor")
        offset = int(cp.get("offset", 0))
        last_id: str | None = cp.get("last_id")
        seen: set[tuple[str, str]] = set()
        while True:
            batch = self.client.cql_batch(cql, cursor)
            items = batch.results
            for idx in range(_resume_offset(items, offset, last_id), len(items)):
                result = items[idx]
                before = {
                    **base,
                    "cursor": cursor,
                    "offset": idx,
                    "last_id": str(items[idx - 1]["id"]) if idx else None,
                }
                after = {**base, "cursor": cursor, "offset": idx + 1, "last_id": str(result["id"])}
                target = self._cql_target(result)
                if target is None or target in seen:
                    continue
                seen.add(target)
                yield from _checkpointed(self._content_ops(*target), before, after)
            if not batch.next_url:
                return
            cursor, offset, last_id = batch.next_url, 0, None

    def cql_since(self, moment: datetime) -> str:
        """CQL for content modified at or after ``moment`` (minute precision, account time zone)."""
        local = moment.astimezone(ZoneInfo(self.settings.cql_timezone))
        types = ["page"]
        if self.settings.include_blogposts:
            types.append("blogpost")
        if self.settings.include_attachments:
            types.append("attachment")
        cql = f'type in ({",".join(types)}) and lastmodified >= "{local.strftime("%Y-%m-%d %H:%M")}"'
        if self.settings.space_keys:
            keys = ",".join('"' + k.replace("\\", "").replace('"', "") + '"' for k in self.settings.space_keys)
            cql += f" and space in ({keys})"
        return cql + " order by lastmodified asc"

    def _cql_target(self, result: Mapping[str, Any]) -> tuple[str, str] | None:
        kind = result.get("type")
        if kind in ("page", "blogpost") and (kind == "page" or self.settings.include_blogposts):
            return str(kind), str(result["id"])
        if kind == "attachment":
            # An attachment change re-syncs its container (which re-reads its attachments).
            container = result.get("container") or {}
            ctype = container.get("type")
            if ctype in ("page", "blogpost") and container.get("id"):
                return str(ctype), str(container["id"])
        return None

    # ------------------------------------------------------------ one item

    def _content_ops(
        self,
        kind: str,
        content_id: str,
        *,
        listed: Mapping[str, Any] | None = None,
        acl_only: bool = False,
    ) -> Iterator[SyncOp]:
        """Upserts (or, with ``acl_only``, ACL updates) for a page/blog post and its attachments."""
        if kind == "blogpost" and not self.settings.include_blogposts:
            return
        # The ACL path needs no body: permission sync works from the listing entry.
        item = listed if acl_only and listed is not None else self.client.content(kind, content_id)
        # Only the item's own lookup may delete it: a 404 for the item itself, or a status that
        # says it is trashed or gone.  Any other status (draft, archived, a new one) is left alone.
        if item is None or str(item.get("status") or "current") in _GONE_STATUSES:
            yield DeleteDocument(external_id(kind, content_id))
            return
        if str(item.get("status") or "current") != "current":
            log.info("confluence: %s %s has status %r; left as indexed", kind, content_id, item.get("status"))
            return
        space_id = str(item.get("spaceId") or "")
        space = self._space(space_id)
        if space is None:
            # The space lookup failed (404 or no id): that says nothing about the item itself, so
            # nothing is deleted; the item keeps its indexed state until a lookup succeeds.
            log.warning("confluence: space %r of %s %s not found; item left as indexed", space_id, kind, content_id)
            return
        if self.settings.space_keys and space.get("key") not in self.settings.space_keys:
            # Confluence says the item now lives in a space outside the configured scope.
            yield DeleteDocument(external_id(kind, content_id))
            return
        acl = self._acl(kind, content_id, str(space["id"]))
        space_key = str(space.get("key") or "")
        if acl_only:
            # Attachments carry their container's ACL: the applier updates those already indexed
            # (our own index, not a listing at the source).
            yield UpdateAcl(external_id(kind, content_id), acl, inherited_by_container=content_id)
            return
        yield UpsertDocument(content_document(kind, item, space_key=space_key, acl=acl, base=self.client.base_url))
        if self.settings.include_attachments:
            yield from self._attachment_ops(kind, item, space_key, acl)

    def _attachment_ops(self, kind: str, item: Mapping[str, Any], space_key: str, acl: Acl) -> Iterator[SyncOp]:
        for att in self.client.attachments(kind, str(item["id"])):
            data = self._attachment_bytes(att)
            if data is None:
                continue  # deleted between listing and download
            yield UpsertDocument(
                attachment_document(
                    att,
                    data,
                    container_kind=kind,
                    container=item,
                    space_key=space_key,
                    acl=acl,
                    base=self.client.base_url,
                )
            )

    def _attachment_bytes(self, att: Mapping[str, Any]) -> bytes | None:
        """The bytes to extract text from, ``b""`` for a metadata-only attachment, ``None`` if gone."""
        if not self._wanted_attachment(att):
            return b""  # image, archive, unknown type, or over the size limit: metadata only
        link = att.get("downloadLink") or (att.get("_links") or {}).get("download")
        if not link:
            return b""
        try:
            data = self.client.download(str(link), max_bytes=self.settings.max_attachment_bytes)
        except ConfluenceApiError as exc:
            if exc.status == 404:
                return None
            raise
        if data is None:
            log.info("confluence: attachment %s over the size limit, indexed by metadata", att.get("id"))
            return b""
        return data

    def _wanted_attachment(self, att: Mapping[str, Any]) -> bool:
        """Whether to download the attachment for its text (every attachment is indexed either way)."""
        media_type = str(att.get("mediaType") or "").split(";")[0].strip().lower()
        if media_type not in self.settings.attachment_media_types:
            return False
        size = att.get("fileSize")
        return not (isinstance(size, int) and size > self.settings.max_attachment_bytes)

    # ------------------------------------------------------------ permissions

    def _acl(self, kind: str, content_id: str, space_id: str) -> Acl:
        path = [content_id]
        if kind == "page":
            # Every restricted ancestor adds a clause, not just the nearest one.
            path = [str(a["id"]) for a in self.client.ancestors(content_id)] + path
        return build_acl(self._space_clause(space_id), [self._restriction(cid) for cid in path])

    def _restriction(self, content_id: str) -> Clause | None:
        if content_id not in self._cache.restrictions:
            try:
                clause = restriction_clause(self.client.read_restriction(content_id))
            except ConfluenceApiError as exc:
                if exc.status != 404:
                    raise
                clause = ()  # cannot tell who may read it: fail closed until the next sync
            self._cache.restrictions[content_id] = clause
        return self._cache.restrictions[content_id]

    def _space_clause(self, space_id: str) -> Clause:
        if space_id not in self._cache.space_clauses:
            self._cache.space_clauses[space_id] = space_clause(self.client.space_permissions(space_id))
        return self._cache.space_clauses[space_id]

    def _principal_ops(self, spaces: list[dict[str, Any]]) -> Iterator[SyncOp]:
        users: dict[str, Mapping[str, Any]] = {}
        for group in self.client.groups():
            group_id = group.get("id")
            if not group_id:
                continue
            try:
                members = [m for m in self.client.group_members(str(group_id)) if m.get("accountId")]
            except ConfluenceApiError as exc:
                if exc.status != 404:
                    raise
                # Deleted since the listing: a group lookup never deletes content; its members
                # stay as last synced until the next run lists the groups again.
                log.warning("confluence: group %s not found while listing members; skipped", group_id)
                continue
            yield SetGroupMembers(
                group_principal(str(group_id)),
                tuple(sorted({user_principal(str(m["accountId"])) for m in members})),
                display_name=str(group.get("name") or ""),
            )
            for member in members:
                users.setdefault(str(member["accountId"]), member)
        # Users granted space read directly (not via a group) still need an identity to map.
        prefix = user_principal("")
        for space in spaces:
            for principal in self._space_clause(str(space["id"])):
                account_id = principal[len(prefix) :] if principal.startswith(prefix) else ""
                if account_id and account_id not in users:
                    user = self.client.user(account_id)
                    if user:
                        users[account_id] = user
        for account_id in sorted(users):
            yield self._identity(account_id, users[account_id])

    def _identity(self, account_id: str, user: Mapping[str, Any]) -> IdentitySeen:
        account_type = str(user.get("accountType") or "")
        email = str(user.get("email") or "") or None
        status = str(user.get("accountStatus") or "active").lower()
        return IdentitySeen(
            principal=user_principal(account_id),
            email=email,
            email_verified=bool(email) and account_type == "atlassian" and self.settings.trust_atlassian_emails,
            display_name=str(user.get("displayName") or user.get("publicName") or ""),
            is_guest=bool(user.get("isExternalCollaborator")) or account_type == "customer",
            is_bot=account_type == "app",
            deactivated=status in ("inactive", "closed"),
        )

    # ------------------------------------------------------------ spaces

    def _kinds(self) -> list[str]:
        return ["page", "blogpost"] if self.settings.include_blogposts else ["page"]

    def _spaces(self) -> list[dict[str, Any]]:
        # Sorted so the space index in a checkpoint means the same space after a restart.
        spaces = sorted(self.client.spaces(self.settings.space_keys), key=lambda s: str(s.get("key")))
        for space in spaces:
            self._cache.spaces_by_id[str(space["id"])] = space
        return spaces

    def _space(self, space_id: str) -> dict[str, Any] | None:
        if not space_id:
            return None
        if space_id not in self._cache.spaces_by_id:
            try:
                space = self.client.space(space_id)
            except ConfluenceApiError as exc:
                if exc.status != 404:
                    raise
                return None
            self._cache.spaces_by_id[space_id] = space
        return self._cache.spaces_by_id[space_id]

    def _resume_space_index(self, cp: Checkpoint, spaces: list[dict[str, Any]]) -> int:
        if not cp:
            return 0
        for idx, space in enumerate(spaces):
            if str(space["id"]) == str(cp.get("space_id")):
                return idx
        # The space vanished since the crash: carry on from where it stood.
        return max(0, min(int(cp.get("space_index", 0)), len(spaces)))

    def _iter_space_content(self, kind: str, space_id: str) -> Iterator[dict[str, Any]]:
        batch = self.client.content_batch(kind, space_id)
        while True:
            yield from batch.results
            if not batch.next_url:
                return
            batch = self.client.content_batch(kind, space_id, batch.next_url)
