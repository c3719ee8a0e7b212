"""Bundled sample exports as source wire formats, built from ``../shared/data`` (deterministic ids).

* Confluence Cloud (REST v2 + v1): spaces ``ONBOARD`` (getting-started, travel-and-leave: small, synced
  first), ``HANDBOOK`` (the rest of the 18F handbook) and ``GLOBEX`` (the second tenant's site, anonymous
  read).  Space read grant: group *all-staff*.  A restricted section hangs under a section page carrying the
  restriction (``supervisor-resources`` → supervisors, ``office-of-operations`` → operations); in
  ``performance-management`` the section page is restricted to supervisors and each page to hr, so the
  inherited restrictions intersect (supervisors AND hr).
* Microsoft Graph v1.0: one site, one drive with all 20 SEC 10-Q PDFs of ``sec10q/docs`` shared with the
  AAD group *finance*.
* Confluence space ``ENG`` (read grant all-staff): the two worked examples of the design seed as pages, a
  release-notes delta ("what changed in the latest release", with the previous release's default and an
  upgrade note) and the orders-api multi-hop (a service catalogue entry and a runtime support policy).
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import lxml.html
from lxml import etree

from retrieval.extract import clean_title, render_markdown, tidy_markdown_residue

ACME_USERS = {  # user -> Confluence groups (as in the previous demo)
    "alice": ["all-staff", "supervisors", "operations", "hr"],
    "bob": ["all-staff", "operations", "hr"],
    "carol": ["all-staff"],
}


@dataclass(frozen=True)
class DemoLogin:
    username: str
    password: str
    tenant: str
    sees: str


# Cairn's demo logins; the demo source server accepts the same ones from a browser opening a citation.
DEMO_LOGINS = [
    DemoLogin("alice", "alice-demo", "acme", "everything, incl. supervisor and HR pages and the 10-Q library"),
    DemoLogin("bob", "bob-demo", "acme", "wiki incl. operations; not supervisor pages, not the 10-Q library"),
    DemoLogin("carol", "carol-demo", "acme", "general wiki pages and the 10-Q library"),
    DemoLogin("mallory", "mallory-demo", "globex", "only the second tenant's pages"),
]
ACME_FINANCE = ["alice", "carol"]  # AAD group "finance"
FIRST_SECTIONS = ("getting-started", "travel-and-leave")
RESTRICTED = {  # section -> (section page restriction group, per-page restriction group or None)
    "supervisor-resources": ("supervisors", None),
    "office-of-operations": ("operations", None),
    "performance-management": ("supervisors", "hr"),
}
GLOBEX_PAGES = 15

CONFLUENCE_EMAIL = "demo-sync@acme.example"
CONFLUENCE_TOKEN = "demo-confluence-token"  # a throwaway credential of the local demo server only
GRAPH_TENANT = "ac3e0000-0000-4000-8000-00000000de30"
GRAPH_CLIENT_ID = "demo-graph-client"
GRAPH_CLIENT_SECRET = "demo-graph-secret"  # a throwaway credential of the local demo server only
SITE_ID = "acme.sharepoint.example,de300000-0000-4000-8000-000000000001,de300000-0000-4000-8000-000000000002"
DRIVE_ID = "b!finance-documents"
SPACES = {"ONBOARD": "1001", "HANDBOOK": "1002", "GLOBEX": "1003", "ENG": "1004"}


# The design seed's two worked examples as engineering pages (page id, title, last modified, Markdown).
# Product, setting and service names are the seed's invented placeholders; the wording is ours.
ENG_PAGES: tuple[tuple[str, str, str, str], ...] = (
    ("40001", "ExampleDB release history", "2025-09-25T09:00:00+00:00",
     "# ExampleDB release history\n\nExampleDB 18 is the current major release, released on 2025-09-25.\n\n"
     "ExampleDB 17 was released on 2024-09-26 and is the previous major release.\n"),
    ("40002", "ExampleDB 18 release notes", "2025-09-25T10:00:00+00:00",
     "# ExampleDB 18 release notes\n\n## Logical replication\n\n"
     "The subscription option lr_example_parallel_apply now defaults to on for newly created subscriptions. "
     "With parallel apply, large transactions are applied by parallel workers on the subscriber while they are "
     "still being received.\n\n## Publishers\n\nPublications can now filter rows by a column list on the "
     "publisher side.\n"),
    ("40003", "ExampleDB 17 configuration reference: subscriptions", "2024-09-26T10:00:00+00:00",
     "# ExampleDB 17 configuration reference: subscriptions\n\n"
     "lr_example_parallel_apply (boolean). Default: off. When on, the subscriber applies large transactions "
     "with parallel workers.\n"),
    ("40004", "Upgrading to ExampleDB 18", "2025-09-25T11:00:00+00:00",
     "# Upgrading to ExampleDB 18\n\nExisting subscriptions keep the value of lr_example_parallel_apply that "
     "was stored before the upgrade; only subscriptions created after the upgrade get the new default.\n"),
    ("40005", "Service catalogue: orders-api", "2026-04-14T08:00:00+00:00",
     "# Service catalogue: orders-api\n\norders-api: runtime Foo 3.2, owner payments-platform, "
     "updated 2026-04-14.\n\nThe service takes orders from the web shop and hands them to billing.\n"),
    ("40006", "Service catalogue: orders-worker", "2026-03-02T08:00:00+00:00",
     "# Service catalogue: orders-worker\n\norders-worker: runtime Foo 3.4, owner fulfilment, "
     "updated 2026-03-02.\n"),
    ("40007", "Foo runtime support policy", "2026-01-05T08:00:00+00:00",
     "# Foo runtime support policy\n\nFoo 3.2: security fixes until 2026-06-30; end of life 2026-12-31.\n\n"
     "Foo 3.4: security fixes until 2027-06-30; end of life 2027-12-31.\n"),
)  # fmt: skip


def sec_files(data_dir: Path) -> list[Path]:
    """Every 10-Q PDF of the bundled library, in name order."""
    return sorted((data_dir / "sec10q" / "docs").glob("*.pdf"))


def pdf_item_id(path: Path) -> str:
    """A drive item id derived from the file name (stable whatever else is in the library)."""
    return "item-10q-" + re.sub(r"[^a-z0-9]+", "-", path.stem.lower()).strip("-")


def account_id(user: str) -> str:
    return f"557058:demo-{user}"


def group_id(name: str) -> str:
    return f"grp-{name}"


# Confluence storage format is XHTML: the elements a page body may use, per
# https://confluence.atlassian.com/doc/confluence-storage-format-790796544.html
_STORAGE_ELEMENTS = frozenset(
    {
        "p", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "table", "thead", "tbody", "tr", "th",
        "td", "strong", "em", "b", "i", "u", "s", "del", "code", "pre", "a", "br", "blockquote", "hr", "sup",
        "sub", "span", "div",
    }
)  # fmt: skip
# Dropped with their content: never page text (scripts, widgets, embeds; images need ac:image + attachments).
_STORAGE_DROP = frozenset(
    {"script", "style", "iframe", "button", "img", "input", "select", "svg", "object", "embed", "form", "noscript"}
)
_STORAGE_RENAME = {"details": "div", "summary": "p", "figure": "div", "figcaption": "p", "center": "div"}
_STORAGE_NS = 'xmlns:ac="http://atlassian.com/content" xmlns:ri="http://atlassian.com/resource/identifier"'


def markdown_to_storage(text: str) -> str:
    """The handbook's Markdown (with Jekyll front matter, Liquid tags and inline HTML) as Confluence
    storage format: rendered by a CommonMark parser, then reduced to well-formed storage XHTML."""
    rendered = render_markdown(text)
    root = lxml.html.fragment_fromstring(rendered or "<p></p>", create_parent="div")
    for el in list(root.iter()):
        if el is root or not isinstance(el.tag, str):
            continue
        tag = el.tag.lower()
        if tag in _STORAGE_DROP:
            el.drop_tree()
            continue
        tag = _STORAGE_RENAME.get(tag, tag)
        href = el.get("href", "") if tag == "a" else ""
        el.attrib.clear()
        if tag not in _STORAGE_ELEMENTS or (tag == "a" and not href.startswith(("http://", "https://", "mailto:"))):
            el.drop_tag()  # keep the text (a Liquid page link has no target left)
            continue
        el.tag = tag
        if href:
            el.set("href", href)
    tidy_markdown_residue(root)
    for el in list(root.iter()):  # comments and processing instructions have no place in a page body
        if not isinstance(el.tag, str) and el.getparent() is not None:
            el.drop_tree()
    lead = html.escape(root.text or "", quote=False)
    body = lead + "".join(etree.tostring(child, encoding="unicode", method="xml", with_tail=True) for child in root)
    return body.strip()


def validate_storage(body: str) -> None:
    """Raise ``lxml.etree.XMLSyntaxError`` unless ``body`` is well-formed storage XHTML."""
    etree.fromstring(f"<root {_STORAGE_NS}>{body}</root>".encode(), etree.XMLParser(resolve_entities=False))


@dataclass
class Page:
    id: str
    title: str
    space: str
    body: str
    when: str
    parent: str | None = None
    restrict_group: str | None = None


@dataclass
class Exports:
    base_url: str
    pages: dict[str, Page] = field(default_factory=dict)
    space_pages: dict[str, list[str]] = field(default_factory=dict)  # space key -> page ids, listing order
    pdfs: dict[str, Path] = field(default_factory=dict)  # drive item id -> file

    @property
    def wiki_base(self) -> str:
        return self.base_url + "/wiki"


def _iso(value: str) -> str:
    # "2024-05-01T12:00:00+00:00" -> Confluence's "2024-05-01T12:00:00.000Z"
    return value.replace("+00:00", "")[:19] + ".000Z"


def build_exports(data_dir: Path, base_url: str, *, limit_per_section: int | None = None) -> Exports:
    """``limit_per_section`` keeps only the first n pages of each section (tests)."""
    lines = (data_dir / "18f_handbook" / "pages_current.jsonl").read_text().splitlines()
    handbook = [json.loads(line) for line in lines if line.strip()]
    ex = Exports(base_url.rstrip("/"))
    ex.space_pages = {key: [] for key in SPACES}
    by_section: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for n, page in enumerate(handbook):
        by_section.setdefault(page["section"], []).append((n, page))
    if limit_per_section is not None:
        by_section = {s: rows[:limit_per_section] for s, rows in by_section.items()}
    # ONBOARD: the small first sections, shortest pages first, so the first answers come quickly.
    first = sorted((r for s in FIRST_SECTIONS for r in by_section.get(s, [])), key=lambda r: len(r[1]["text"]))
    rest = [r for s, rows in by_section.items() if s not in FIRST_SECTIONS for r in rows]
    for space, rows in (("ONBOARD", first), ("HANDBOOK", rest)):
        for n, page in rows:
            parent = None
            section = page["section"]
            if section in RESTRICTED:
                parent = f"{10000 + sorted(RESTRICTED).index(section)}"
                if parent not in ex.pages:
                    ex.pages[parent] = Page(parent, f"Section: {section.replace('-', ' ')}", space,
                                            f"<p>Pages of the {html.escape(section)} section.</p>",
                                            _iso(page["last_modified"]), None, RESTRICTED[section][0])  # fmt: skip
                    ex.space_pages[space].append(parent)
            pid = str(20000 + n)
            ex.pages[pid] = Page(pid, clean_title(page["title"]), space, markdown_to_storage(page["text"]),
                                 _iso(page["last_modified"]), parent,
                                 RESTRICTED[section][1] if section in RESTRICTED else None)  # fmt: skip
            ex.space_pages[space].append(pid)
    tools = [r for r in by_section.get("tools", [])][:GLOBEX_PAGES]
    for n, page in tools:
        pid = str(30000 + n)
        ex.pages[pid] = Page(pid, clean_title(page["title"]), "GLOBEX", markdown_to_storage(page["text"]),
                             _iso(page["last_modified"]))  # fmt: skip
        ex.space_pages["GLOBEX"].append(pid)
    for pid, title, when, body in ENG_PAGES:
        ex.pages[pid] = Page(pid, title, "ENG", markdown_to_storage(body), _iso(when))
        ex.space_pages["ENG"].append(pid)
    for path in sec_files(data_dir):
        ex.pdfs[pdf_item_id(path)] = path
    return ex


# ------------------------------------------------------------------ Confluence wire format


def _user(ex: Exports, user: str) -> dict[str, Any]:
    return {"type": "known", "accountId": account_id(user), "accountType": "atlassian",
            "email": f"{user}@acme.example", "publicName": user.title(), "displayName": user.title(),
            "isExternalCollaborator": False}  # fmt: skip


def _group(ex: Exports, name: str) -> dict[str, Any]:
    return {"type": "group", "name": name, "id": group_id(name),
            "_links": {"self": f"{ex.wiki_base}/rest/api/group/by-id?id={group_id(name)}"}}  # fmt: skip


def _page_bulk(ex: Exports, page: Page) -> dict[str, Any]:
    return {
        "id": page.id, "status": "current", "title": page.title, "spaceId": SPACES[page.space],
        "parentId": page.parent, "parentType": "page" if page.parent else None, "position": int(page.id),
        "authorId": account_id("alice"), "ownerId": account_id("alice"), "createdAt": page.when,
        "version": {"createdAt": page.when, "message": "", "number": 1, "minorEdit": False,
                    "authorId": account_id("alice")},
        "_links": {"webui": f"/spaces/{page.space}/pages/{page.id}", "tinyui": f"/x/{page.id}"},
    }  # fmt: skip


def confluence_json(ex: Exports, path: str, query: dict[str, str]) -> tuple[int, Any]:
    """The JSON body of one Confluence GET (paths under /wiki), before pagination."""
    base = {"_links": {"base": ex.wiki_base, "context": "/wiki"}}
    v2, v1 = "/wiki/api/v2/", "/wiki/rest/api/"
    if path == v2 + "spaces":
        rows = [{"id": sid, "key": key, "name": key.title(), "type": "global", "status": "current",
                 "homepageId": (cast("list[str | None]", ex.space_pages[key]) or [None])[0],
                 "_links": {"webui": f"/spaces/{key}"}}
                for key, sid in SPACES.items()]  # fmt: skip
        if query.get("keys"):
            rows = [row for row in rows if row["key"] in query["keys"].split(",")]
        return 200, {"results": rows, **base}
    m = re.fullmatch(r"/wiki/api/v2/spaces/(\d+)(/pages|/blogposts|/permissions)?", path)
    if m:
        key = next((k for k, v in SPACES.items() if v == m.group(1)), None)
        if key is None:
            return 404, {"message": "No space"}
        if m.group(2) == "/pages":
            return 200, {"results": [_page_bulk(ex, ex.pages[p]) for p in ex.space_pages[key]], **base}
        if m.group(2) == "/blogposts":
            return 200, {"results": [], **base}
        if m.group(2) == "/permissions":
            principal = {"type": "anonymous"} if key == "GLOBEX" else {"type": "group", "id": group_id("all-staff")}
            rows = [{"id": "1", "principal": principal, "operation": {"key": "read", "targetType": "space"}}]
            return 200, {"results": rows, **base}
        return 200, {"id": m.group(1), "key": key, "name": key.title(), "type": "global", "status": "current"}
    m = re.fullmatch(r"/wiki/api/v2/pages/(\d+)(/ancestors|/attachments|/descendants)?", path)
    if m:
        page = ex.pages.get(m.group(1))
        if page is None:
            return 404, {"message": "Not found"}
        if m.group(2) == "/ancestors":
            return 200, {"results": [{"id": page.parent, "type": "page"}] if page.parent else [], **base}
        if m.group(2):
            return 200, {"results": [], **base}
        body = _page_bulk(ex, page)
        if query.get("body-format") == "storage":
            body["body"] = {"storage": {"representation": "storage", "value": page.body}}
        body["_links"]["base"] = ex.wiki_base
        return 200, body
    m = re.fullmatch(r"/wiki/rest/api/content/(\d+)/restriction/byOperation/read", path)
    if m:
        page = ex.pages.get(m.group(1))
        if page is None:
            return 404, {"message": "Not found"}
        groups = [_group(ex, page.restrict_group)] if page.restrict_group else []
        return 200, {"operation": "read", "restrictions": {
            "user": {"results": [], "start": 0, "limit": 200, "size": 0},
            "group": {"results": groups, "start": 0, "limit": 200, "size": len(groups)}}, **base}  # fmt: skip
    if path == v1 + "group":
        names = sorted({g for gs in ACME_USERS.values() for g in gs})
        return 200, {"results": [_group(ex, n) for n in names], **base}
    m = re.fullmatch(r"/wiki/rest/api/group/grp-([\w-]+)/membersByGroupId", path)
    if m:
        return 200, {"results": [_user(ex, u) for u, gs in ACME_USERS.items() if m.group(1) in gs], **base}
    if path == v1 + "user":
        user = next((u for u in ACME_USERS if account_id(u) == query.get("accountId")), None)
        return (200, _user(ex, user)) if user else (404, {"message": "No user"})
    if path == v1 + "content/search":
        # CQL ``space = "KEY"`` or ``space in ("A","B")``: every key of the list counts.
        lists = re.findall(r"space\s*(?:=\s*\"?(\w+)|in\s*\(([^)]*)\))", query.get("cql", ""))
        keys = {k for one, many in lists for k in ([one] if one else re.findall(r"\w+", many))} or set(SPACES)
        hits: list[dict[str, Any]] = [{"id": p.id, "type": "page", "status": "current", "title": p.title,
                 "version": {"when": p.when, "number": 1}, "space": {"key": p.space}}
                for p in ex.pages.values() if p.space in keys]  # fmt: skip
        since = re.search(r'lastmodified >= "(\d{4}-\d{2}-\d{2} \d{2}:\d{2})"', query.get("cql", ""))
        if since:
            stamp = since.group(1).replace(" ", "T")
            hits = [h for h in hits if h["version"]["when"][:16] >= stamp]
        return 200, {"results": hits, **base}
    return 404, {"message": "Not found"}


# ------------------------------------------------------------------ Microsoft Graph wire format

GRAPH_USERS: list[dict[str, Any]] = [
    {"id": f"oid-{u}", "displayName": u.title(), "mail": f"{u}@acme.example", "userPrincipalName": f"{u}@acme.example",
     "userType": "Member", "accountEnabled": True}
    for u in ACME_USERS
]  # fmt: skip


def graph_items(ex: Exports) -> list[dict[str, Any]]:
    web = f"{ex.base_url}/sites/finance"
    rows: list[dict[str, Any]] = [{"id": "root", "name": "root", "root": {}, "folder": {"childCount": len(ex.pdfs)},
                                   "webUrl": f"{web}/Shared%20Documents"}]  # fmt: skip
    for item_id, path in ex.pdfs.items():
        rows.append({
            "id": item_id, "name": path.name, "file": {"mimeType": "application/pdf"}, "size": path.stat().st_size,
            "webUrl": f"{web}/Shared%20Documents/{path.name.replace(' ', '%20')}",
            "createdDateTime": "2023-11-01T00:00:00Z", "lastModifiedDateTime": "2023-11-01T00:00:00Z",
            "eTag": f'"{{{item_id}}},1"', "parentReference": {"driveId": DRIVE_ID, "id": "root"},
            "createdBy": {"user": {"displayName": "Alice", "email": "alice@acme.example"}},
        })  # fmt: skip
    return rows


def graph_json(ex: Exports, path: str, query: dict[str, str]) -> tuple[int, dict[str, str], Any]:
    rel = path.removeprefix("/v1.0/")
    web = f"{ex.base_url}/sites/finance"
    if re.fullmatch(r"sites/[^/]+", rel):
        return 200, {}, {"id": SITE_ID, "name": "finance", "displayName": "Finance", "webUrl": web}
    if re.fullmatch(r"sites/[^/]+/drives", rel):
        return 200, {}, {"value": [{"id": DRIVE_ID, "name": "Documents", "driveType": "documentLibrary",
                                    "webUrl": f"{web}/Shared%20Documents",
                                    "sharePointIds": {"listId": "list-documents"}}]}  # fmt: skip
    if re.fullmatch(r"sites/[^/]+/lists", rel):
        return 200, {}, {"value": [{"id": "list-documents", "name": "Shared Documents", "displayName": "Documents",
                                    "list": {"template": "documentLibrary", "hidden": False}}]}  # fmt: skip
    if re.fullmatch(r"sites/[^/]+/(lists/[^/]+/items|pages/microsoft\.graph\.sitePage)", rel):
        return 200, {}, {"value": []}
    if rel == f"drives/{DRIVE_ID}/root/delta":
        # The sample export never changes: a delta from a token reports nothing new.
        items = [] if "token" in query else graph_items(ex)
        return 200, {}, {"value": items, "@odata.deltaLink": f"{ex.base_url}/v1.0/{rel}?token=1"}
    m = re.fullmatch(rf"drives/{re.escape(DRIVE_ID)}/items/([^/]+)/(content|permissions)", rel)
    if m and m.group(1) in ex.pdfs:
        if m.group(2) == "content":
            return 302, {"Location": f"{ex.base_url}/_layouts/download/{m.group(1)}?tempauth=demo"}, None
        grant = {"id": "perm-finance", "roles": ["read"],
                 "grantedToV2": {"group": {"id": "g-finance", "displayName": "finance"}}}  # fmt: skip
        return 200, {}, {"value": [grant]}
    if rel == "users":
        return 200, {}, {"value": GRAPH_USERS}
    m = re.fullmatch(r"groups/([^/]+)/transitiveMembers/microsoft\.graph\.user", rel)
    if m:
        members = [u for u in GRAPH_USERS if m.group(1) == "g-finance" and u["id"][4:] in ACME_FINANCE]
        return 200, {}, {"value": members}
    return 404, {}, {"error": {"code": "itemNotFound", "message": rel}}


# ------------------------------------------------------------------ pages for a person's browser


def may_read_page(ex: Exports, user: str, page: Page) -> bool:
    """Confluence's read rule for the demo: the space grant, then every restriction on the page's path."""
    if page.space == "GLOBEX":
        return True  # anonymous read, like the second tenant's site
    groups = set(ACME_USERS.get(user, []))
    if "all-staff" not in groups:
        return False
    node: Page | None = page
    while node is not None:
        if node.restrict_group and node.restrict_group not in groups:
            return False
        node = ex.pages.get(node.parent) if node.parent else None
    return True


def page_html(ex: Exports, page: Page) -> bytes:
    """A readable page, as Confluence shows it: the title, the space, the last edit and the body."""
    title = html.escape(page.title)
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{title} · {html.escape(page.space)} · demo Confluence</title>"
        "<style>body{font:16px/1.5 system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem}"
        "header{color:#555;font-size:.9rem;border-bottom:1px solid #ddd;margin-bottom:1rem}</style></head><body>"
        f"<header>Demo Confluence · space {html.escape(page.space)} · last updated {html.escape(page.when[:10])}"
        "</header>"
        f"<h1>{title}</h1><main>{page.body}</main></body></html>"
    ).encode()
