"""A thin, typed Confluence Cloud REST client over one injected ``requests.Session``.

Why not call atlassian-python-api's ``Confluence`` methods directly: with
``Confluence(url, cloud=True)`` (5.x) the Cloud implementation joins its
relative paths onto the *site* URL, so ``get_all_spaces`` requests
``https://site/spaces`` and ``cql`` requests ``https://site/content/search``
(no ``/wiki/api/v2`` or ``/wiki/rest/api`` prefix), the content-restriction and
ancestor helpers do not exist on that class, and the versioned
``ConfluenceCloud`` sends ``get_space_permissions(id)`` to
``/space-permissions?cursor=<id>``.  Its retry handler also retries a 429 only
once and never honours Retry-After on a 503.  So every URL here is built
deliberately (v2 under ``/wiki/api/v2``, v1 under ``/wiki/rest/api``) and sent
through the injected session; the tests record and assert each path.

Retries: if ``core.http`` is importable its ``request_with_retries`` does the
429/503 handling (and ``build_session`` supplies the default session with the
outbound host allow-list); otherwise a small local loop honours Retry-After
(fractional seconds or an HTTP date) with jitter.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

import requests

from connectors.base import ConnectorError
from core.http import (
    OutboundHTTPError,
    RateLimited,
    ResponseTooLarge,
    build_session,
    request_with_retries,
)

log = logging.getLogger(__name__)


class _AttachmentTooLarge(Exception):
    """The hardened session's size cap tripped while reading an attachment."""


V2 = "/wiki/api/v2"
V1 = "/wiki/rest/api"
# Attachment downloads redirect to Atlassian's media service; the redirect URL is pre-signed.
MEDIA_HOST = "api.media.atlassian.com"
# Waits up to this long (in total, per request) happen in-process; a longer Retry-After is raised
# as ConnectorError(retry_after=...) so the task goes back to the queue with that countdown
# instead of holding a worker (same budget as connectors.runtime.MAX_INLINE_WAIT_S).
INLINE_RETRY_BUDGET_S = 2.0


# The expansions the ACL listing asks for (documented on v1 GET /wiki/rest/api/content, see
# ``ConfluenceClient.acl_listing_batch``); blog posts have no ancestors.
ACL_LISTING_EXPAND_NO_ANCESTORS = "restrictions.read.restrictions.user,restrictions.read.restrictions.group"
ACL_LISTING_EXPAND = ACL_LISTING_EXPAND_NO_ANCESTORS + ",ancestors"


class ConfluenceApiError(ConnectorError):
    """A non-retryable HTTP error from Confluence (``status`` kept for callers that branch on it)."""

    def __init__(self, message: str, *, status: int, item: str = "") -> None:
        super().__init__(message, item=item)
        self.status = status


@dataclass(frozen=True)
class Batch:
    """One page of a listing: its items and the (same-site, relative) URL of the next page."""

    results: list[dict[str, Any]]
    next_url: str | None
    base: str  # ``_links.base`` of the response, e.g. https://acme.atlassian.net/wiki


def next_link_from_header(link_header: str | None) -> str | None:
    """The ``rel="next"`` target of an RFC 8288 ``Link`` header (v2 puts the cursor URL there)."""
    if not link_header:
        return None
    for part in link_header.split(","):
        if 'rel="next"' in part or "rel=next" in part:
            start, end = part.find("<"), part.find(">")
            if 0 <= start < end:
                return part[start + 1 : end]
    return None


def default_session(site_url: str) -> requests.Session:
    """``core.http.build_session`` restricted to the site (and the media redirect host)."""
    host = urlsplit(site_url).hostname or ""
    return build_session(allowed_hosts=[host, MEDIA_HOST], allow_private=False)


class ConfluenceClient:
    """Confluence Cloud REST v2 (content) and v1 (restrictions, groups, CQL) over one session."""

    def __init__(
        self,
        site_url: str,
        *,
        session: requests.Session | None = None,
        email: str = "",
        api_token: str = "",
        page_size: int = 100,
        timeout: float = 30.0,
        max_retries: int = 5,
        max_retry_wait: float = INLINE_RETRY_BUDGET_S,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        parts = urlsplit(site_url.strip())
        if parts.scheme not in ("https", "http") or not parts.netloc:
            raise ConnectorError("The Confluence site URL must look like https://<your-site>.atlassian.net")
        # Accept ".../wiki" as typed by admins: every path below adds /wiki itself.
        path = parts.path.rstrip("/")
        path = path.removesuffix("/wiki")
        self.site = f"{parts.scheme}://{parts.netloc}{path}"
        self._netloc = parts.netloc
        self.session = session if session is not None else default_session(self.site)
        if email and api_token:
            # Basic auth with an Atlassian API token; requests drops it on cross-host redirects.
            self.session.auth = (email, api_token)
        self.page_size = page_size
        # ``_links.base`` of the last listing (the site's /wiki root as Confluence names it);
        # single-entity v2 responses carry no base, so document URLs are built from this.
        self.base_url = self.site + "/wiki"
        self.timeout = timeout
        self.max_retries = max_retries
        self.max_retry_wait = max_retry_wait
        self._sleep = sleep

    # ----------------------------------------------------------------- transport

    def url(self, path_or_link: str) -> str:
        """Absolute URL for an API path or a ``_links.next`` / download link, pinned to the site.

        v2 links are site-relative (``/wiki/api/v2/...``); v1 links and download links are
        relative to the ``/wiki`` context (``/rest/api/...``, ``/download/...``).  An absolute
        link to any other host is refused so credentials never leave the site.
        """
        parts = urlsplit(path_or_link)
        if parts.scheme or parts.netloc:
            if parts.netloc != self._netloc:
                raise ConnectorError("Confluence returned a link to another host; refusing to follow it")
            path_or_link = parts.path + (f"?{parts.query}" if parts.query else "")
        if not path_or_link.startswith("/"):
            path_or_link = "/" + path_or_link
        site_path = urlsplit(self.site).path
        if site_path and path_or_link.startswith(site_path + "/"):
            path_or_link = path_or_link[len(site_path) :]
        if not path_or_link.startswith("/wiki/"):
            path_or_link = "/wiki" + path_or_link
        return self.site + path_or_link

    def _send(self, url: str, *, stream: bool = False) -> requests.Response:
        kwargs: dict[str, Any] = {"timeout": self.timeout, "stream": stream}
        # core.http's HardenedSession never follows redirects on its own (attachment downloads
        # redirect to the media host); a plain session follows them by default.
        if hasattr(self.session, "follow_redirects"):
            kwargs["follow_redirects"] = True
        try:
            return request_with_retries(
                self.session,
                "GET",
                url,
                max_attempts=self.max_retries,
                max_total_wait=self.max_retry_wait,
                sleep=self._sleep,
                **kwargs,
            )
        except RateLimited as exc:
            # Past the inline budget: hand the wait to the task runner instead of blocking a worker.
            raise ConnectorError(
                "Confluence is rate limiting requests", item=_safe_item(url), retry_after=exc.retry_after
            ) from None
        except OutboundHTTPError as exc:
            # Blocked destination, oversize body...: its message is already redacted.
            raise ConnectorError(f"Confluence request refused: {exc}", item=_safe_item(url)) from None

    def _get(
        self, path_or_link: str, params: Mapping[str, str | int] | None = None, *, stream: bool = False
    ) -> requests.Response:
        url = self.url(path_or_link)
        if params:
            url += ("&" if "?" in url else "?") + urlencode(params)
        try:
            resp = self._send(url, stream=stream)
        except requests.RequestException as exc:
            raise ConnectorError(f"Could not reach Confluence ({type(exc).__name__})", item=_safe_item(url)) from None
        if resp.status_code >= 400:
            status = resp.status_code
            resp.close()
            if status in (401, 403):
                msg = f"Confluence rejected the e-mail/API token or lacks permission (HTTP {status})"
            elif status == 404:
                msg = "Confluence item not found (HTTP 404)"
            else:
                msg = f"Confluence error (HTTP {status})"
            raise ConfluenceApiError(msg, status=status, item=_safe_item(url))
        return resp

    def get_json(self, path_or_link: str, params: Mapping[str, str | int] | None = None) -> Any:
        resp = self._get(path_or_link, params)
        try:
            return resp.json()
        except ValueError:
            raise ConnectorError("Confluence returned a non-JSON response", item=_safe_item(resp.url)) from None

    def batch(self, path_or_link: str, params: Mapping[str, str | int] | None = None) -> Batch:
        """One page of a cursor-paginated listing (v2 ``_links.next`` / ``Link`` header, v1 ``_links.next``)."""
        resp = self._get(path_or_link, params)
        try:
            body = resp.json()
        except ValueError:
            raise ConnectorError("Confluence returned a non-JSON response", item=_safe_item(resp.url)) from None
        links = body.get("_links") or {}
        nxt = links.get("next") or next_link_from_header(resp.headers.get("Link"))
        if links.get("base"):
            self.base_url = str(links["base"])
        return Batch(results=list(body.get("results") or []), next_url=nxt, base=str(links.get("base") or ""))

    def iterate(self, path: str, params: Mapping[str, str | int] | None = None) -> Iterator[dict[str, Any]]:
        """Every item of a cursor-paginated listing."""
        batch = self.batch(path, params)
        while True:
            yield from batch.results
            if not batch.next_url:
                return
            # The next link already carries the cursor and the original query.
            batch = self.batch(batch.next_url)

    def _offset_pages(self, path: str, params: Mapping[str, str | int] | None = None) -> Iterator[dict[str, Any]]:
        """v1 start/limit paging: follow ``_links.next`` (relative to ``_links.base``) to the end.

        A page shorter than ``limit`` is not the end: the server may cap ``limit`` below what was
        asked ("this may be restricted by fixed system limits",
        https://developer.atlassian.com/cloud/confluence/rest/v1/intro/#pagination), so only a
        missing ``next`` link ends the listing.
        """
        body = self.get_json(path, {**(params or {}), "start": 0, "limit": self.page_size})
        seen: set[str] = set()
        while True:
            yield from list(body.get("results") or [])
            links = body.get("_links") or {}
            nxt = links.get("next")
            if not isinstance(nxt, str) or not nxt:
                return
            link = self.join_base(str(links.get("base") or ""), nxt)
            if link in seen:  # a server repeating its next link must not loop us
                return
            seen.add(link)
            body = self.get_json(link)

    def join_base(self, base: str, link: str) -> str:
        """``_links.base`` + a relative ``_links.next``/``webui`` link; ``url()`` then pins the host."""
        if urlsplit(link).scheme or not base:
            return link
        return base.rstrip("/") + "/" + link.lstrip("/")

    # ------------------------------------------------------------ v2: content

    def spaces(self, keys: tuple[str, ...] = ()) -> Iterator[dict[str, Any]]:
        params: dict[str, str | int] = {"status": "current", "limit": self.page_size}
        if keys:
            params["keys"] = ",".join(keys)
        return self.iterate(f"{V2}/spaces", params)

    def space(self, space_id: str) -> dict[str, Any]:
        return self.get_json(f"{V2}/spaces/{_seg(space_id)}")

    def space_permissions(self, space_id: str) -> Iterator[dict[str, Any]]:
        return self.iterate(f"{V2}/spaces/{_seg(space_id)}/permissions", {"limit": self.page_size})

    def content_batch(self, kind: str, space_id: str, next_url: str | None = None) -> Batch:
        """One page of the current pages (``kind='page'``) or blog posts of a space."""
        if next_url:
            return self.batch(next_url)
        collection = _collection(kind)
        return self.batch(f"{V2}/spaces/{_seg(space_id)}/{collection}", {"status": "current", "limit": self.page_size})

    def content(self, kind: str, content_id: str) -> dict[str, Any] | None:
        """A page or blog post with its storage-format body; ``None`` when it no longer exists."""
        try:
            return self.get_json(f"{V2}/{_collection(kind)}/{_seg(content_id)}", {"body-format": "storage"})
        except ConfluenceApiError as exc:
            if exc.status == 404:
                return None
            raise

    def acl_listing_batch(self, kind: str, space_key: str, next_url: str | None = None) -> Batch:
        """One page of a space's current pages or blog posts WITH their read restrictions and ancestors.

        v1 ``GET /wiki/rest/api/content`` (https://developer.atlassian.com/cloud/confluence/rest/v1/api-group-content/#api-wiki-rest-api-content-get)
        lists a space's content by ``spaceKey`` + ``type`` + ``status`` with start/limit paging
        (``_links.next`` relative to ``/wiki``), and its ``expand`` documents
        ``restrictions.read.restrictions.user`` ("the users that have permission to read the
        content"), ``restrictions.read.restrictions.group`` and ``ancestors`` ("the parent content,
        if the content is a page").  So one request answers what the per-item walk asked three
        requests per page for.  v2 has no equivalent (its listings expand nothing); the endpoint is
        marked "Deprecated, use Confluence's v2 API" but served, and the connector falls back to the
        v2 per-item walk if it stops answering (``ConfluenceConnector._acl_listing``).  The expanded
        user/group lists are themselves paged collections (``UserArray`` / ``GroupArray``: results,
        start, limit, size); ``expanded_read_restriction`` treats one that may be cut short as
        unknown, and the caller then asks ``read_restriction`` for that item alone.
        """
        if next_url:
            return self.batch(next_url)
        return self.batch(
            f"{V1}/content",
            {
                "spaceKey": space_key,
                "type": kind,
                "status": "current",
                "expand": ACL_LISTING_EXPAND if kind == "page" else ACL_LISTING_EXPAND_NO_ANCESTORS,
                "start": 0,
                "limit": self.page_size,
            },
        )

    def ancestors(self, page_id: str) -> list[dict[str, Any]]:
        """Ancestors of a page, top-level first (as the v2 API orders them)."""
        return list(self.iterate(f"{V2}/pages/{_seg(page_id)}/ancestors", {"limit": 250}))

    def attachments(self, kind: str, content_id: str) -> Iterator[dict[str, Any]]:
        return self.iterate(
            f"{V2}/{_collection(kind)}/{_seg(content_id)}/attachments",
            {"status": "current", "limit": self.page_size},
        )

    def download(self, download_link: str, *, max_bytes: int) -> bytes | None:
        """Attachment bytes, or ``None`` when larger than ``max_bytes`` (read in chunks, never whole)."""
        resp = self._get(download_link, stream=True)
        chunks: list[bytes] = []
        size = 0
        try:
            for chunk in resp.iter_content(64 * 1024):
                size += len(chunk)
                if size > max_bytes:
                    return None
                chunks.append(chunk)
        except Exception as exc:
            if isinstance(exc, ResponseTooLarge):
                return None
            raise
        finally:
            resp.close()
        return b"".join(chunks)

    # ------------------------------------------ v1: restrictions, groups, CQL

    def read_restriction(self, content_id: str) -> dict[str, list[dict[str, Any]]]:
        """Users and groups of the content's own *read* restriction (both empty: unrestricted)."""
        users: list[dict[str, Any]] = []
        groups: list[dict[str, Any]] = []
        start = 0
        while True:
            body = self.get_json(
                f"{V1}/content/{_seg(content_id)}/restriction/byOperation/read",
                {"expand": "restrictions.user,restrictions.group", "start": start, "limit": self.page_size},
            )
            restrictions = body.get("restrictions") or {}
            page_users = list((restrictions.get("user") or {}).get("results") or [])
            page_groups = list((restrictions.get("group") or {}).get("results") or [])
            before = len(users) + len(groups)
            users += [u for u in page_users if u.get("accountId") not in {x.get("accountId") for x in users}]
            groups += [g for g in page_groups if g.get("id") not in {x.get("id") for x in groups}]
            # Users and groups share start/limit; a full page of either means there may be more.
            # Stop too if a page brought nothing new (a server ignoring ``start`` must not loop us).
            full = len(page_users) >= self.page_size or len(page_groups) >= self.page_size
            if not full or len(users) + len(groups) == before:
                return {"user": users, "group": groups}
            start += self.page_size

    def groups(self) -> Iterator[dict[str, Any]]:
        return self._offset_pages(f"{V1}/group")

    def group_members(self, group_id: str) -> Iterator[dict[str, Any]]:
        return self._offset_pages(f"{V1}/group/{_seg(group_id)}/membersByGroupId")

    def user(self, account_id: str) -> dict[str, Any] | None:
        try:
            return self.get_json(f"{V1}/user", {"accountId": account_id})
        except ConfluenceApiError as exc:
            if exc.status == 404:
                return None
            raise

    def cql_batch(self, cql: str, next_url: str | None = None) -> Batch:
        if next_url:
            return self.batch(next_url)
        return self.batch(f"{V1}/content/search", {"cql": cql, "limit": self.page_size, "expand": "container,space"})


def _collection(kind: str) -> str:
    if kind == "page":
        return "pages"
    if kind == "blogpost":
        return "blogposts"
    raise ValueError(f"unsupported Confluence content kind: {kind!r}")


def _seg(value: str) -> str:
    """One URL path segment: ids come from API data, so never let them add path structure."""
    return quote(str(value), safe="")


def _safe_item(url: str) -> str:
    """The path only: never echo query strings (CQL, cursors) or credentials into admin-facing errors."""
    return urlsplit(url).path


def expanded_read_restriction(item: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]] | None:
    """The item's own read restriction from a listing's ``restrictions.read`` expansion.

    ``{"user": [...], "group": [...]}`` (both empty: unrestricted), or ``None`` when the listing did
    not carry it whole: not expanded (still under ``_expandable``), not a list, or a sub-collection
    that may have been cut short (a ``next`` link, ``size`` reaching ``limit``, or ``totalSize`` /
    ``size`` above what was returned).  ``None`` never means "unrestricted": the caller reads the
    item's restriction on its own (``read_restriction``), so a truncated list cannot grant more
    than Confluence does.
    """
    restrictions = item.get("restrictions")
    read = restrictions.get("read") if isinstance(restrictions, Mapping) else None
    parts = read.get("restrictions") if isinstance(read, Mapping) else None
    if not isinstance(parts, Mapping):
        return None
    out: dict[str, list[dict[str, Any]]] = {}
    for key in ("user", "group"):
        part = parts.get(key)
        if not isinstance(part, Mapping) or not isinstance(part.get("results"), list):
            return None
        results = [r for r in part["results"] if isinstance(r, Mapping)]
        if len(results) != len(part["results"]) or _maybe_truncated(part, len(results)):
            return None
        out[key] = [dict(r) for r in results]
    return out


def _maybe_truncated(part: Mapping[str, Any], returned: int) -> bool:
    links = part.get("_links")
    if isinstance(links, Mapping) and links.get("next"):
        return True
    limit, size, total = part.get("limit"), part.get("size"), part.get("totalSize")
    if isinstance(size, int) and size > returned:
        return True
    if isinstance(total, int) and total > returned:
        return True
    # A full page may have a next one that the response does not link: ask for the whole list
    # (``limit`` 0 with nothing returned says nothing about who is listed either).
    return isinstance(limit, int) and returned >= limit
