"""Spherical k-means for the vector leg's clustered exact scan (issue 19).

A tenant's chunk embeddings (unit vectors) are split into ``nlist`` clusters; every chunk stores the id
of its nearest centroid (``retrieval_chunk.vcluster``) and the covering btree
``(tenant_id, vcluster) INCLUDE (acl_set_id_denorm, id, embedding_half)`` keeps each cluster's rows
adjacent.  A broad reader's query then reads only the ``nprobe`` clusters nearest the query, exactly
(index-only), instead of every readable row (retrieval/backends/postgres.py, docs/vector-benchmark.md).

Only numpy: training on a sample of at most ``SAMPLE_PER_LIST * nlist`` rows costs seconds, the
assignment of one chunk is one ``384 x nlist`` matrix-vector product.
"""

from __future__ import annotations

import numpy as np

SAMPLE_PER_LIST = 64  # training rows per centroid (faiss warns below 39)


def _normalise(x: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(x, axis=1, keepdims=True)
    n[n == 0] = 1.0
    return (x / n).astype(np.float32, copy=False)


def nlist_for(rows: int, rows_per_list: int, max_lists: int) -> int:
    """How many clusters a tenant of ``rows`` chunks gets: about one per ``rows_per_list`` rows."""
    return int(max(1, min(max_lists, round(rows / max(1, rows_per_list)))))


def assign(x: np.ndarray, centroids: np.ndarray, batch: int = 50_000) -> np.ndarray:
    """The nearest centroid (largest cosine) of every row of ``x``; int32."""
    x = np.asarray(x, dtype=np.float32)
    if x.ndim == 1:
        x = x[None, :]
    out = np.empty(len(x), dtype=np.int32)
    c = np.asarray(centroids, dtype=np.float32)
    for start in range(0, len(x), batch):
        out[start : start + batch] = np.argmax(x[start : start + batch] @ c.T, axis=1)
    return out


def spherical_kmeans(x: np.ndarray, nlist: int, iters: int = 20, seed: int = 0) -> np.ndarray:
    """``nlist`` unit centroids of the unit rows of ``x`` (trained on a sample); float32 ``nlist x d``."""
    rng = np.random.default_rng(seed)
    x = _normalise(np.asarray(x, dtype=np.float32))
    nlist = max(1, min(nlist, len(x)))
    if len(x) > SAMPLE_PER_LIST * nlist:
        x = x[rng.choice(len(x), SAMPLE_PER_LIST * nlist, replace=False)]
    c = x[rng.choice(len(x), nlist, replace=False)].copy()
    for _ in range(iters):
        a = assign(x, c)
        order = np.argsort(a, kind="stable")
        counts = np.bincount(a, minlength=nlist)
        sums = np.zeros_like(c)
        nonempty = np.nonzero(counts)[0]
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])[nonempty]
        sums[nonempty] = np.add.reduceat(x[order], starts, axis=0)
        empty = counts == 0
        if empty.any():  # re-seed an empty cluster on a random row
            sums[empty] = x[rng.choice(len(x), int(empty.sum()), replace=False)]
        c = _normalise(sums)
    return c
