"""``SharePointConnector``: SharePoint Online through Microsoft Graph v1.0.

What a run walks, per configured site, in this order ("units"):

* every document library (``/sites/{id}/drives``) through ``/drives/{id}/root/delta``;
  the first enumeration of a drive ends in an ``@odata.deltaLink`` that the next
  incremental run starts from; ``410 Gone`` on it restarts that drive from scratch;
  delta asks for sharing changes (``Prefer: deltashowsharingchanges``): an item whose sharing
  changed comes back annotated ``@microsoft.graph.sharedChanged`` and gets a fresh ACL; a folder
  whose sharing changed re-reads the ACL of every file below it;
* every list that is not a library (custom lists, announcements, events, tasks, issues, links,
  and templates Microsoft adds later) item by item;
* published site pages (``/sites/{id}/pages``), their text from each page's ``canvasLayout``.

Then the principals the ACLs mention: ``IdentitySeen`` for every directory user,
``SetGroupMembers`` for ``entra:org:<tenant>`` (internal members only), for
every Entra group referenced (transitive members), and for every SharePoint site
group (its members read from SharePoint REST, claims expanded through Graph).
One principal that cannot be expanded grants nothing (an empty member list), is
reported in the checkpoint's ``failures`` and is retried by the next run; the
rest of the run, its ops and its delta links are kept.

Checkpoints are exact: each yielded op carries the position *after* that op
(unit, page URL, offset in the page).  Ops are produced one ahead of what is
yielded so that the last op of a unit already carries the unit's completion
(and its new delta link); a resumed run therefore repeats nothing it reported.
"""

from __future__ import annotations

import copy
import logging
import random
import time
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

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
from connectors.sharepoint.client import (
    AUTHORITY_HOST,
    DELTA_PREFER,
    FULL_CONTROL_ROLE,
    GRAPH_BASE_URL,
    DeltaGone,
    GraphClient,
    NotFound,
)
from connectors.sharepoint.mapping import (
    container_for,
    document_from_drive_item,
    document_from_list_item,
    document_from_site_page,
    driveitem_external_id,
    epoch_micros,
    is_published,
    listitem_external_id,
    sitepage_external_id,
)
from connectors.sharepoint.permissions import (
    acl_from_permissions,
    entra_groups_in,
    org_principal,
    owner_groups_in,
    principal_for_site_group_member,
    site_groups_in,
)
from retrieval.contracts import Acl

log = logging.getLogger(__name__)

CHECKPOINT_VERSION = 1
# Libraries are read through their drive (files) or the pages API; every other list template is
# indexed item by item, including templates this code has never heard of (Graph documents that
# other values are possible: https://learn.microsoft.com/en-us/graph/api/resources/listinfo).
_LIBRARY_TEMPLATES = frozenset({"documentLibrary", "webPageLibrary", "pictureLibrary", "mySiteDocumentLibrary"})
_PAGES_TEMPLATE = "webPageLibrary"
# Keys that outlive a run: where each drive's changes continue, how far lists/pages/drives were
# read, which groups the indexed ACLs mention, and which principals failed and must be retried.
_PERSISTENT = ("delta_links", "hwm", "groups", "site_groups", "owner_groups", "groups_synced", "retry")
_NOBODY: Acl = ((),)
_SHARED_CHANGED = "@microsoft.graph.sharedChanged"
_DELTA_HEADERS = {"Prefer": DELTA_PREFER}
NO_FULL_CONTROL_WARNING = (
    "the app lacks Sites.FullControl.All: Graph delta does not report sharing-only changes (a removed link),"
    " so they reach the index only with the next permission sync"
)


@dataclass(frozen=True)
class SharePointConfig:
    tenant_id: str  # Entra tenant GUID (also names the entra:org principal)
    client_id: str
    client_secret: str = field(repr=False)
    site_ids: tuple[str, ...] = ()  # Graph site ids: "host,siteCollectionId,webId"
    graph_base_url: str = GRAPH_BASE_URL
    authority_host: str = AUTHORITY_HOST
    include_lists: bool = True
    include_pages: bool = True
    max_download_bytes: int = 100 * 1024 * 1024
    # Graph cannot list SharePoint site-group members; an admin may say who a site group is
    # ("sharepoint:sitegroup:<site>:<id>" -> ["entra:group:<id>", "entra:user:<id>", ...]).
    # A site group not listed here has no members in Cairn (fail closed).
    # Normally site groups are read from SharePoint REST; an entry here overrides that group.
    site_group_members: Mapping[str, Sequence[str]] = field(default_factory=dict)
    # {"private_key": PEM, "thumbprint": SHA-1 hex}: SharePoint REST only accepts app-only tokens
    # obtained with a certificate (a secret still works for every Graph call).
    client_certificate: Mapping[str, str] | None = field(default=None, repr=False)
    sharepoint_base_url: str = ""  # tests / proxies: where SharePoint REST goes instead of the site host


@dataclass
class _Site:
    site: dict[str, Any]
    drives: list[dict[str, Any]]
    lists: list[dict[str, Any]]
    pages_list_id: str | None


class _State:
    """The checkpoint being built: persistent keys plus this run's progress."""

    def __init__(self, checkpoint: Checkpoint, run: str) -> None:
        data = copy.deepcopy(dict(checkpoint or {}))
        resuming = data.get("version") == CHECKPOINT_VERSION and data.get("run") == run and not data.get("complete")
        if not resuming:
            keep = {} if run == "full" else {k: data[k] for k in _PERSISTENT if k in data}
            data = {"version": CHECKPOINT_VERSION, "run": run, "complete": False, "done": [], "cursor": None}
            data.update(keep)
        data.setdefault("delta_links", {})
        data.setdefault("hwm", {})
        data.setdefault("groups", [])
        data.setdefault("site_groups", [])
        data.setdefault("groups_synced", [])
        data.setdefault("owner_groups", [])
        data.setdefault("retry", [])
        data.setdefault("failures", [])  # this run's principals that could not be expanded
        data.setdefault("warnings", [])
        self.data = data

    def is_done(self, key: str) -> bool:
        return key in self.data["done"]

    def finish(self, key: str) -> None:
        self.data["done"].append(key)
        self.data["cursor"] = None

    def cursor_for(self, key: str) -> dict[str, Any] | None:
        cur = self.data.get("cursor")
        return cur if isinstance(cur, dict) and cur.get("unit") == key else None

    def set_cursor(self, key: str, url: str, offset: int, extra: dict[str, Any]) -> None:
        self.data["cursor"] = {"unit": key, "page_url": url, "offset": offset, "extra": dict(extra)}

    def note_acl(self, acl: Acl) -> None:
        groups = set(self.data["groups"]) | entra_groups_in(acl)
        self.data["groups"] = sorted(groups)
        site_groups = set(self.data["site_groups"]) | site_groups_in(acl)
        self.data["site_groups"] = sorted(site_groups)
        owners = set(self.data["owner_groups"]) | owner_groups_in(acl)
        self.data["owner_groups"] = sorted(owners)

    def fail_principal(self, principal: str, error: str) -> None:
        failures = [f for f in self.data["failures"] if f.get("item") != principal]
        self.data["failures"] = [*failures, {"item": principal, "error": error[:500]}]
        self.data["retry"] = sorted(set(self.data["retry"]) | {principal})

    def principal_ok(self, principal: str) -> None:
        self.data["retry"] = sorted(set(self.data["retry"]) - {principal})

    def warn(self, message: str) -> None:
        if message not in self.data["warnings"]:
            self.data["warnings"] = [*self.data["warnings"], message]

    def snapshot(self) -> Checkpoint:
        return copy.deepcopy(self.data)


_Event = tuple[str, Any]  # ("op", SyncOp) or ("state", Checkpoint)


def _one_ahead(events: Iterator[_Event]) -> Iterator[tuple[SyncOp, Checkpoint]]:
    """Pair each op with the newest checkpoint taken before the *next* op is produced.

    Everything processed between two ops produced nothing to apply, so resuming after
    it is safe; and the final op carries the end-of-run checkpoint.
    """
    pending: SyncOp | None = None
    state: Checkpoint | None = None
    try:
        for kind, value in events:
            if kind == "op":
                if pending is not None and state is not None:
                    yield pending, state
                pending = value
            else:
                state = value
    except Exception:
        # The run fails here, but the op already computed and everything finished since (a
        # drive's new delta link) is still delivered and saved before the error propagates.
        if pending is not None and state is not None:
            yield pending, state
        raise
    if pending is not None and state is not None:
        yield pending, state


class SharePointConnector:
    kind = "sharepoint"

    def __init__(
        self,
        config: SharePointConfig,
        *,
        session: requests.Session | None = None,
        client: GraphClient | None = None,
        sleep: Callable[[float], None] = time.sleep,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self.config = config
        self.client = client or GraphClient(
            tenant_id=config.tenant_id,
            client_id=config.client_id,
            client_secret=config.client_secret,
            session=session,
            graph_base_url=config.graph_base_url,
            authority_host=config.authority_host,
            sleep=sleep,
            jitter=jitter,
            client_certificate=config.client_certificate,
            sharepoint_base_url=config.sharepoint_base_url,
        )
        self._sites: dict[str, _Site] = {}
        self._users_by_upn: dict[str, str | None] = {}
        self._org_members: tuple[str, ...] | None = None

    # -- the Connector protocol ---------------------------------------------------------

    def _reset(self) -> None:
        self._sites = {}
        self._users_by_upn = {}
        self._org_members = None

    def full_sync(self, checkpoint: Checkpoint) -> Iterator[tuple[SyncOp, Checkpoint]]:
        self._reset()
        return _one_ahead(self._run(_State(checkpoint, "full"), "full"))

    def incremental_sync(self, checkpoint: Checkpoint) -> Iterator[tuple[SyncOp, Checkpoint]]:
        self._reset()
        return _one_ahead(self._run(_State(checkpoint, "incremental"), "incremental"))

    def permission_sync(self, checkpoint: Checkpoint) -> Iterator[tuple[SyncOp, Checkpoint]]:
        self._reset()
        return _one_ahead(self._run(_State(checkpoint, "permissions"), "permissions"))

    def slim_listing(self) -> Iterator[str]:
        self._sites = {}
        select = {"$select": "id,file,folder,deleted,root"}
        for site_id in self.config.site_ids:
            ctx = self._site(site_id)
            for drive in ctx.drives:
                url = f"{self.client.delta_start_url(drive['id'])}?{urlencode(select)}"
                for item in self.client.paginate(url, headers=_DELTA_HEADERS):
                    if "file" in item and "deleted" not in item:
                        yield driveitem_external_id(drive["id"], str(item["id"]))
            canonical = str(ctx.site["id"])
            for lst in self._indexed_lists(ctx):
                for item in self.client.list_item_ids(canonical, lst["id"]):
                    yield listitem_external_id(canonical, lst["id"], str(item["id"]))
            if self.config.include_pages:
                for page in self.client.site_pages(canonical):
                    if is_published(page):
                        yield sitepage_external_id(canonical, str(page["id"]))

    def test_connection(self) -> None:
        if not self.config.site_ids:
            raise ConnectorError("no SharePoint sites are configured")
        self.client.access_token()
        for site_id in self.config.site_ids:
            try:
                self.client.site(site_id)
            except NotFound as exc:
                raise ConnectorError("SharePoint site not found; check the site id", item=site_id) from exc

    # -- runs ---------------------------------------------------------------------------

    def _run(self, st: _State, mode: str) -> Iterator[_Event]:
        for site_id in self.config.site_ids:
            ctx = self._site(site_id)
            for drive in ctx.drives:
                key = f"drive:{drive['id']}"
                if not st.is_done(key):
                    yield from self._drive_unit(st, ctx, drive, key, mode)
            for lst in self._indexed_lists(ctx):
                key = f"list:{site_id}:{lst['id']}"
                if not st.is_done(key):
                    yield from self._list_unit(st, ctx, lst, key, mode)
            key = f"pages:{site_id}"
            if self.config.include_pages and not st.is_done(key):
                yield from self._pages_unit(st, ctx, key, mode)
        yield from self._principals(st, mode)
        st.data["complete"] = True
        st.data["cursor"] = None
        yield ("state", st.snapshot())

    def _walk(
        self,
        st: _State,
        key: str,
        start_url: str,
        handle: Callable[[dict[str, Any], dict[str, Any]], list[SyncOp]],
        *,
        delta_drive_id: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Generator[_Event, None, tuple[str | None, dict[str, Any]]]:
        """Page through a collection from the unit's cursor; returns (deltaLink, extra)."""
        cursor = st.cursor_for(key)
        url = cursor["page_url"] if cursor else start_url
        offset = int(cursor["offset"]) if cursor else 0
        extra: dict[str, Any] = dict(cursor.get("extra") or {}) if cursor else {}
        restarts = 0
        while True:
            try:
                page = self.client.get_page(url, headers=headers)
            except DeltaGone as gone:
                if delta_drive_id is None or restarts >= 2:
                    raise ConnectorError("Graph keeps rejecting the delta token", item=key) from gone
                # The token expired or the drive changed too much: Graph wants a full
                # enumeration.  Items deleted meanwhile are pruned through slim_listing.
                log.warning("delta link for %s is gone (%s); resyncing the drive", key, gone.code)
                restarts += 1
                url, offset = gone.restart_url or self.client.delta_start_url(delta_drive_id), 0
                extra["resync"] = True
                st.set_cursor(key, url, 0, extra)
                yield ("state", st.snapshot())
                continue
            for index in range(offset, len(page.items)):
                for op in handle(page.items[index], extra):
                    yield ("op", op)
                st.set_cursor(key, url, index + 1, extra)
                yield ("state", st.snapshot())
            if page.next_link:
                url, offset = page.next_link, 0
                st.set_cursor(key, url, 0, extra)
                yield ("state", st.snapshot())
                continue
            return page.delta_link, extra

    def _drive_unit(self, st: _State, ctx: _Site, drive: dict[str, Any], key: str, mode: str) -> Iterator[_Event]:
        drive_id = str(drive["id"])
        container = container_for(ctx.site, str(drive.get("name") or ""))
        start = self.client.delta_start_url(drive_id)
        if mode == "incremental":
            start = st.data["delta_links"].get(drive_id) or start
        elif mode == "permissions":
            start = f"{start}?{urlencode({'$select': 'id,name,file,folder,deleted,root'})}"

        if mode != "permissions":
            self._check_sharing_changes(st)
        # Content already indexed is everything modified up to the drive's high-water mark: a
        # sharing-only change below it needs a new ACL, not a download.
        hwm_key = f"drive:{drive_id}"
        hwm = int(st.data["hwm"].get(hwm_key, 0)) if mode == "incremental" else 0

        def handle(item: dict[str, Any], extra: dict[str, Any]) -> list[SyncOp]:
            version = epoch_micros(item.get("lastModifiedDateTime"))
            extra["max_seen"] = max(int(extra.get("max_seen", hwm)), version)
            return self._drive_item_ops(st, ctx, drive_id, container, item, mode, indexed_up_to=hwm)

        delta_link, extra = yield from self._walk(
            st, key, start, handle, delta_drive_id=drive_id, headers=_DELTA_HEADERS
        )
        if mode != "permissions" and delta_link:
            st.data["delta_links"][drive_id] = delta_link
            st.data["hwm"][hwm_key] = max(hwm, int(extra.get("max_seen", hwm)))
        st.finish(key)
        yield ("state", st.snapshot())

    def _check_sharing_changes(self, st: _State) -> None:
        """Say clearly when Graph will not report sharing-only changes through delta."""
        roles = self.client.app_roles()
        if roles is not None and FULL_CONTROL_ROLE not in roles:
            st.warn(NO_FULL_CONTROL_WARNING)

    def _drive_item_ops(
        self,
        st: _State,
        ctx: _Site,
        drive_id: str,
        container: str,
        item: dict[str, Any],
        mode: str,
        *,
        indexed_up_to: int = 0,
    ) -> list[SyncOp]:
        item_id = str(item["id"])
        external_id = driveitem_external_id(drive_id, item_id)
        if "deleted" in item and item["deleted"] is not None:
            return [] if mode == "permissions" else [DeleteDocument(external_id)]
        shared_changed = str(item.get(_SHARED_CHANGED, "")).lower() == "true"
        if "root" in item:
            return []
        if "file" not in item:
            if shared_changed and "folder" in item and mode == "incremental":
                # Everything below inherits the folder's sharing; delta may list only the folder.
                return self._subtree_acl_ops(st, ctx, drive_id, item_id)
            return []  # folders, OneNote packages: nothing to read
        site_id = str(ctx.site["id"])
        sharing_only = (
            mode == "incremental"
            and shared_changed
            and 0 < epoch_micros(item.get("lastModifiedDateTime")) <= indexed_up_to
        )
        try:
            perms = self.client.item_permissions(drive_id, item_id)
            acl = acl_from_permissions(perms, site_id=site_id, tenant_id=self.config.tenant_id)
            st.note_acl(acl)
            if mode == "permissions" or sharing_only:
                return [UpdateAcl(external_id, acl)]
            content = self.client.download(drive_id, item_id, max_bytes=self.config.max_download_bytes)
        except NotFound:
            return []  # deleted since it was listed; the next delta carries the deletion
        if content is None:
            log.warning("skipping %s: larger than %d bytes", external_id, self.config.max_download_bytes)
            return []
        doc = document_from_drive_item(
            item, drive_id=drive_id, container=container, content=content, acl=acl, site_id=site_id
        )
        return [UpsertDocument(doc)]

    def _subtree_acl_ops(self, st: _State, ctx: _Site, drive_id: str, folder_id: str) -> list[SyncOp]:
        """A fresh ACL for every file below a folder whose sharing changed."""
        site_id = str(ctx.site["id"])
        ops: list[SyncOp] = []
        pending, seen = [folder_id], {folder_id}
        while pending:
            parent = pending.pop()
            try:
                children = list(self.client.children(drive_id, parent))
            except NotFound:
                continue  # moved or deleted meanwhile: delta reports that
            for child in children:
                child_id = str(child.get("id") or "")
                if not child_id or child_id in seen or child.get("deleted") is not None:
                    continue
                seen.add(child_id)
                if "folder" in child:
                    pending.append(child_id)
                    continue
                if "file" not in child:
                    continue
                try:
                    perms = self.client.item_permissions(drive_id, child_id)
                except NotFound:
                    continue
                acl = acl_from_permissions(perms, site_id=site_id, tenant_id=self.config.tenant_id)
                st.note_acl(acl)
                ops.append(UpdateAcl(driveitem_external_id(drive_id, child_id), acl))
        return ops

    def _list_unit(self, st: _State, ctx: _Site, lst: dict[str, Any], key: str, mode: str) -> Iterator[_Event]:
        site_id = str(ctx.site["id"])
        list_id = str(lst["id"])
        container = container_for(ctx.site, str(lst.get("displayName") or lst.get("name") or ""))
        hwm = int(st.data["hwm"].get(key, 0)) if mode == "incremental" else 0
        start = self.client.url(f"sites/{site_id}/lists/{list_id}/items?{urlencode({'$expand': 'fields'})}")

        def handle(item: dict[str, Any], extra: dict[str, Any]) -> list[SyncOp]:
            version = epoch_micros(item.get("lastModifiedDateTime"))
            extra["max_seen"] = max(int(extra.get("max_seen", hwm)), version)
            if version <= hwm:
                return []  # unchanged since the last run (lists have no delta link to follow)
            try:
                perms = self.client.list_item_permissions(site_id, list_id, str(item["id"]))
            except NotFound:
                return []
            acl = acl_from_permissions(perms, site_id=site_id, tenant_id=self.config.tenant_id)
            st.note_acl(acl)
            external_id = listitem_external_id(site_id, list_id, str(item["id"]))
            if mode == "permissions":
                return [UpdateAcl(external_id, acl)]
            doc = document_from_list_item(item, site_id=site_id, list_id=list_id, container=container, acl=acl)
            return [UpsertDocument(doc)]

        _, extra = yield from self._walk(st, key, start, handle)
        if mode != "permissions":
            st.data["hwm"][key] = max(hwm, int(extra.get("max_seen", hwm)))
        st.finish(key)
        yield ("state", st.snapshot())

    def _pages_unit(self, st: _State, ctx: _Site, key: str, mode: str) -> Iterator[_Event]:
        site_id = str(ctx.site["id"])
        container = container_for(ctx.site, "Site Pages")
        hwm = int(st.data["hwm"].get(key, 0)) if mode == "incremental" else 0
        # Page permissions live on the page's list item in the Site Pages library; the
        # pages API names pages by the item's unique id, so map unique id -> item id once.
        item_ids: dict[str, str] = {}
        if ctx.pages_list_id:
            for row in self.client.list_item_ids(site_id, ctx.pages_list_id):
                unique = (row.get("sharepointIds") or {}).get("listItemUniqueId")
                if unique:
                    item_ids[str(unique).lower()] = str(row["id"])
        start = self.client.url(f"sites/{site_id}/pages/microsoft.graph.sitePage")

        def handle(page: dict[str, Any], extra: dict[str, Any]) -> list[SyncOp]:
            if not is_published(page):
                return []
            version = epoch_micros(page.get("lastModifiedDateTime"))
            extra["max_seen"] = max(int(extra.get("max_seen", hwm)), version)
            if version <= hwm:
                return []
            list_item_id = item_ids.get(str(page["id"]).lower())
            acl = _NOBODY  # without the list item we cannot prove anyone may read it
            if list_item_id and ctx.pages_list_id:
                try:
                    perms = self.client.list_item_permissions(site_id, ctx.pages_list_id, list_item_id)
                except NotFound:
                    return []
                acl = acl_from_permissions(perms, site_id=site_id, tenant_id=self.config.tenant_id)
            st.note_acl(acl)
            external_id = sitepage_external_id(site_id, str(page["id"]))
            if mode == "permissions":
                return [UpdateAcl(external_id, acl)]
            try:
                full = self.client.site_page(site_id, str(page["id"]))  # with its canvasLayout
            except NotFound:
                return []
            page = {**page, **full}
            return [UpsertDocument(document_from_site_page(page, site_id=site_id, container=container, acl=acl))]

        _, extra = yield from self._walk(st, key, start, handle)
        if mode != "permissions":
            st.data["hwm"][key] = max(hwm, int(extra.get("max_seen", hwm)))
        st.finish(key)
        yield ("state", st.snapshot())

    # -- principals ---------------------------------------------------------------------

    def _principals(self, st: _State, mode: str) -> Iterator[_Event]:
        retry = set(st.data["retry"])
        groups = [f"entra:group:{g}" for g in st.data["groups"]]
        owners = [f"entra:groupowners:{g}" for g in st.data["owner_groups"]]
        site_groups = list(st.data["site_groups"])
        if mode == "incremental":
            # Only principals that first appeared in this run, or that failed before; the rest
            # are kept fresh by permission_sync, which re-lists every membership.
            synced = set(st.data["groups_synced"])
            groups = [g for g in groups if g.removeprefix("entra:group:") not in synced or g in retry]
            owners = [g for g in owners if g not in synced or g in retry]
            site_groups = [g for g in site_groups if g not in synced or g in retry]
        else:
            yield from self._users_unit(st)
            yield from self._org_unit(st)
        for principal in [*groups, *owners, *site_groups]:
            key = f"principal:{principal}"
            if st.is_done(key):
                continue
            members = yield from self._expand_one(st, principal)
            if members is not None:
                yield ("op", SetGroupMembers(principal, members))
            if principal not in st.data["retry"]:
                synced_name = principal.removeprefix("entra:group:")
                st.data["groups_synced"] = sorted(set(st.data["groups_synced"]) | {synced_name})
            st.finish(key)
            yield ("state", st.snapshot())

    def _expand_one(self, st: _State, principal: str) -> Generator[_Event, None, tuple[str, ...] | None]:
        """Members of one group principal; on failure it grants nothing and is retried next run.

        Returns None when there is nothing to say (a site group of a site this instance does
        not read) or when the failure was already answered with an empty member list.
        """
        try:
            if principal.startswith("sharepoint:sitegroup:"):
                members = self._site_group_members(principal)
            elif principal.startswith("entra:groupowners:"):
                members = self._owners(principal.removeprefix("entra:groupowners:"))
            else:
                members = self._expand([principal])
        except ConnectorError as exc:
            if exc.retry_after is not None:
                raise  # throttled: the task resumes this run from its checkpoint later
            log.warning("cannot expand %s: %s", principal, exc)
            st.fail_principal(principal, f"{exc}{f' ({exc.item})' if exc.item else ''}")
            # Fail closed for this principal only: an empty member list, so a member removed
            # at the source never keeps access because we could not read the group.
            yield ("op", SetGroupMembers(principal, ()))
            return None
        st.principal_ok(principal)
        return members

    def _users_unit(self, st: _State) -> Iterator[_Event]:
        key = "users"
        if st.is_done(key):
            return
        select = {"$select": "id,displayName,mail,userPrincipalName,userType,accountEnabled"}
        start = self.client.url(f"users?{urlencode(select)}")

        def handle(user: dict[str, Any], extra: dict[str, Any]) -> list[SyncOp]:
            seen = _identity_seen(user)
            return [seen] if seen else []

        yield from self._walk(st, key, start, handle)
        st.finish(key)
        yield ("state", st.snapshot())

    def _org_unit(self, st: _State) -> Iterator[_Event]:
        key = "org"
        if st.is_done(key):
            return
        principal = org_principal(self.config.tenant_id)
        try:
            members = self._org()
        except ConnectorError as exc:
            if exc.retry_after is not None:
                raise
            st.fail_principal(principal, str(exc))
            yield ("op", SetGroupMembers(principal, (), "All members"))
        else:
            st.principal_ok(principal)
            yield ("op", SetGroupMembers(principal, members, "All members"))
        st.finish(key)
        yield ("state", st.snapshot())

    def _org(self) -> tuple[str, ...]:
        # Everyone an organization-wide link or "Everyone except external users" reaches:
        # enabled accounts of userType Member.  Guests (and accounts without a type) never.
        if self._org_members is None:
            self._org_members = tuple(
                sorted(
                    f"entra:user:{u['id']}"
                    for u in self.client.users()
                    if u.get("id") and u.get("userType") == "Member" and u.get("accountEnabled") is not False
                )
            )
        return self._org_members

    def _owners(self, group_id: str) -> tuple[str, ...]:
        try:
            owners = list(self.client.owner_users(group_id))
        except NotFound:
            return ()
        return tuple(
            sorted(f"entra:user:{o['id']}" for o in owners if o.get("id") and o.get("accountEnabled") is not False)
        )

    def _site_group_members(self, principal: str) -> tuple[str, ...] | None:
        configured = self.config.site_group_members.get(principal)
        if configured is not None:
            return self._expand(configured)  # an admin's override wins over what SharePoint says
        site_id, _, group_id = principal.removeprefix("sharepoint:sitegroup:").rpartition(":")
        ctx = next((c for c in self._all_sites() if str(c.site["id"]) == site_id), None)
        if ctx is None or not group_id.isdigit():
            return None  # not a site this instance reads: nobody is granted through it here
        users: set[str] = set()
        for member in self.client.site_group_users(str(ctx.site.get("webUrl") or ""), int(group_id)):
            target = principal_for_site_group_member(member, tenant_id=self.config.tenant_id)
            if target is None:
                continue
            if target.startswith("upn:"):
                user_id = self._user_id(target.removeprefix("upn:"))
                if user_id:
                    users.add(f"entra:user:{user_id}")
            elif target == org_principal(self.config.tenant_id):
                users |= set(self._org())
            elif target.startswith("entra:groupowners:"):
                users |= set(self._owners(target.removeprefix("entra:groupowners:")))
            else:
                users |= set(self._expand([target]))
        return tuple(sorted(users))

    def _all_sites(self) -> list[_Site]:
        return [self._site(site_id) for site_id in self.config.site_ids]

    def _user_id(self, upn: str) -> str | None:
        key = upn.lower()
        if key not in self._users_by_upn:
            try:
                user = self.client.user_by_principal_name(upn)
            except NotFound:
                user = {}  # a SharePoint account with no Entra user (deleted): grants nothing
            enabled = user.get("accountEnabled") is not False
            self._users_by_upn[key] = str(user["id"]) if user.get("id") and enabled else None
        return self._users_by_upn[key]

    def _expand(self, principals: Sequence[str]) -> tuple[str, ...]:
        """User principals reached from Entra users/groups, nested groups included."""
        users: set[str] = set()
        for principal in principals:
            if principal.startswith("entra:user:"):
                users.add(principal)
            elif principal.startswith("entra:group:"):
                group_id = principal.removeprefix("entra:group:")
                try:
                    for member in self.client.transitive_user_members(group_id):
                        if member.get("id") and member.get("accountEnabled") is not False:
                            users.add(f"entra:user:{member['id']}")
                except NotFound:
                    continue  # a deleted group has no members: its grants reach nobody
        return tuple(sorted(users))

    # -- site structure -----------------------------------------------------------------

    def _site(self, site_id: str) -> _Site:
        if site_id not in self._sites:
            site = self.client.site(site_id)
            lists = self.client.lists(site_id) if (self.config.include_lists or self.config.include_pages) else []
            pages_list_id = next(
                (str(x["id"]) for x in lists if (x.get("list") or {}).get("template") == _PAGES_TEMPLATE),
                None,
            )
            drives = [
                d
                for d in self.client.drives(site_id)
                # The Site Pages library is read through the pages API, not as .aspx files.
                if not (pages_list_id and _drive_list_id(d) == pages_list_id)
            ]
            self._sites[site_id] = _Site(site=site, drives=drives, lists=lists, pages_list_id=pages_list_id)
        return self._sites[site_id]

    def _indexed_lists(self, ctx: _Site) -> list[dict[str, Any]]:
        if not self.config.include_lists:
            return []
        library_lists = {_drive_list_id(d) for d in ctx.drives}
        return [
            x
            for x in ctx.lists
            if (x.get("list") or {}).get("template") not in _LIBRARY_TEMPLATES
            and not (x.get("list") or {}).get("hidden")
            and str(x.get("id")) not in library_lists  # a library whatever its template says
        ]


def _drive_list_id(drive: Mapping[str, Any]) -> str | None:
    ids = drive.get("sharePointIds") or drive.get("sharepointIds") or {}
    return str(ids["listId"]) if isinstance(ids, Mapping) and ids.get("listId") else None


def _identity_seen(user: Mapping[str, Any]) -> IdentitySeen | None:
    if not user.get("id"):
        return None
    is_guest = user.get("userType") == "Guest"
    mail = user.get("mail") or None
    upn = user.get("userPrincipalName") or None
    # A member's mail/UPN sits in a domain the tenant verified.  A guest's UPN is a
    # "#EXT#" alias and their mail is whatever the inviter typed, so it is not treated
    # as verified (an admin can still map it).
    email = mail if is_guest else (mail or (upn if upn and "#EXT#" not in upn else None))
    if not email and not upn:
        return None
    return IdentitySeen(
        principal=f"entra:user:{user['id']}",
        email=str(email).lower() if email else None,
        email_verified=bool(email) and not is_guest,
        display_name=str(user.get("displayName") or ""),
        is_guest=is_guest,
        deactivated=user.get("accountEnabled") is False,
    )
