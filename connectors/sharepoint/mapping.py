"""Graph driveItem / listItem / sitePage -> ``SourceDocument``.

``source_version`` is ``lastModifiedDateTime`` in microseconds since the epoch.
SharePoint stamps it on every content or metadata save (restoring an old version
is itself a new save with a new time), so it only grows per item, it needs no
state on our side, and it is identical whichever endpoint reports the item.
ACL-only changes do not move it; those travel as ``UpdateAcl`` instead.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, cast

from retrieval.contracts import Acl, SourceDocument

_TS = re.compile(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:\d{2})?$")
# Columns every SharePoint list item carries; they describe the item, not its content.
_SYSTEM_FIELDS = frozenset(
    {
        "Attachments",
        "AuthorLookupId",
        "ContentType",
        "Edit",
        "EditorLookupId",
        "FolderChildCount",
        "ItemChildCount",
        "LinkTitle",
        "LinkTitleNoMenu",
        "Title",
        "Created",
        "Modified",
        "AppAuthorLookupId",
        "AppEditorLookupId",
        "ComplianceAssetId",
        "id",
        "ID",
        "DocIcon",
    }
)


def parse_graph_time(value: Any) -> datetime | None:
    """Graph timestamps, tolerating 7-digit fractions and a missing offset (UTC)."""
    if not isinstance(value, str):
        return None
    m = _TS.match(value.strip())
    if not m:
        return None
    base, frac, offset = m.groups()
    micros = int((frac or "0")[:6].ljust(6, "0"))
    tz = "+00:00" if offset in (None, "Z") else offset
    return datetime.fromisoformat(f"{base}.{micros:06d}{tz}").astimezone(UTC)


def epoch_micros(value: Any) -> int:
    when = parse_graph_time(value)
    if when is None:
        return 0
    delta = when - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def driveitem_external_id(drive_id: str, item_id: str) -> str:
    return f"driveitem:{drive_id}:{item_id}"


def listitem_external_id(site_id: str, list_id: str, item_id: str) -> str:
    return f"listitem:{site_id}:{list_id}:{item_id}"


def sitepage_external_id(site_id: str, page_id: str) -> str:
    return f"sitepage:{site_id}:{page_id}"


def site_name(site: Mapping[str, Any]) -> str:
    return str(site.get("displayName") or site.get("name") or site.get("id") or "")


def container_for(site: Mapping[str, Any], library_or_list_name: str) -> str:
    return f"{site_name(site)}/{library_or_list_name}"


def _author(item: Mapping[str, Any]) -> str:
    created_by = item.get("createdBy")
    user = created_by.get("user") if isinstance(created_by, Mapping) else None
    if isinstance(user, Mapping):
        return str(user.get("displayName") or user.get("email") or "")
    return ""


def document_from_drive_item(
    item: Mapping[str, Any], *, drive_id: str, container: str, content: bytes, acl: Acl, site_id: str
) -> SourceDocument:
    file_facet = cast(Mapping[str, Any], item.get("file")) if isinstance(item.get("file"), Mapping) else {}
    parent = (
        cast(Mapping[str, Any], item.get("parentReference")) if isinstance(item.get("parentReference"), Mapping) else {}
    )
    metadata = {"site_id": site_id, "drive_id": drive_id, "item_id": str(item["id"])}
    if item.get("eTag"):
        metadata["etag"] = str(item["eTag"])
    if parent.get("path"):
        metadata["path"] = str(parent["path"])
    return SourceDocument(
        external_id=driveitem_external_id(drive_id, str(item["id"])),
        title=str(item.get("name") or ""),
        url=str(item.get("webUrl") or ""),
        content=content,
        media_type=str(file_facet.get("mimeType") or "application/octet-stream"),
        acl=acl,
        source_version=epoch_micros(item.get("lastModifiedDateTime")),
        container=container,
        author=_author(item),
        created_at=parse_graph_time(item.get("createdDateTime")),
        updated_at=parse_graph_time(item.get("lastModifiedDateTime")),
        metadata=metadata,
    )


_TAG = re.compile(r"<[^>]+>")


def _field_text(value: Any) -> str:
    """One column value as text: rich text (announcement bodies, issue comments) without its
    markup, a hyperlink column ({"Url", "Description"}) as both, a multi-choice as a list."""
    if isinstance(value, bool) or isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        text = html.unescape(_TAG.sub(" ", value)) if "<" in value else value
        return " ".join(text.split())
    if isinstance(value, Mapping):
        parts = [_field_text(value.get(k)) for k in ("Description", "Url", "LookupValue", "Label") if value.get(k)]
        return " ".join(dict.fromkeys(p for p in parts if p))
    if isinstance(value, list):
        return ", ".join(t for t in (_field_text(v) for v in value) if t)
    return ""


def render_list_item(item: Mapping[str, Any]) -> bytes:
    """A list item's own columns as plain text ("Column: value" lines under its title).

    Works for every list template: custom lists, announcements (Body), events (EventDate,
    EndDate, Location), tasks and issues (Status, Priority, DueDate), links (URL).
    """
    fields = cast(Mapping[str, Any], item.get("fields")) if isinstance(item.get("fields"), Mapping) else {}
    lines = [str(fields.get("Title") or "")]
    for key in sorted(fields):
        if key in _SYSTEM_FIELDS or key.startswith(("_", "@", "odata")) or key.endswith("LookupId"):
            continue
        text = _field_text(fields[key])
        if text.strip():
            lines.append(f"{key}: {text}")
    return "\n".join(lines).strip().encode("utf-8")


def document_from_list_item(
    item: Mapping[str, Any], *, site_id: str, list_id: str, container: str, acl: Acl
) -> SourceDocument:
    fields = cast(Mapping[str, Any], item.get("fields")) if isinstance(item.get("fields"), Mapping) else {}
    # A links list's items have no Title; the link's description names them.
    url_field = cast(Mapping[str, Any], fields["URL"]) if isinstance(fields.get("URL"), Mapping) else {}
    return SourceDocument(
        external_id=listitem_external_id(site_id, list_id, str(item["id"])),
        title=str(fields.get("Title") or url_field.get("Description") or item.get("name") or ""),
        url=str(item.get("webUrl") or ""),
        content=render_list_item(item),
        media_type="text/plain",
        acl=acl,
        source_version=epoch_micros(item.get("lastModifiedDateTime")),
        container=container,
        author=_author(item),
        created_at=parse_graph_time(item.get("createdDateTime")),
        updated_at=parse_graph_time(item.get("lastModifiedDateTime")),
        metadata={"site_id": site_id, "list_id": list_id, "item_id": str(item["id"])},
    )


def render_site_page(page: Mapping[str, Any]) -> bytes:
    """The page's title, description and web part text as one HTML document."""
    parts = [f"<h1>{html.escape(str(page.get('title') or page.get('name') or ''))}</h1>"]
    if page.get("description"):
        parts.append(f"<p>{html.escape(str(page['description']))}</p>")
    layout = cast(Mapping[str, Any], page.get("canvasLayout")) if isinstance(page.get("canvasLayout"), Mapping) else {}
    webparts: list[Any] = []
    for section in layout.get("horizontalSections") or []:
        for column in (section or {}).get("columns") or []:
            webparts.extend((column or {}).get("webparts") or [])
    vertical = layout.get("verticalSection")
    if isinstance(vertical, Mapping):
        webparts.extend(vertical.get("webparts") or [])
    for part in webparts:
        if not isinstance(part, Mapping):
            continue
        if isinstance(part.get("innerHtml"), str):  # textWebPart: already HTML
            parts.append(part["innerHtml"])
            continue
        data = part.get("data") if isinstance(part.get("data"), Mapping) else {}
        processed = data.get("serverProcessedContent") if isinstance(data, Mapping) else None
        for entry in (processed or {}).get("searchablePlainTexts") or []:
            if isinstance(entry, Mapping) and isinstance(entry.get("value"), str):
                parts.append(f"<p>{html.escape(entry['value'])}</p>")
    return ("<html><body>" + "\n".join(parts) + "</body></html>").encode("utf-8")


def is_published(page: Mapping[str, Any]) -> bool:
    # A draft's text is visible to editors only; readers see the last published version,
    # which Graph does not return, so unpublished pages are not indexed at all.
    state = page.get("publishingState")
    return isinstance(state, Mapping) and state.get("level") == "published"


def document_from_site_page(page: Mapping[str, Any], *, site_id: str, container: str, acl: Acl) -> SourceDocument:
    return SourceDocument(
        external_id=sitepage_external_id(site_id, str(page["id"])),
        title=str(page.get("title") or page.get("name") or ""),
        url=str(page.get("webUrl") or ""),
        content=render_site_page(page),
        media_type="text/html",
        acl=acl,
        source_version=epoch_micros(page.get("lastModifiedDateTime")),
        container=container,
        author=_author(page),
        created_at=parse_graph_time(page.get("createdDateTime")),
        updated_at=parse_graph_time(page.get("lastModifiedDateTime")),
        metadata={"site_id": site_id, "page_id": str(page["id"])},
    )
