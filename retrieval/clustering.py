"""A tenant's vector clustering: training, assignment at ingest, batch reassignment (issue 19).

The vector leg (retrieval/backends/postgres.py) takes the *clustered exact scan* for a reader whose readable
chunks exceed ``CAIRN_VECTOR_EXACT_SCAN_MAX_ROWS`` when the tenant's clustering is ``ready``: the
``CAIRN_VECTOR_CLUSTER_NPROBE`` centroids nearest the query, then one exact index-only scan over those clusters'
rows of the reader's ACL sets (plus every row still without a cluster).  docs/vector-benchmark.md measures it.

Life cycle, per tenant:

- below ``CAIRN_VECTOR_CLUSTER_MIN_CHUNKS`` chunks: no centroids, ``Chunk.vcluster`` NULL, the leg never
  takes the clustered path (HNSW above the cap, as before);
- the ingest that crosses the threshold (or grows the tenant ``CAIRN_VECTOR_CLUSTER_RETRAIN_GROWTH``-fold past
  the last training) queues ``retrieval.tasks.train_vector_clusters`` on commit;
- the task trains spherical k-means on a sample (``retrieval.vclusters``), swaps the centroids in while holding
  the tenant's IndexState row lock (the lock every ingest takes first, so no ingest assigns with the old
  centroids after the swap), marks the clustering ``reassigning`` (the leg uses HNSW meanwhile), reassigns every
  chunk in keyset batches of ``CAIRN_VECTOR_CLUSTER_BATCH`` (each batch its own transaction; a row already right
  is not rewritten, so a redelivered task resumes cheaply), then marks it ``ready``;
- from the swap on, every chunk written is assigned at ingest (one 384 x nlist product per chunk).

Rows without a cluster (NULL) are never invisible: the clustered scan reads them all exactly, besides the
probed clusters.  After a completed reassignment there are none, by the lock argument above.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from retrieval import vclusters
from retrieval.models import Chunk, VectorCentroid, VectorClustering
from retrieval.permissions import get_index_state
from tenants.context import require_tenant_id, tenant_context

log = logging.getLogger(__name__)

MAX_LISTS = 4096
# A reader whose ACL sets held more than this many times the exact-scan cap at the last reassignment takes the
# clustered scan without counting its readable chunks first (the count reads up to cap + 1 index entries, ~4 ms
# at 80,000; docs/vector-benchmark.md).  The snapshot lags by at most the retrain growth (2x) on growth, so a
# factor of 2 keeps a reader that is really below the cap from skipping the count unless its sets lost most
# of their chunks since (an ACL change); such a reader still gets only readable chunks, by the clustered scan.
SKIP_COUNT_FACTOR = 2.0
_cache: dict[int, tuple[int, np.ndarray]] = {}  # tenant -> (generation, centroids), for ingest
_acl_cache: dict[int, tuple[int, dict[int, int]]] = {}  # tenant -> (generation, chunks per ACL set)


def _cfg(name: str) -> Any:
    return settings.CAIRN[name]


def needs_training(n_chunks: int, clustering: VectorClustering | None) -> bool:
    """Whether a tenant of ``n_chunks`` embedded chunks should (re)train: past the threshold with no clustering
    yet, or grown by the configured factor since the last training."""
    if not _cfg("VECTOR_CLUSTERS") or n_chunks < int(_cfg("VECTOR_CLUSTER_MIN_CHUNKS")):
        return False
    if clustering is None or clustering.nlist == 0:
        return True
    return n_chunks >= float(_cfg("VECTOR_CLUSTER_RETRAIN_GROWTH")) * max(1, clustering.trained_chunks)


def ready() -> bool:
    """Whether the current tenant's every embedded chunk carries a cluster of its current centroids."""
    return current()[0]


def current() -> tuple[bool, dict[int, int]]:
    """(ready, chunks per ACL set at the last reassignment) of the current tenant; one small query, the counts
    cached per generation."""
    if not _cfg("VECTOR_CLUSTERS"):
        return False, {}
    tenant_id = require_tenant_id()
    with connection.cursor() as cur:
        cur.execute("SELECT state, generation FROM retrieval_vectorclustering WHERE tenant_id = %s", [tenant_id])
        row = cur.fetchone()
    if not row or row[0] != VectorClustering.State.READY:
        return False, {}
    cached = _acl_cache.get(tenant_id)
    if cached is None or cached[0] != int(row[1]):
        raw = VectorClustering.objects.values_list("acl_counts", flat=True).first() or {}
        cached = (int(row[1]), {int(k): int(v) for k, v in raw.items()})
        _acl_cache[tenant_id] = cached
    return True, cached[1]


def broad_without_count(counts: dict[int, int], acl_set_ids: tuple[int, ...], cap: int) -> bool:
    """Whether the reader's ACL sets held more than SKIP_COUNT_FACTOR x cap chunks at the last reassignment."""
    return bool(counts) and sum(counts.get(int(a), 0) for a in acl_set_ids) > SKIP_COUNT_FACTOR * cap


def centroids_for_ingest() -> np.ndarray | None:
    """The current tenant's centroids (cached per generation), or None while it has none.

    Called by the pipeline after it locked the tenant's IndexState row, so a concurrent swap either
    committed before (new centroids) or waits for this ingest to commit (and then reassigns its rows)."""
    tenant_id = require_tenant_id()
    with connection.cursor() as cur:
        cur.execute("SELECT generation, nlist FROM retrieval_vectorclustering WHERE tenant_id = %s", [tenant_id])
        row = cur.fetchone()
    if not row or not row[1]:
        return None
    generation = int(row[0])
    cached = _cache.get(tenant_id)
    if cached and cached[0] == generation:
        return cached[1]
    rows = list(VectorCentroid.objects.order_by("cluster").values_list("cluster", "centroid"))
    if not rows:
        return None
    cents = np.stack([np.asarray(c, dtype=np.float32) for _, c in rows])
    assert [k for k, _ in rows] == list(range(len(rows))), "centroid ids must be 0..nlist-1"
    _cache[tenant_id] = (generation, cents)
    return cents


def assign_for_ingest(vectors: np.ndarray) -> list[int | None]:
    """The cluster of each new chunk vector, or None for each when the tenant has no centroids."""
    if not len(vectors) or not _cfg("VECTOR_CLUSTERS"):
        return [None] * len(vectors)
    cents = centroids_for_ingest()
    if cents is None:
        return [None] * len(vectors)
    return [int(x) for x in vclusters.assign(np.asarray(vectors, dtype=np.float32), cents)]


def schedule_training_if_due(tenant_id: int, n_chunks: int) -> bool:
    """Queue the training task on commit when the tenant needs one (at most once an hour per tenant)."""
    if not _cfg("VECTOR_CLUSTERS") or n_chunks < int(_cfg("VECTOR_CLUSTER_MIN_CHUNKS")):
        return False
    if not needs_training(n_chunks, VectorClustering.objects.first()):
        return False
    from django.core.cache import cache

    try:
        if not cache.add(f"vclusters-queued:{tenant_id}", 1, timeout=3600):
            return False
    except Exception:  # cache down: queue anyway, the task is idempotent
        pass

    def _send() -> None:
        from retrieval.tasks import train_vector_clusters

        try:
            train_vector_clusters.apply_async((tenant_id,), queue=str(settings.CAIRN.get("INGEST_QUEUE", "ingest")))
        except Exception:  # broker down: the next ingest past the threshold queues it again
            log.warning("could not queue vector clustering of tenant %s", tenant_id, exc_info=True)

    transaction.on_commit(_send)
    return True


def _embedded_chunks() -> int:
    return Chunk.objects.filter(embedding__isnull=False).count()


def train(tenant_id: int, *, force: bool = False, seed: int = 0) -> dict[str, Any]:
    """(Re)train the tenant's centroids when due (or ``force``), then reassign its chunks; idempotent.

    Returns what it did: ``{"outcome": "trained" | "resumed" | "up-to-date" | "too-small" | "superseded", ...}``.
    """
    with tenant_context(tenant_id):
        clustering = VectorClustering.objects.first()
        n = _embedded_chunks()
        due = needs_training(n, clustering) or (force and n > 0)
        if not due:
            if clustering is not None and clustering.nlist and clustering.state == VectorClustering.State.REASSIGNING:
                generation = clustering.generation
            else:
                return {"outcome": "up-to-date" if clustering and clustering.nlist else "too-small", "chunks": n}
    if not due:
        with tenant_context(tenant_id):
            cents = centroids_for_ingest()
        assert cents is not None
        info = reassign(tenant_id, generation, cents)
        return {"outcome": "resumed" if info["ready"] else "superseded", "chunks": n, **info}
    t0 = time.perf_counter()
    nlist = vclusters.nlist_for(n, int(_cfg("VECTOR_CLUSTER_ROWS_PER_LIST")), MAX_LISTS)
    with tenant_context(tenant_id):
        sample = list(
            Chunk.objects.filter(embedding__isnull=False)
            .order_by("?")
            .values_list("embedding", flat=True)[: vclusters.SAMPLE_PER_LIST * nlist]
        )
    x = np.stack([np.asarray(v, dtype=np.float32) for v in sample])
    cents = vclusters.spherical_kmeans(x, nlist, seed=seed)
    nlist = len(cents)
    train_s = time.perf_counter() - t0
    with tenant_context(tenant_id):  # the swap: under the IndexState lock every ingest takes first
        get_index_state(for_update=True)
        clustering = VectorClustering.objects.select_for_update().first()
        if clustering is None:
            clustering = VectorClustering(tenant_id=tenant_id)
        VectorCentroid.objects.all().delete()
        VectorCentroid.objects.bulk_create(
            [VectorCentroid(tenant_id=tenant_id, cluster=j, centroid=cents[j].tolist()) for j in range(nlist)]
        )
        clustering.generation += 1
        clustering.nlist = nlist
        clustering.trained_chunks = n
        clustering.state = VectorClustering.State.REASSIGNING
        clustering.trained_at = timezone.now()
        clustering.train_seconds = train_s
        clustering.ready_at = None
        clustering.save()
        generation = clustering.generation
    info = reassign(tenant_id, generation, cents)
    log.info("vector clustering of tenant %s: %s lists on %s chunks, %s", tenant_id, nlist, n, info)
    return {"outcome": "trained" if info["ready"] else "superseded", "chunks": n, "nlist": nlist,
            "train_seconds": train_s, "sample": len(x), **info}  # fmt: skip


def reassign(tenant_id: int, generation: int, cents: np.ndarray) -> dict[str, Any]:
    """Set every chunk's cluster to its nearest of ``cents`` (generation ``generation``), in batches; then
    mark the clustering ready.  Stops early (``ready`` False) when a newer training superseded this one."""
    batch = int(_cfg("VECTOR_CLUSTER_BATCH"))
    last, rows, changed = 0, 0, 0
    t0 = time.perf_counter()
    while True:
        with tenant_context(tenant_id):
            current = VectorClustering.objects.values_list("generation", flat=True).first()
            if current != generation:
                return {"ready": False, "reassigned_rows": rows, "changed_rows": changed}
            part = list(
                Chunk.objects.filter(pk__gt=last, embedding__isnull=False)
                .order_by("pk")
                .values_list("pk", "embedding")[:batch]
            )
            if not part:
                break
            ids = [int(pk) for pk, _ in part]
            labels = vclusters.assign(np.stack([np.asarray(v, dtype=np.float32) for _, v in part]), cents)
            with connection.cursor() as cur:
                cur.execute(
                    "UPDATE retrieval_chunk c SET vcluster = v.k FROM unnest(%s::bigint[], %s::int[]) AS v(id, k) "
                    "WHERE c.id = v.id AND c.tenant_id = %s AND c.vcluster IS DISTINCT FROM v.k",
                    [ids, [int(x) for x in labels], tenant_id],
                )
                changed += cur.rowcount
            rows += len(ids)
            last = ids[-1]
    with tenant_context(tenant_id):
        clustering = VectorClustering.objects.select_for_update().first()
        if clustering is None or clustering.generation != generation:
            return {"ready": False, "reassigned_rows": rows, "changed_rows": changed}
        with connection.cursor() as cur:
            cur.execute("SELECT acl_set_id_denorm, count(*) FROM retrieval_chunk WHERE tenant_id = %s GROUP BY 1",
                        [tenant_id])  # fmt: skip
            clustering.acl_counts = {str(a): int(n) for a, n in cur.fetchall()}
        clustering.state = VectorClustering.State.READY
        clustering.ready_at = timezone.now()
        clustering.save(update_fields=["state", "ready_at", "acl_counts"])
    try:
        from django.core.cache import cache

        cache.delete(f"vclusters-queued:{tenant_id}")
    except Exception:
        pass
    return {"ready": True, "reassigned_rows": rows, "changed_rows": changed,
            "reassign_seconds": time.perf_counter() - t0}  # fmt: skip
