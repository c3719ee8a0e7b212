"""Confluence v2 content → ``SourceDocument``.

External ids: ``page:<id>``, ``blogpost:<id>``, ``attachment:<id>`` (the v2 ids,
attachment ids keep their ``att`` prefix).  Bodies are handed over raw in
storage format; the pipeline does the text extraction.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from retrieval.contracts import Acl, SourceDocument

STORAGE_MEDIA_TYPE = "application/vnd.atlassian.storage+xml"


def external_id(kind: str, content_id: str) -> str:
    if kind not in ("page", "blogpost", "attachment"):
        raise ValueError(f"unsupported Confluence content kind: {kind!r}")
    return f"{kind}:{content_id}"


def parse_time(value: object) -> datetime | None:
    """Confluence timestamps are ISO 8601 with a ``Z`` suffix (e.g. 2024-03-01T10:15:30.123Z)."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value)  # 3.11+ parses the trailing "Z"
    except ValueError:
        return None


def _version(item: Mapping[str, Any]) -> Mapping[str, Any]:
    version = item.get("version")
    return version if isinstance(version, Mapping) else {}


def version_number(item: Mapping[str, Any]) -> int:
    try:
        return int(_version(item).get("number") or 0)
    except (TypeError, ValueError):
        return 0


def web_url(base: str, webui: object) -> str:
    """``_links.base`` + ``_links.webui``: always absolute, never a Confluence route rebuilt by hand.

    ``base`` is the item's own ``_links.base`` when it has one, else the listing's (v2 single
    entities carry only ``webui``/``editui``/``tinyui``), else the site's ``/wiki`` root.
    """
    if not isinstance(webui, str) or not webui:
        return base
    if webui.startswith(("https://", "http://")):
        return webui
    return base.rstrip("/") + "/" + webui.lstrip("/")


def content_document(kind: str, item: Mapping[str, Any], *, space_key: str, acl: Acl, base: str = "") -> SourceDocument:
    """A page or blog post from ``GET /wiki/api/v2/{pages|blogposts}/{id}?body-format=storage``."""
    links = item.get("_links") or {}
    base = str(links.get("base") or base)
    storage = ((item.get("body") or {}).get("storage") or {}).get("value") or ""
    version = _version(item)
    metadata = {
        "confluence_kind": kind,
        "space_id": str(item.get("spaceId") or ""),
    }
    if item.get("parentId"):
        metadata["parent_id"] = str(item["parentId"])
    return SourceDocument(
        external_id=external_id(kind, str(item["id"])),
        title=str(item.get("title") or ""),
        url=web_url(base, links.get("webui")),
        content=storage.encode("utf-8"),
        media_type=STORAGE_MEDIA_TYPE,
        acl=acl,
        source_version=version_number(item),
        container=space_key,
        author=str(item.get("authorId") or ""),
        created_at=parse_time(item.get("createdAt")),
        updated_at=parse_time(version.get("createdAt")) or parse_time(item.get("createdAt")),
        metadata=metadata,
    )


def attachment_document(
    attachment: Mapping[str, Any],
    content: bytes,
    *,
    container_kind: str,
    container: Mapping[str, Any],
    space_key: str,
    acl: Acl,
    base: str = "",
) -> SourceDocument:
    """An attachment from ``GET /wiki/api/v2/{pages|blogposts}/{id}/attachments``; it carries its
    container's ACL (Confluence has no attachment-level restrictions).  ``content`` is empty for
    an attachment indexed by metadata only (the pipeline describes it by name, type, author, dates)."""
    links = attachment.get("_links") or {}
    base = str((container.get("_links") or {}).get("base") or base)
    version = _version(attachment)
    media_type = str(attachment.get("mediaType") or "application/octet-stream").split(";")[0].strip()
    return SourceDocument(
        external_id=external_id("attachment", str(attachment["id"])),
        title=str(attachment.get("title") or ""),
        url=web_url(base, attachment.get("webuiLink") or links.get("webui")),
        content=content,
        media_type=media_type,
        acl=acl,
        source_version=version_number(attachment),
        container=space_key,
        author=str(version.get("authorId") or ""),
        created_at=parse_time(attachment.get("createdAt")),
        updated_at=parse_time(version.get("createdAt")) or parse_time(attachment.get("createdAt")),
        metadata={
            "confluence_kind": "attachment",
            "container_id": str(container.get("id") or ""),
            "container_kind": container_kind,
            "container_title": str(container.get("title") or ""),
            "space_id": str(container.get("spaceId") or ""),
            "file_name": str(attachment.get("title") or ""),
            "file_size": str(attachment.get("fileSize") or ""),
            # retrieval.pipeline.METADATA_ONLY: no bytes were downloaded, describe the file instead.
            **({"metadata_only": "1"} if not content else {}),
        },
    )
