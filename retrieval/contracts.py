"""Contracts between connectors and the ingestion pipeline.

A connector maps a source item to a ``SourceDocument`` (content + metadata +
CNF permissions) and hands it to ``retrieval.actions.do_enqueue_document``;
everything after that (extraction, dedupe, chunking, embedding, the versioned
upsert) is the pipeline's job and identical for every source.

Permissions are CNF: ``acl`` is a list of clauses; a user may read the
document iff *every* clause contains at least one principal the user holds.
Principals are typed, prefixed strings, e.g. ``confluence:group:<id>``,
``confluence:user:<accountId>``, ``entra:group:<objectId>``,
``entra:user:<objectId>``, ``slack:channel:<id>``, ``slack:user:<id>``,
``user:<email>``, ``public:tenant``.  An empty ``acl`` (no clauses) or an
empty clause means nobody can read the document (fail closed).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

Acl = tuple[tuple[str, ...], ...]

PRINCIPAL_KINDS = (
    "confluence:group:",
    "confluence:user:",
    "entra:group:",
    "entra:user:",
    "entra:org:",  # every internal (member, non-guest) user of an Entra tenant
    "sharepoint:sitegroup:",
    "slack:channel:",
    "slack:user:",
    "slack:workspace:",  # every full (non-guest) member of a Slack workspace
    "user:",
    "public:tenant",
)


def is_valid_principal(p: str) -> bool:
    return isinstance(p, str) and any(
        p == k if k == "public:tenant" else (p.startswith(k) and len(p) > len(k)) for k in PRINCIPAL_KINDS
    )


def normalise_acl(clauses: object) -> Acl:
    """Canonical CNF: each clause sorted and de-duplicated, clauses sorted and de-duplicated.

    Raises ValueError for anything that is not a list of lists of valid principals.
    """
    if not isinstance(clauses, (list, tuple)):
        raise ValueError("acl must be a list of clauses")
    out: set[tuple[str, ...]] = set()
    for clause in clauses:
        if not isinstance(clause, (list, tuple)):
            raise ValueError("each acl clause must be a list of principals")
        for p in clause:
            if not is_valid_principal(p):
                raise ValueError(f"unknown principal kind: {str(p)[:60]!r}")
        out.add(tuple(sorted(set(clause))))
    return tuple(sorted(out))


@dataclass(frozen=True)
class SourceDocument:
    """One item from a source, as a connector hands it to the pipeline."""

    external_id: str
    title: str
    url: str
    # Raw content and its media type: "text/html", "application/vnd.atlassian.storage+xml"
    # (Confluence storage format), "text/markdown", "text/plain", "application/pdf",
    # "application/vnd.openxmlformats-officedocument.wordprocessingml.document".
    content: bytes
    media_type: str
    acl: Acl
    # Monotonic per item at the source (Confluence version number, Graph eTag-derived
    # counter, Slack message ts in microseconds...). An event carrying a lower value than
    # what is stored never overwrites the stored state.
    source_version: int
    container: str = ""  # space key, site/library, channel
    author: str = ""
    created_at: datetime | None = None
    updated_at: datetime | None = None
    version_label: str = ""  # a product/document version the text describes, e.g. "2023-Q3"
    metadata: dict[str, str] = field(default_factory=dict)


# Marks an upsert as the source's restore of a deleted item (e.g. a Confluence page taken out of
# the trash, which keeps its version number): the pipeline lets it replace a tombstone of the
# same version.  The pipeline strips the marker before storing metadata.
RESTORE_MARKER = "_cairn_restore"


def without_nul(value: Any) -> Any:
    # Postgres text and jsonb cannot hold U+0000; a source that sends one must not make the
    # whole event fail to store.
    if isinstance(value, str):
        return value.replace("\x00", "")
    if isinstance(value, dict):
        return {without_nul(k): without_nul(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [without_nul(v) for v in value]
    return value


def document_payload(doc: SourceDocument) -> dict[str, Any]:
    data = without_nul(asdict(doc))
    data.pop("content")
    for key in ("created_at", "updated_at"):
        if isinstance(data[key], datetime):
            data[key] = data[key].isoformat()
    data["acl"] = [list(c) for c in doc.acl]
    return data


def document_from_payload(payload: dict[str, Any], content: bytes) -> SourceDocument:
    data = dict(payload)
    for key in ("created_at", "updated_at"):
        if data.get(key):
            data[key] = datetime.fromisoformat(data[key])
    data["acl"] = normalise_acl(data.get("acl", []))
    data["metadata"] = dict(data.get("metadata") or {})
    return SourceDocument(content=content, **data)
