"""A fake Confluence Cloud site on 127.0.0.1, serving ``connectors/confluence/fixtures``.

It behaves like the real API where the connector depends on it (see the fixtures
README): cursor pagination, v1 links relative to ``/wiki``, ``body-format``,
basic auth, CQL ``lastmodified`` filtering.  It records every request and can
be told to answer 429 (with a Retry-After) or 500 once for a given path.
"""

from __future__ import annotations

import base64
import copy
import json
import re
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from tests.security.secret_canary import secret

# The API token carries the run's secret canary (tests/security/secret_canary.py).
TOKEN = secret("tok")
FIXTURES = Path(__file__).resolve().parents[3] / "connectors" / "confluence" / "fixtures"


@dataclass(frozen=True)
class Recorded:
    path: str
    query: dict[str, str]
    status: int


class FakeConfluence:
    def __init__(self, *, email: str = "svc@acme.example", token: str = TOKEN) -> None:
        self.json: dict[str, Any] = {}
        self.blobs: dict[str, bytes] = {}
        for file in FIXTURES.rglob("*"):
            if not file.is_file() or file.name == "README.md":
                continue
            rel = "/" + file.relative_to(FIXTURES).as_posix()
            if file.suffix == ".json":
                self.json[rel[: -len(".json")]] = json.loads(file.read_text())
            else:
                self.blobs[rel] = file.read_bytes()
        self.auth = "Basic " + base64.b64encode(f"{email}:{token}".encode()).decode()
        self.requests: list[Recorded] = []
        self.throttle_once: dict[str, str] = {}  # path -> Retry-After value
        self.fail_once: set[str] = set()  # paths answered 500 once
        self._trash: dict[str, tuple[dict[str, Any], int]] = {}
        # v1 offset listings may answer fewer items than ``limit`` although more follow: "the
        # limit ... may be restricted by fixed system limits"
        # (https://developer.atlassian.com/cloud/confluence/rest/v1/intro/#pagination); only a
        # missing ``_links.next`` ends a listing.  The fake caps its pages here to show it.
        self.v1_page_cap = 1
        # The v1 content listing (``GET /wiki/rest/api/content``, see ``_content_listing``) serves at
        # most this many items per page when set (the same documented "fixed system limits").
        self.v1_content_page_cap: int | None = None
        # Expanded restriction lists are paged collections (``UserArray`` / ``GroupArray``: results,
        # start, limit, size); the docs do not say how many entries an expansion carries, so the fake
        # cuts each at this many and reports ``limit`` / ``size`` as such a collection does.
        self.expanded_restriction_limit = 200
        # The deprecated v1 content listing withdrawn (404), to show the connector's v2 fallback.
        self.v1_content_listing_gone = False
        self.listing_expansions = self.LISTING_EXPANSIONS  # what the listing expands (tests may narrow it)
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    # ------------------------------------------------------------ lifecycle

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeConfluence:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    # ------------------------------------------------------------ site edits

    def edit_page(self, page_id: str, *, body: str, when: str) -> None:
        """A new version of a page: bumps its version, body and its CQL hit's ``version.when``."""
        page = self.json[f"/wiki/api/v2/pages/{page_id}"]
        page["version"] = {**page["version"], "number": page["version"]["number"] + 1, "createdAt": when}
        page["body"]["storage"]["value"] = body
        for hit in self.json["/wiki/rest/api/content/search"]["results"]:
            if hit["id"] == page_id:
                hit["version"] = {"when": when, "number": page["version"]["number"]}

    def trash_page(self, page_id: str) -> None:
        """Like Confluence: a trashed page disappears from listings and GET answers 404."""
        page = self.json.pop(f"/wiki/api/v2/pages/{page_id}")
        listing = self.json[f"/wiki/api/v2/spaces/{page['spaceId']}/pages"]["results"]
        index = next(i for i, p in enumerate(listing) if p["id"] == page_id)
        self._trash[page_id] = (page, index)
        listing.pop(index)

    def restore_page(self, page_id: str) -> None:
        page, index = self._trash.pop(page_id)
        self.json[f"/wiki/api/v2/pages/{page_id}"] = page
        listing = self.json[f"/wiki/api/v2/spaces/{page['spaceId']}/pages"]["results"]
        bulk = {k: v for k, v in page.items() if k != "body"}
        listing.insert(index, bulk)

    def set_read_restriction(self, content_id: str, users: list[dict[str, Any]]) -> None:
        restriction = self.json[f"/wiki/rest/api/content/{content_id}/restriction/byOperation/read"]
        restriction["restrictions"]["user"]["results"] = users
        restriction["restrictions"]["user"]["size"] = len(users)

    def add_pages_like(self, template: str, count: int, *, first_id: int = 200000) -> list[str]:
        """``count`` new pages shaped like page ``template`` (same space, parent chain and read
        restriction, no attachments), appended to its space's listing; returns their ids."""
        base = "/wiki/api/v2/pages"
        page = self.json[f"{base}/{template}"]
        restriction = self.json[f"/wiki/rest/api/content/{template}/restriction/byOperation/read"]
        listing = self.json[f"/wiki/api/v2/spaces/{page['spaceId']}/pages"]["results"]
        ids = []
        for k in range(count):
            page_id = str(first_id + k)
            title = f"Generated page {page_id}"
            copy_ = copy.deepcopy(page)
            copy_.update(id=page_id, title=title, position=first_id + k)
            copy_["body"]["storage"]["value"] = f"<p>{title}: notes on release number {page_id}.</p>"
            copy_["_links"] = {**copy_["_links"], "webui": f"/spaces/X/pages/{page_id}/Generated"}
            self.json[f"{base}/{page_id}"] = copy_
            self.json[f"{base}/{page_id}/ancestors"] = copy.deepcopy(self.json[f"{base}/{template}/ancestors"])
            self.json[f"{base}/{page_id}/attachments"] = {
                "results": [],
                "_links": {"base": "https://acme.atlassian.net/wiki"},
            }
            self.json[f"/wiki/rest/api/content/{page_id}/restriction/byOperation/read"] = copy.deepcopy(restriction)
            listing.append({k2: v for k2, v in copy_.items() if k2 != "body"})
            ids.append(page_id)
        return ids

    def set_read_restriction_groups(self, content_id: str, groups: list[dict[str, Any]]) -> None:
        restriction = self.json[f"/wiki/rest/api/content/{content_id}/restriction/byOperation/read"]
        restriction["restrictions"]["group"] = {"results": groups, "start": 0, "limit": 200, "size": len(groups)}

    def paths(self) -> list[str]:
        with self._lock:
            return [r.path for r in self.requests]

    # ------------------------------------------------------------ serving

    def _record(self, path: str, query: dict[str, str], status: int) -> None:
        with self._lock:
            self.requests.append(Recorded(path, query, status))

    def _respond(self, path: str, query: dict[str, str], headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        if headers.get("authorization") != self.auth:
            return 401, {}, b'{"message": "Unauthorized"}'
        if path in self.throttle_once:
            return 429, {"Retry-After": self.throttle_once.pop(path)}, b'{"message": "Rate limited"}'
        if path in self.fail_once:
            self.fail_once.discard(path)
            return 500, {}, b'{"message": "Internal error"}'
        if path in self.blobs:
            return 200, {"Content-Type": "application/octet-stream"}, self.blobs[path]
        if path == "/wiki/rest/api/content":
            if self.v1_content_listing_gone:
                return 404, {}, b'{"message": "Not found"}'
            return 200, {"Content-Type": "application/json"}, json.dumps(self._content_listing(query)).encode()
        if path == "/wiki/rest/api/user":
            return 404, {}, b'{"message": "No user"}'
        if path not in self.json:
            return 404, {}, b'{"message": "Not found"}'
        source = self.json[path]
        if isinstance(source.get("results"), list):
            # Listings are sliced below and their entries never edited: copy the envelope and the list,
            # not its entries (a deep copy of a 10,000-page listing per request would time the fake).
            body = copy.deepcopy({k: v for k, v in source.items() if k != "results"})
            body["results"] = list(source["results"])
        else:
            body = copy.deepcopy(source)
        extra: dict[str, str] = {}
        if path.startswith("/wiki/api/v2/") and "limit" in query:
            # v2 ``limit``: "Minimum 1, Maximum 250" on every listing
            # (https://developer.atlassian.com/cloud/confluence/rest/v2/api-group-page/#api-spaces-id-pages-get);
            # outside that range the API answers 400.
            if not query["limit"].isdigit() or not 1 <= int(query["limit"]) <= 250:
                return 400, {}, b'{"errors": [{"status": 400, "code": "INVALID_REQUEST_PARAMETER"}]}'
        if path.startswith("/wiki/api/v2/") and "results" not in body:
            if query.get("body-format") != "storage":
                body.pop("body", None)
            # A single page/blog post/space carries ``_links`` webui/editui/tinyui but no ``base``
            # (PageSingle in https://developer.atlassian.com/cloud/confluence/rest/v2/api-group-page/#api-pages-id-get);
            # ``base`` is on listings (MultiEntityResult ``_links``).
            (body.get("_links") or {}).pop("base", None)
        elif path == "/wiki/rest/api/content/search":
            body, extra = self._search(body, query)
        elif path.startswith("/wiki/rest/api/group"):
            body = self._offset_page(path, body, query)
        elif path.endswith("/restriction/byOperation/read"):
            # Users and groups are paged together by start/limit.
            start, limit = int(query.get("start", 0)), int(query.get("limit", 200))
            for part in body["restrictions"].values():
                part["results"] = part["results"][start : start + limit]
                part.update(start=start, limit=limit, size=len(part["results"]))
        elif path.startswith("/wiki/api/v2/") and "results" in body:
            body, extra = self._cursor_page(path, body, query)
        return 200, {"Content-Type": "application/json", **extra}, json.dumps(body).encode()

    def _cursor_page(
        self, path: str, body: dict[str, Any], query: dict[str, str]
    ) -> tuple[dict[str, Any], dict[str, str]]:
        limit = int(query.get("limit", 25))
        start = int(base64.urlsafe_b64decode(query["cursor"]).decode()) if "cursor" in query else 0
        if path == "/wiki/api/v2/spaces" and query.get("keys"):
            keys = set(query["keys"].split(","))
            body["results"] = [space for space in body["results"] if space["key"] in keys]
        results = body["results"]
        body["results"] = results[start : start + limit]
        headers: dict[str, str] = {}
        if start + limit < len(results):
            rest = {k: v for k, v in query.items() if k != "cursor"}
            cursor = base64.urlsafe_b64encode(str(start + limit).encode()).decode()
            nxt = f"{path}?{urlencode({**rest, 'cursor': cursor})}"
            headers["Link"] = f'<{nxt}>; rel="next", <https://acme.atlassian.net/wiki>; rel="base"'
            # Attachment listings carry the next URL only in the Link header (both are documented).
            if not path.endswith("/attachments"):
                body["_links"] = {**body.get("_links", {}), "next": nxt}
        return body, headers

    def _offset_page(self, path: str, body: dict[str, Any], query: dict[str, str]) -> dict[str, Any]:
        # v1 offset paging (https://developer.atlassian.com/cloud/confluence/rest/v1/intro/#pagination):
        # ``_links.next`` is relative to ``_links.base`` (the /wiki root) and absent on the last
        # page; a page may be shorter than ``limit`` (see ``v1_page_cap``).
        start, limit = int(query.get("start", 0)), int(query.get("limit", 200))
        results = body["results"]
        served = min(limit, self.v1_page_cap)
        body["results"] = results[start : start + served]
        body.update(start=start, limit=limit, size=len(body["results"]))
        body["_links"] = {"base": f"{self.url}/wiki", "context": "/wiki"}
        if start + served < len(results):
            rest = {k: v for k, v in query.items() if k != "start"}
            body["_links"]["next"] = f"{path.removeprefix('/wiki')}?{urlencode({**rest, 'start': start + served})}"
        return body

    def _search(self, body: dict[str, Any], query: dict[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
        match = re.search(r'lastmodified >= "(\d{4}-\d{2}-\d{2} \d{2}:\d{2})"', query.get("cql", ""))
        if match:
            since = datetime.strptime(match.group(1), "%Y-%m-%d %H:%M").replace(tzinfo=UTC)
            body["results"] = [
                hit for hit in body["results"] if datetime.fromisoformat(hit["version"]["when"]) >= since
            ]
        body["results"].sort(key=lambda hit: hit["version"]["when"])
        limit = int(query.get("limit", 25))
        start = int(query.get("start", 0))
        results = body["results"]
        body["results"] = results[start : start + limit]
        body.update(start=start, limit=limit, size=len(body["results"]))
        if start + limit < len(results):
            # v1 next links are relative to the /wiki context, not to the site root.
            rest = {k: v for k, v in query.items() if k not in ("start", "cursor")}
            body["_links"]["next"] = (
                f"/rest/api/content/search?{urlencode({**rest, 'next': 'true', 'cursor': 'c' + str(start + limit), 'start': start + limit})}"
            )
        return body, {}

    # ``expand`` values of v1 ``GET /wiki/rest/api/content`` that the fake serves: the ones the ACL walk
    # uses, each documented for that endpoint ("restrictions.read.restrictions.user returns the users
    # that have permission to read the content", "...group returns the groups...", "ancestors returns
    # the parent content, if the content is a page";
    # https://developer.atlassian.com/cloud/confluence/rest/v1/api-group-content/#api-wiki-rest-api-content-get).
    # ``space`` and ``version`` are "expanded by default" there and always served.  Any other name is
    # not an error but is not expanded either: the entity stays under ``_expandable`` (how expansion
    # works, https://developer.atlassian.com/cloud/confluence/rest/v1/intro/#expansion), so a client
    # that asks for something else gets no data and has to notice.
    LISTING_EXPANSIONS = frozenset(
        {"restrictions.read.restrictions.user", "restrictions.read.restrictions.group", "ancestors"}
    )

    def _content_listing(self, query: dict[str, str]) -> dict[str, Any]:
        """v1 ``GET /wiki/rest/api/content?spaceKey=&type=&status=&expand=&start=&limit=`` (Content array).

        Built from the same fixtures the v2 listings, restrictions and ancestors are served from, so
        every site edit (``set_read_restriction``, ``trash_page``, ...) shows in it too.  Offset paging
        as every v1 listing: ``_links.next`` relative to ``/wiki`` while more follow (``limit``
        default 25, capped by ``v1_content_page_cap`` when set).  ``status`` defaults to current;
        trashed content is not in the v2 listings the fake keeps, so it is never listed.
        """
        kind = query.get("type", "page")
        collection = {"page": "pages", "blogpost": "blogposts"}.get(kind)
        spaces = self.json["/wiki/api/v2/spaces"]["results"]
        wanted = [sp for sp in spaces if not query.get("spaceKey") or sp["key"] == query["spaceKey"]]
        runs: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []  # (space, its entries), in order
        if collection and query.get("status", "current") in ("current", "any"):
            for space in wanted:
                listing = self.json.get(f"/wiki/api/v2/spaces/{space['id']}/{collection}") or {}
                runs.append((space, listing.get("results") or []))
        expand = {e.strip() for e in query.get("expand", "").split(",") if e.strip()}
        start, limit = int(query.get("start", 0)), int(query.get("limit", 25))
        served = min(limit, self.v1_content_page_cap) if self.v1_content_page_cap else limit
        # Slice across the spaces' lists without copying them (a 10,000-page listing per request
        # would time the fake, not the client).
        page: list[tuple[dict[str, Any], dict[str, Any]]] = []
        total, skip = 0, start
        for space, entries in runs:
            total += len(entries)
            if skip >= len(entries):
                skip -= len(entries)
                continue
            page += [(space, entry) for entry in entries[skip : skip + served - len(page)]]
            skip = 0
        body: dict[str, Any] = {
            "results": [self._v1_content(kind, space, entry, expand) for space, entry in page],
            "start": start,
            "limit": limit,
            "size": len(page),
            "_links": {"base": f"{self.url}/wiki", "context": "/wiki"},
        }
        if start + served < total:
            rest = {k: v for k, v in query.items() if k != "start"}
            body["_links"]["next"] = f"/rest/api/content?{urlencode({**rest, 'start': start + served})}"
        return body

    def _v1_content(self, kind: str, space: dict[str, Any], entry: dict[str, Any], expand: set[str]) -> dict[str, Any]:
        cid = str(entry["id"])
        version = entry.get("version") or {}
        out: dict[str, Any] = {
            "id": cid,
            "type": kind,
            "status": entry.get("status", "current"),
            "title": entry.get("title", ""),
            "space": {"id": int(space["id"]), "key": space["key"], "name": space.get("name", "")},
            "version": {"number": version.get("number", 1), "when": version.get("createdAt", "")},
            "_links": {"webui": (entry.get("_links") or {}).get("webui", "")},
            "_expandable": {"restrictions": f"/rest/api/content/{cid}/restriction/byOperation"},
        }
        if kind == "page":
            out["_expandable"]["ancestors"] = ""
        restriction = self.json.get(f"/wiki/rest/api/content/{cid}/restriction/byOperation/read")
        parts = {"user", "group"} & {e.rsplit(".", 1)[-1] for e in expand & self.listing_expansions}
        if parts and restriction is not None:
            cut = self.expanded_restriction_limit
            subs: dict[str, Any] = {}
            for part in sorted(parts):
                results = list((restriction["restrictions"].get(part) or {}).get("results") or [])
                subs[part] = {"results": results[:cut], "start": 0, "limit": cut,
                              "size": len(results[:cut])}  # fmt: skip
            subs["_expandable"] = {p: f"/rest/api/content/{cid}/restriction/byOperation/read/{p}"
                                   for p in {"user", "group"} - parts}  # fmt: skip
            out["restrictions"] = {"read": {"operation": "read", "restrictions": subs,
                                            "_expandable": {"content": f"/rest/api/content/{cid}"}}}  # fmt: skip
            del out["_expandable"]["restrictions"]
        if kind == "page" and "ancestors" in expand & self.listing_expansions:
            chain = (self.json.get(f"/wiki/api/v2/pages/{cid}/ancestors") or {}).get("results") or []
            out["ancestors"] = [
                {"id": str(a["id"]), "type": "page", "status": "current",
                 "title": (self.json.get(f"/wiki/api/v2/pages/{a['id']}") or {}).get("title", "")}
                for a in chain
            ]  # fmt: skip
            del out["_expandable"]["ancestors"]
        return out

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server API
                parts = urlsplit(self.path)
                query = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
                headers = {k.lower(): v for k, v in self.headers.items()}
                with fake._lock:
                    status, extra, payload = fake._respond(parts.path, query, headers)
                fake._record(parts.path, query, status)
                self.send_response(status)
                for key, value in extra.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - keep test output quiet
                return

        return Handler
