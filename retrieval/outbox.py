"""The index outbox: Postgres -> OpenSearch without silent divergence.

The pipeline calls ``record_index_change(document_id, op)`` inside the same
transaction that changes the document (retrieval/pipeline.py), so a change that
committed always has its outbox row and a rolled-back change never has one.
``drain_index_outbox`` (Celery, acks_late, queued on commit) applies rows in
batches: for every document named it reads the document's *current* state from
Postgres and writes that, so draining is idempotent and a redelivered or
reordered task converges to the same index.  A per-tenant advisory lock keeps
two drainers of one tenant from racing (an older read overwriting a newer one).
While OpenSearch is down the rows stay (attempts / last_error recorded) and the
beat sweeper re-queues the drain; nothing is lost.

Only active when the configured index backend says ``uses_outbox``.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from celery import shared_task
from django.conf import settings
from django.db import connection, transaction
from django.db.models import F
from django.utils.module_loading import import_string

from retrieval.backends import opensearch as osb
from retrieval.models import Chunk, Document, IndexOutbox
from tenants.context import require_tenant_id, tenant_context
from tenants.models import Tenant

log = logging.getLogger(__name__)

ADVISORY_NAMESPACE = 0x0CA1  # first key of pg_try_advisory_xact_lock(ns, tenant)


@functools.cache
def _uses_outbox(dotted: str) -> bool:
    return bool(getattr(import_string(dotted), "uses_outbox", False))


def enabled() -> bool:
    return _uses_outbox(settings.CAIRN["INDEX_BACKEND"])


def batch_size() -> int:
    return int(settings.CAIRN.get("INDEX_OUTBOX_BATCH", 500))


def record_index_change(document_id: int, op: str) -> None:
    """Call inside the transaction that changed the document."""
    if not enabled():
        return
    IndexOutbox.objects.create(document_id=document_id, op=op)
    tenant_id = require_tenant_id()
    queue = "permissions" if op == IndexOutbox.Op.ACL else "ingest"
    transaction.on_commit(lambda: enqueue_drain(tenant_id, queue))


def enqueue_drain(tenant_id: int, queue: str = "ingest") -> None:
    try:
        drain_index_outbox.apply_async((tenant_id,), queue=queue)
    except Exception:  # broker down: the rows stay and the sweeper re-queues
        log.warning("could not queue the index outbox drain for tenant %s", tenant_id, exc_info=True)


def _chunk_docs(document_ids: list[int], *, with_text: bool, with_vectors: bool) -> dict[int, list[dict[str, Any]]]:
    """Current OpenSearch documents of the given (live) documents' chunks, by document id."""
    fields = ["id", "document_id", "acl_set_id_denorm", "source_system", "container", "updated_at_source",
              "authority_tier", "version_label", "document__created_at_source", "document__source_version"]  # fmt: skip
    if with_text:
        fields += ["text", "document__title"]
    if with_vectors:
        fields.append("embedding")
    out: dict[int, list[dict[str, Any]]] = {d: [] for d in document_ids}
    rows = Chunk.objects.filter(document_id__in=document_ids, document__deleted=False).values(*fields)
    for r in rows:
        out[r["document_id"]].append(chunk_source(r, with_text=with_text, with_vectors=with_vectors))
    return out


def chunk_source(r: dict[str, Any], *, with_text: bool, with_vectors: bool) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "tenant_id": require_tenant_id(),
        "chunk_id": r["id"],
        "document_id": r["document_id"],
        "acl_set_id": r["acl_set_id_denorm"],
        "source_system": r["source_system"],
        "container": r["container"],
        "updated_at": r["updated_at_source"].isoformat() if r["updated_at_source"] else None,
        "created_at": r["document__created_at_source"].isoformat() if r["document__created_at_source"] else None,
        "version_label": r["version_label"],
        "authority_tier": r["authority_tier"],
        "source_version": r["document__source_version"],
    }
    if with_text:
        title = r.get("document__title") or ""
        doc["title"] = title
        doc["content"] = f"{title}\n{r['text']}" if title else r["text"]
    if with_vectors and r.get("embedding") is not None:
        doc["embedding"] = [float(x) for x in r["embedding"]]
    return doc


def _bulk(actions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Send bulk actions; return the per-item errors (a transport failure raises IndexUnavailable)."""
    if not actions:
        return []
    from opensearchpy import helpers

    try:
        _, errors = helpers.bulk(osb.client(), actions, raise_on_error=False, raise_on_exception=True,
                                 request_timeout=max(30.0, osb._conf()["timeout"]))  # fmt: skip
    except osb._transport_errors() as exc:
        raise osb._wrap(exc) from exc
    return list(errors)


def apply_documents(tenant_id: int, upserts: set[int], acl_only: set[int], targets: list[str]) -> None:
    """Make OpenSearch match Postgres for these documents (current state, whatever the op said)."""
    c = osb.client()
    knn = osb.has_knn()
    live = set(Document.objects.filter(pk__in=upserts | acl_only, deleted=False).values_list("pk", flat=True))
    gone = sorted((upserts | acl_only) - live)
    full_ids = sorted(upserts & live)
    partial_ids = sorted((acl_only - upserts) & live)
    actions: list[dict[str, Any]] = []
    current_chunk_ids: list[int] = []
    for doc_chunks in _chunk_docs(full_ids, with_text=True, with_vectors=knn).values():
        for src in doc_chunks:
            current_chunk_ids.append(src["chunk_id"])
            actions += [{"_op_type": "index", "_index": t, "_id": str(src["chunk_id"]), "_source": src}
                        for t in targets]  # fmt: skip
    partial = _chunk_docs(partial_ids, with_text=False, with_vectors=False)
    for doc_chunks in partial.values():
        for src in doc_chunks:
            current_chunk_ids.append(src["chunk_id"])
            actions += [{"_op_type": "update", "_index": t, "_id": str(src["chunk_id"]), "doc": src} for t in targets]
    errors = _bulk(actions)
    missing = {int(next(iter(e.values()))["_id"]) for e in errors if next(iter(e.values())).get("status") == 404}
    other = [e for e in errors if next(iter(e.values())).get("status") != 404]
    if other:
        raise osb.IndexUnavailable(f"bulk write rejected {len(other)} items: {str(other[0])[:300]}")
    if missing:
        # A partial update of a chunk the index never saw (e.g. a lost earlier write): send it whole.
        docs = {d for d, chunks in partial.items() if any(s["chunk_id"] in missing for s in chunks)}
        for doc_chunks in _chunk_docs(sorted(docs), with_text=True, with_vectors=knn).values():
            retry = [{"_op_type": "index", "_index": t, "_id": str(s["chunk_id"]), "_source": s}
                     for s in doc_chunks for t in targets]  # fmt: skip
            if _bulk(retry):
                raise osb.IndexUnavailable("bulk re-index of missing chunks failed")
    stale_scope = full_ids + gone
    try:
        for t in targets:
            c.indices.refresh(index=t)
            if stale_scope:
                # Chunks of rewritten documents get new ids; anything else under those documents is stale.
                query: dict[str, Any] = {"bool": {"filter": [{"terms": {"document_id": stale_scope}}]}}
                keep = [str(cid) for cid in current_chunk_ids]
                if keep:
                    query["bool"]["must_not"] = [{"ids": {"values": keep}}]
                c.delete_by_query(index=t, body={"query": query}, refresh=True, conflicts="proceed")
    except osb._transport_errors() as exc:
        raise osb._wrap(exc) from exc


def drain(tenant_id: int, limit: int | None = None) -> int:
    """Apply up to ``limit`` outbox rows of the tenant; returns how many were applied.

    Raises IndexUnavailable (rows kept, attempts recorded) when OpenSearch cannot take them.
    """
    limit = limit or batch_size()
    try:
        with tenant_context(tenant_id):
            with connection.cursor() as cur:
                cur.execute("SELECT pg_try_advisory_xact_lock(%s, %s)", [ADVISORY_NAMESPACE, tenant_id])
                if not cur.fetchone()[0]:
                    return 0  # another drainer has this tenant; it will see our rows too
            rows = list(IndexOutbox.objects.order_by("id").values("id", "document_id", "op")[:limit])
            if not rows:
                return 0
            upserts = {r["document_id"] for r in rows if r["op"] in (IndexOutbox.Op.UPSERT, IndexOutbox.Op.DELETE)}
            acl_only = {r["document_id"] for r in rows if r["op"] == IndexOutbox.Op.ACL}
            apply_documents(tenant_id, upserts, acl_only, osb.write_targets(tenant_id))
            IndexOutbox.objects.filter(pk__in=[r["id"] for r in rows]).delete()
            return len(rows)
    except osb.IndexUnavailable as exc:
        with tenant_context(tenant_id):
            first = IndexOutbox.objects.order_by("id").values_list("id", flat=True)[:limit]
            IndexOutbox.objects.filter(pk__in=list(first)).update(
                attempts=F("attempts") + 1, last_error=str(exc)[:2000]
            )
        raise


def drain_all(tenant_id: int) -> int:
    """Drain until the tenant's backlog is empty (tests, commands)."""
    total = 0
    while True:
        n = drain(tenant_id)
        total += n
        if n < batch_size():
            return total


def backlog(tenant_id: int) -> int:
    with tenant_context(tenant_id):
        return IndexOutbox.objects.count()


@shared_task(bind=True, acks_late=True)
def drain_index_outbox(self: Any, tenant_id: int) -> int:
    if not enabled():
        return 0
    try:
        n = drain(tenant_id)
    except osb.IndexUnavailable as exc:
        # No retry storm: the rows wait, the beat sweeper re-queues every minute.
        log.warning("index outbox of tenant %s kept (OpenSearch unavailable): %s", tenant_id, exc)
        return -1
    if n >= batch_size():
        enqueue_drain(tenant_id)
    return n


@shared_task(acks_late=True)
def sweep_index_outbox() -> int:
    """Re-queue drains for tenants with a backlog (after an outage, a lost message, a dead worker)."""
    if not enabled():
        return 0

    queued = 0
    for tenant_id in Tenant.objects.values_list("id", flat=True):
        if backlog(tenant_id):
            enqueue_drain(tenant_id)
            queued += 1
    return queued


def iter_chunk_sources(tenant_id: int, batch: int = 500, *, with_vectors: bool) -> Iterator[list[dict[str, Any]]]:
    """Every live chunk of the tenant as OpenSearch documents, in id order (reindex)."""
    last = 0
    while True:
        with tenant_context(tenant_id):
            ids = list(
                Chunk.objects.filter(pk__gt=last, document__deleted=False)
                .order_by("pk")
                .values_list("pk", flat=True)[:batch]
            )
            if not ids:
                return
            fields = ["id", "document_id", "acl_set_id_denorm", "source_system", "container", "updated_at_source",
                      "authority_tier", "version_label", "document__created_at_source", "document__source_version",
                      "text", "document__title"] + (["embedding"] if with_vectors else [])  # fmt: skip
            rows = list(Chunk.objects.filter(pk__in=ids).order_by("pk").values(*fields))
            yield [chunk_source(r, with_text=True, with_vectors=with_vectors) for r in rows]
        last = ids[-1]


@dataclass
class IndexDiff:
    """Differences between Postgres (the source of truth) and one OpenSearch index."""

    tenant_id: int
    index: str
    postgres: int = 0
    opensearch: int = 0
    missing: dict[int, int] = field(default_factory=dict)  # chunk id -> document id, not in OpenSearch
    extra: dict[int, int] = field(default_factory=dict)  # in OpenSearch only
    mismatched: dict[int, int] = field(default_factory=dict)  # ACL / version / document differ

    @property
    def clean(self) -> bool:
        return not (self.missing or self.extra or self.mismatched)

    def documents(self) -> set[int]:
        return set(self.missing.values()) | set(self.extra.values()) | set(self.mismatched.values())


def compare_index(tenant_id: int, index: str | None = None) -> IndexDiff:
    """Compare every live chunk's (document, ACL set, source version) with what the index holds."""
    from opensearchpy import helpers

    index = index or osb.alias_name(tenant_id)
    diff = IndexDiff(tenant_id, index)
    with tenant_context(tenant_id):
        pg = {
            cid: (doc, acl, ver)
            for cid, doc, acl, ver in Chunk.objects.filter(document__deleted=False).values_list(
                "pk", "document_id", "acl_set_id_denorm", "document__source_version"
            )
        }
    es: dict[int, tuple[int, int, int]] = {}
    try:
        if osb.client().indices.exists(index=index):
            for hit in helpers.scan(osb.client(), index=index, query={"query": {"match_all": {}}},
                                    _source=["document_id", "acl_set_id", "source_version"], size=1000):  # fmt: skip
                s = hit["_source"]
                es[int(hit["_id"])] = (int(s["document_id"]), int(s["acl_set_id"]), int(s.get("source_version") or 0))
    except osb._transport_errors() as exc:
        raise osb._wrap(exc) from exc
    diff.postgres, diff.opensearch = len(pg), len(es)
    diff.missing = {cid: v[0] for cid, v in pg.items() if cid not in es}
    diff.extra = {cid: v[0] for cid, v in es.items() if cid not in pg}
    diff.mismatched = {cid: v[0] for cid, v in pg.items() if cid in es and es[cid] != v}
    return diff


def repair_index(diff: IndexDiff) -> int:
    """Queue every differing document through the outbox and drain it; returns rows drained."""
    docs = diff.documents()
    if not docs:
        return 0
    with tenant_context(diff.tenant_id):
        IndexOutbox.objects.bulk_create(
            [IndexOutbox(tenant_id=diff.tenant_id, document_id=d, op=IndexOutbox.Op.UPSERT) for d in sorted(docs)]
        )
    return drain_all(diff.tenant_id)
