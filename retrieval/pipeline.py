"""The ingestion pipeline: one code path for every source.

extract text -> canonical URL + fingerprints -> chunk with offsets -> embed in
batches -> versioned upsert (one short transaction) -> bump index version.

The slow parts (extraction, embedding) run outside any transaction; the
write phase re-checks the version guard under a per-tenant lock
(``IndexState`` row, ``SELECT ... FOR UPDATE``) so concurrent workers and
out-of-order events converge to the newest state.  Every function is
idempotent: applying the same event twice leaves the same rows.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import numpy as np
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from retrieval import clustering
from retrieval.chunking import ChunkSpan, chunk_text
from retrieval.contracts import RESTORE_MARKER, Acl, SourceDocument, normalise_acl
from retrieval.entities import describe_document
from retrieval.extract import ExtractedText, clean_title, extract_text, has_extractor, metadata_text
from retrieval.fingerprint import canonical_url, content_fingerprint, simhash64
from retrieval.models import Chunk, Document, IndexState, Source
from retrieval.outbox import record_index_change
from retrieval.permissions import acl_digest, get_index_state, intern_acl
from tenants.context import require_tenant_id

log = logging.getLogger(__name__)

OUTCOME_CREATED = "created"
OUTCOME_UPDATED = "updated"
OUTCOME_ACL_ONLY = "acl_only"
OUTCOME_METADATA_ONLY = "metadata_only"
OUTCOME_UNCHANGED = "unchanged"
OUTCOME_STALE = "stale"
OUTCOME_DELETED = "deleted"
OUTCOME_MISSING = "missing"


@dataclass(frozen=True)
class Prepared:
    doc: SourceDocument
    text: str
    chunks: list[ChunkSpan]
    canonical_url: str
    fingerprint: str
    simhash: int
    snapshot_sha256: str


def snapshot_digest(doc: SourceDocument) -> str:
    """Digest of everything that is indexed as text (content and title)."""
    h = hashlib.sha256()
    h.update(doc.title.encode())
    h.update(b"\0")
    h.update(doc.media_type.encode())
    h.update(b"\0")
    h.update(doc.content)
    return h.hexdigest()


def _metadata_only(doc: SourceDocument) -> ExtractedText:
    """Images, archives and other formats without an extractor: index what describes the file
    (issue 15) rather than failing the event, so a reader can still find it, with its ACL."""
    path = " / ".join(x for x in (doc.container, doc.metadata.get("container_title", ""), doc.metadata.get("path", ""))
                      if x)  # fmt: skip
    return metadata_text(
        title=doc.metadata.get("file_name") or doc.title,
        media_type=doc.media_type,
        path=path,
        author=doc.metadata.get("author_name") or doc.author,
        created=doc.created_at.date().isoformat() if doc.created_at else "",
        updated=doc.updated_at.date().isoformat() if doc.updated_at else "",
    )


# Set by a connector that hands over a file without its bytes (too large, or nothing to read).
METADATA_ONLY = "metadata_only"


def extract_for_index(doc: SourceDocument) -> ExtractedText:
    if not has_extractor(doc.media_type) or doc.metadata.get(METADATA_ONLY) == "1":
        return _metadata_only(doc)
    return extract_text(doc.content, doc.media_type)


def prepare(doc: SourceDocument) -> Prepared:
    extracted = extract_for_index(doc)
    return Prepared(
        doc=doc,
        text=extracted.text,
        chunks=chunk_text(extracted.text, extracted.headings),
        canonical_url=canonical_url(doc.url) if doc.url else "",
        fingerprint=content_fingerprint(extracted.text),
        simhash=simhash64(extracted.text),
        snapshot_sha256=snapshot_digest(doc),
    )


def embedding_inputs(prepared: Prepared) -> list[str]:
    # The title (and section heading) give a chunk the context its text often lacks.
    title = prepared.doc.title.strip()
    out = []
    for span in prepared.chunks:
        head = " — ".join(x for x in (title, span.heading.strip()) if x)
        out.append(f"{head}\n{span.text}" if head else span.text)
    return out


def _stored(source: Source, external_id: str) -> dict[str, Any] | None:
    return (
        Document.objects.filter(source=source, external_id=external_id)
        .values("id", "source_version", "deleted", "snapshot_sha256", "acl_set__digest")
        .first()
    )


def _is_stale(stored: dict[str, Any] | None, incoming_version: int, *, restore: bool = False) -> bool:
    if stored is None:
        return False
    if incoming_version < stored["source_version"]:
        return True
    # A tombstone wins over a re-delivery of the version it deleted, unless the source said the
    # item was restored (a restore keeps the version it had when it was deleted).
    return bool(stored["deleted"] and incoming_version <= stored["source_version"] and not restore)


def _newer_acl_applied(document: Document | None, observed_at: datetime | None) -> bool:
    """True when the stored ACL was observed after this event's ACL.

    Events carry the time their ACL was read at the source (the ingest event's
    creation).  A content event queued before a revocation must not put the old
    ACL back when it is applied after it.
    """
    return bool(
        document is not None and observed_at is not None and document.acl_observed_at is not None
        and observed_at < document.acl_observed_at
    )  # fmt: skip


def apply_upsert(source: Source, doc: SourceDocument, embedder: Any, *, observed_at: datetime | None = None) -> str:
    # Titles are rendered once, here, like the text: "<em>before</em>" and "&amp;" never reach a reader.
    doc = replace(doc, title=clean_title(doc.title))
    acl = normalise_acl(doc.acl)
    restore = doc.metadata.get(RESTORE_MARKER) == "1"
    if RESTORE_MARKER in doc.metadata:
        doc = replace(doc, metadata={k: v for k, v in doc.metadata.items() if k != RESTORE_MARKER})
    stored = _stored(source, doc.external_id)
    if _is_stale(stored, doc.source_version, restore=restore):
        return OUTCOME_STALE
    snapshot = snapshot_digest(doc)
    if stored is not None and not stored["deleted"] and stored["snapshot_sha256"] == snapshot:
        # Same text: never re-embed.  Permissions and metadata may still have changed.
        return _apply_without_reembedding(source, doc, acl, observed_at)
    prepared = prepare(doc)
    vectors = embedder.embed(embedding_inputs(prepared)) if prepared.chunks else np.zeros((0, 384), np.float32)
    return _write_document(source, prepared, acl, vectors, restore=restore, observed_at=observed_at)


def _doc_fields(source: Source, doc: SourceDocument) -> dict[str, Any]:
    return {
        "url": doc.url,
        "title": doc.title,
        "source_system": source.kind,
        "container": doc.container,
        "author": doc.author,
        "created_at_source": doc.created_at,
        "updated_at_source": doc.updated_at,
        "version_label": doc.version_label,
        "authority_tier": int(doc.metadata.get("authority_tier", source.authority_tier)),
        "source_version": doc.source_version,
        "media_type": doc.media_type,
        "metadata": dict(doc.metadata),
        "deleted": False,
    }


def _chunk_denorm(document: Document) -> dict[str, Any]:
    return {
        "acl_set_id_denorm": document.acl_set_id,
        "source_system": document.source_system,
        "container": document.container,
        "updated_at_source": document.updated_at_source,
        "authority_tier": document.authority_tier,
        "version_label": document.version_label,
    }


def _locked_document(source: Source, external_id: str) -> Document | None:
    return Document.objects.select_for_update().filter(source=source, external_id=external_id).first()


def _apply_without_reembedding(source: Source, doc: SourceDocument, acl: Acl,
                               observed_at: datetime | None = None) -> str:  # fmt: skip
    with transaction.atomic():
        state = get_index_state(for_update=True)
        document = _locked_document(source, doc.external_id)
        if document is None or document.deleted or doc.source_version < document.source_version:
            return OUTCOME_STALE if document is not None else OUTCOME_MISSING
        keep_acl = document.acl_set is not None and _newer_acl_applied(document, observed_at)
        acl_changed = not keep_acl and (document.acl_set is None or document.acl_set.digest != acl_digest(acl))
        fields = _doc_fields(source, doc)
        meta_changed = any(getattr(document, k) != v for k, v in fields.items())
        if not acl_changed and not meta_changed:
            return OUTCOME_UNCHANGED
        for k, v in fields.items():
            setattr(document, k, v)
        if doc.url:
            document.canonical_url = canonical_url(doc.url)
        if acl_changed:
            document.acl_set = intern_acl(acl)
            document.acl_observed_at = observed_at or timezone.now()
        document.indexed_at = timezone.now()
        document.save()
        _sync_chunk_denorm(document, acl_changed=acl_changed)
        record_index_change(document.pk, "acl")  # same transaction: the index outbox
        _bump_index(state)
        return OUTCOME_ACL_ONLY if acl_changed and not meta_changed else OUTCOME_METADATA_ONLY


def _sync_chunk_denorm(document: Document, *, acl_changed: bool) -> None:
    Chunk.objects.filter(document=document).update(**_chunk_denorm(document))
    if acl_changed:
        with connection.cursor() as cur:
            cur.execute(
                "UPDATE retrieval_posting p SET acl_set_id = %s FROM retrieval_chunk c "
                "WHERE c.document_id = %s AND p.chunk_id = c.id AND p.tenant_id = %s",
                [document.acl_set_id, document.pk, document.tenant_id],
            )


def apply_acl_update(source: Source, external_id: str, clauses: object, source_version: int | None, *,
                     observed_at: datetime | None = None) -> str:  # fmt: skip
    """The revocation fast path: permissions only, no extraction, no embedding."""
    acl = normalise_acl(clauses)
    with transaction.atomic():
        state = get_index_state(for_update=True)
        document = _locked_document(source, external_id)
        if document is None or document.deleted:
            return OUTCOME_MISSING
        if source_version is not None and source_version < document.source_version:
            return OUTCOME_STALE
        if _newer_acl_applied(document, observed_at):
            return OUTCOME_STALE
        if document.acl_set is not None and document.acl_set.digest == acl_digest(acl):
            return OUTCOME_UNCHANGED
        document.acl_set = intern_acl(acl)
        document.acl_observed_at = observed_at or timezone.now()
        document.save(update_fields=["acl_set", "acl_observed_at"])
        _sync_chunk_denorm(document, acl_changed=True)
        record_index_change(document.pk, "acl")
        _bump_index(state)
        IndexState.objects.filter(pk=state.pk).update(
            acl_version=F("acl_version") + 1, permissions_as_of=timezone.now()
        )
        return OUTCOME_ACL_ONLY


def apply_delete(source: Source, external_id: str, source_version: int | None) -> str:
    """Remove the document from every leg in one transaction; keep a tombstone."""
    with transaction.atomic():
        state = get_index_state(for_update=True)
        document = _locked_document(source, external_id)
        if document is None:
            # Tombstone so a late, older upsert cannot resurrect it.
            if source_version is None:
                return OUTCOME_MISSING
            Document.objects.create(
                source=source, external_id=external_id, source_system=source.kind,
                source_version=source_version, deleted=True,
            )  # fmt: skip
            return OUTCOME_DELETED
        if source_version is not None and source_version < document.source_version:
            return OUTCOME_STALE
        if document.deleted:
            return OUTCOME_UNCHANGED
        _remove_chunks(document, state)
        document.deleted = True
        document.text = ""
        if source_version is not None:
            document.source_version = source_version
        document.indexed_at = timezone.now()
        document.save()
        record_index_change(document.pk, "delete")
        _bump_index(state)
        return OUTCOME_DELETED


def _remove_chunks(document: Document, state: IndexState) -> None:
    tenant_id = require_tenant_id()
    with connection.cursor() as cur:
        cur.execute(
            """
            UPDATE retrieval_termstat t SET df = t.df - s.n
            FROM (SELECT p.lexeme, count(*) AS n FROM retrieval_posting p
                  JOIN retrieval_chunk c ON c.id = p.chunk_id
                  WHERE c.document_id = %s AND p.tenant_id = %s GROUP BY p.lexeme) s
            WHERE t.tenant_id = %s AND t.lexeme = s.lexeme
            """,
            [document.pk, tenant_id, tenant_id],
        )
        cur.execute(
            "SELECT count(*), coalesce(sum(length), 0) FROM retrieval_chunk WHERE document_id = %s",
            [document.pk],
        )
        n, total = cur.fetchone()
        cur.execute("DELETE FROM retrieval_chunk WHERE document_id = %s", [document.pk])
    IndexState.objects.filter(pk=state.pk).update(n_chunks=F("n_chunks") - n, total_length=F("total_length") - total)


def _bump_index(state: IndexState) -> None:
    IndexState.objects.filter(pk=state.pk).update(index_version=F("index_version") + 1)


def _write_document(source: Source, prepared: Prepared, acl: Acl, vectors: np.ndarray, *, restore: bool = False,
                    observed_at: datetime | None = None) -> str:  # fmt: skip
    doc = prepared.doc
    tenant_id = require_tenant_id()
    with transaction.atomic():
        state = get_index_state(for_update=True)
        document = _locked_document(source, doc.external_id)
        if document is not None and _is_stale(
            {"source_version": document.source_version, "deleted": document.deleted},
            doc.source_version,
            restore=restore,
        ):
            return OUTCOME_STALE
        created = document is None
        if document is None:
            document = Document(source=source, external_id=doc.external_id)
        for k, v in _doc_fields(source, doc).items():
            setattr(document, k, v)
        document.canonical_url = prepared.canonical_url
        document.content_fingerprint = prepared.fingerprint
        document.simhash = prepared.simhash
        document.snapshot_sha256 = prepared.snapshot_sha256
        document.text = prepared.text
        document.about = describe_document(prepared.text, doc.title)
        if document.acl_set_id is None or not _newer_acl_applied(document, observed_at):
            document.acl_set = intern_acl(acl)
            document.acl_observed_at = observed_at or timezone.now()
        document.indexed_at = timezone.now()
        document.save()
        if not created:
            _remove_chunks(document, state)
        denorm = _chunk_denorm(document)
        # The tenant's vector clustering, if it has one (under the IndexState lock: see retrieval/clustering.py).
        clusters = clustering.assign_for_ingest(vectors[: len(prepared.chunks)])
        Chunk.objects.bulk_create(
            [
                Chunk(
                    tenant_id=tenant_id,
                    document=document,
                    ord=i,
                    text=span.text,
                    heading=span.heading,
                    char_start=span.start,
                    char_end=span.end,
                    embedding=vectors[i].tolist(),
                    vcluster=clusters[i],
                    **denorm,
                )  # fmt: skip
                for i, span in enumerate(prepared.chunks)
            ],
            batch_size=200,
        )
        _index_lexical([document.pk], state)
        record_index_change(document.pk, "upsert")
        _bump_index(state)
        IndexState.objects.filter(pk=state.pk).update(content_as_of=timezone.now())
        clustering.schedule_training_if_due(tenant_id, state.n_chunks + len(prepared.chunks))
        return OUTCOME_CREATED if created else OUTCOME_UPDATED


def _index_lexical(document_ids: list[int], state: IndexState) -> None:
    """tsvector, length, postings and document frequencies for the new chunks of these documents.

    Takes many documents so a bulk load runs the same statements per batch as one upsert
    does per document (benchmarks/ingest_and_query.py).  tsv and length are set by one
    UPDATE: each UPDATE writes a new row version (and index entries), so two doubled
    the write work."""
    tenant_id = require_tenant_id()
    ids = list(document_ids)
    with connection.cursor() as cur:
        cur.execute(
            """
            UPDATE retrieval_chunk c
            SET (tsv, length) = (
                SELECT v.tsv, coalesce((SELECT sum(coalesce(array_length(u.positions, 1), 1)) FROM unnest(v.tsv) u), 0)
                FROM (SELECT setweight(to_tsvector('english', d.title), 'A')
                             || setweight(to_tsvector('english', c.text), 'B') AS tsv
                      FROM retrieval_document d WHERE d.id = c.document_id) v
            )
            WHERE c.document_id = ANY(%s)
            """,
            [ids],
        )
        cur.execute(
            """
            INSERT INTO retrieval_posting (tenant_id, lexeme, chunk_id, tf, dl, acl_set_id)
            SELECT c.tenant_id, u.lexeme, c.id, coalesce(array_length(u.positions, 1), 1), c.length,
                   c.acl_set_id_denorm
            FROM retrieval_chunk c CROSS JOIN LATERAL unnest(c.tsv) u
            WHERE c.document_id = ANY(%s)
            """,
            [ids],
        )
        cur.execute(
            """
            INSERT INTO retrieval_termstat (tenant_id, lexeme, df)
            SELECT p.tenant_id, p.lexeme, count(*) FROM retrieval_posting p
            JOIN retrieval_chunk c ON c.id = p.chunk_id
            WHERE c.document_id = ANY(%s) AND p.tenant_id = %s
            GROUP BY p.tenant_id, p.lexeme ORDER BY p.lexeme
            ON CONFLICT (tenant_id, lexeme) DO UPDATE SET df = retrieval_termstat.df + EXCLUDED.df
            """,
            [ids, tenant_id],
        )
        cur.execute(
            "SELECT count(*), coalesce(sum(length), 0) FROM retrieval_chunk WHERE document_id = ANY(%s)",
            [ids],
        )
        n, total = cur.fetchone()
    IndexState.objects.filter(pk=state.pk).update(n_chunks=F("n_chunks") + n, total_length=F("total_length") + total)
