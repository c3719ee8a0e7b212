"""ACL-filtered vector search in Postgres: recall@10 and latency, strategy by strategy.

    source /tmp/cairn-<you>/env.bench   # from `python -m cairn.stack services --db bench`
    .venv/bin/python benchmarks/vector_filtered.py --rows 100000 --queries 200 --vectors real

Vectors (``--vectors``):
  random  the probe in ``../shared/PROBES.md``: random unit 384-d vectors (the worst case for HNSW and
          for sign quantisation: no structure at all).
  real    real passages embedded by the product's embedder (``benchmarks/vector_corpus.py`` writes
          ``benchmarks/out/vector_corpus/base.npy`` + ``queries.npy``: SciFact, the 18F handbook and the
          10-Q filings, chunked by the product's chunker).  The first ``len(base)`` rows are the real
          vectors themselves; every further row is a perturbed copy ``normalise(base[j] + sigma * N(0, I))``
          of a base row (``--sigma``, per coordinate; j cycles through a shuffled base).  Queries are real
          questions embedded the same way (BEIR SciFact claims + the 10-Q dev questions), never in the base.
          The JSON records sigma and the mean nearest-neighbour cosine of the base and of the scaled set, and
          besides recall@10 (by row id) an ``origin_recall_at_10``: the share of the true top-10's base
          passages that the result contains (any copy of them), i.e. whether the right passages were found
          even when the walk picked other near-identical copies.

Tenants and ACL as before: 3 tenants, each row readable by one CNF set "any of 2 of 50 groups" (1,225
sets per tenant), independent of the vector.  A reader at selectivity f (``--selectivities``, percent of
one tenant's rows) may read a random ``round(f * 1225)`` of its tenant's sets, so f = 7.8 % is about the
2-group user of the probe (≈2.6 % of all rows) and f = 100 % the whole tenant (≈33 % of all rows).

Ground truth is exact filtered cosine search in numpy over float32.  Every
strategy runs once to warm the cache, then ``--queries`` timed queries; we report
p50/p95/p99 and recall@10 side by side and write
``benchmarks/out/vector_filtered_<vectors>_<rows>.json`` and ``.png``.  The load average (``os.getloadavg``)
is recorded at the start and the end of the run and of every selectivity: latencies taken on a loaded
machine compare strategies within one run only.

Strategies (one SQL statement each, as the product would send it):
  hnsw_iterative       HNSW (vector_cosine_ops) + filter, hnsw.iterative_scan = relaxed_order, the product's
                       ef_search (the anchor: plain pgvector HNSW + iterative scan)
  hnsw_<order>_ef<E>[_mst<M>]  the same index with hnsw.iterative_scan = relaxed_order | strict_order,
                       hnsw.ef_search = E and hnsw.max_scan_tuples = M (default 20,000), e.g.
                       hnsw_relaxed_ef200_mst50000, hnsw_strict_ef40
  exact_heap           bitmap on the (tenant, acl) btree keys -> heap -> sort by distance (the product's
                       exact path before the covering index)
  exact_cover_float    index-only scan of btree (tenant, acl) INCLUDE (id, embedding) -> sort
  exact_cover_half     the same over a halfvec(384) copy (half the bytes to read)
  exact_cover_half_par<W>  exact_cover_half with up to W parallel workers (parallel index-only scan; the
                       parallel cost settings zeroed so the planner takes it)
  hnsw_partial_half    per-tenant partial HNSW on halfvec + iterative scan
  adaptive             count readable rows on a narrow (tenant, acl) btree (capped; the product's
                       chunk_tenant_acl), then exact_cover_half
                       when <= cap, else hnsw_iterative (and exact when HNSW returns fewer than k):
                       what ``PostgresIndexBackend.vector`` does, with
                       the product's own cap and ef_search (``CAIRN_VECTOR_EXACT_SCAN_MAX_ROWS``,
                       ``CAIRN_HNSW_EF_SEARCH``, read from cairn/settings.py; ``--cap`` overrides)
  adaptive_cap<C>[_ef<E>]  the same rule with cap C and ef_search E (several caps side by side in one run)
  bq_rescore_<N>       binary-quantised first pass: hamming distance on binary_quantize(embedding)::bit(384)
                       (48 bytes a row) over a covering btree (tenant, acl) INCLUDE (id, emb_bits), the
                       N nearest candidates, then exact halfvec re-scoring of those N (e.g. bq_rescore_200)
  ivf_<cover|keyacl>_nl<L>_p<P>  clustered exact scan: per-tenant spherical k-means with L centroids
                       (retrieval/vclusters.py, trained on <= 64 L sampled rows), each row's nearest centroid in
                       ``vcluster``; the P centroids nearest the query (SQL over the centroid table), then one
                       exact index-only scan of those clusters' readable rows over a covering btree
                       ``cover``: (tenant, vcluster) INCLUDE (acl, id, emb_half) or
                       ``keyacl``: (tenant, vcluster, acl) INCLUDE (id, emb_half) (a side table, see ensure_ivf;
                       the JSON's ivf_build has training / assignment times and index sizes = the ingest cost)
  adaptive_ivf_nl<L>_p<P>[_skip]  the product's rule now: count readable rows; <= cap -> exact_cover_half, else
                       the clustered scan (keyacl, with the product's extra branch for rows without a cluster);
                       _skip: no count when the per-ACL-set row counts (a snapshot) sum to > 2 x cap
  ivfbq_nl<L>_p<P>_r<N>  the clustered scan on a bit copy: hamming top-N of the P probed clusters' readable
                       rows, index-only over (tenant, vcluster, acl) INCLUDE (id, emb_bits), then exact halfvec
                       re-scoring of those N (primary-key lookups)
  ivfflat_l<L>_p<P>    pgvector's own IVFFlat on emb_half (one index over all tenants, L lists),
                       ivfflat.probes = P, ivfflat.iterative_scan = relaxed_order

Only the indexes the chosen strategies use are built (``--strategies``, ``--no-hnsw``, ``--no-partial``);
the JSON records each Postgres setting with its unit and in bytes.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from pgvector import HalfVector
from pgvector.psycopg import register_vector

DIM = 384
TENANTS = 3
GROUPS = 50
PAIRS = list(combinations(range(GROUPS), 2))  # 1,225 CNF sets per tenant
OUT = Path(__file__).resolve().parent / "out"


def acl_id(tenant: int, pair_index: int) -> int:
    return tenant * 10_000 + pair_index


CORPUS = OUT / "vector_corpus"


def real_vectors(rows: int, seed: int, sigma: float) -> tuple[np.ndarray, dict[str, Any]]:
    """``rows`` vectors: the real base set, then perturbed copies of it (see the module docstring)."""
    base = np.load(CORPUS / "base.npy").astype(np.float32)
    rng = np.random.default_rng(seed)
    n_base = min(rows, len(base))
    order = rng.permutation(len(base))
    vecs = np.empty((rows, DIM), dtype=np.float32)
    vecs[:n_base] = base[order[:n_base]]
    for start in range(n_base, rows, 50_000):
        end = min(rows, start + 50_000)
        src = base[order[np.arange(start, end) % len(base)]]
        noisy = src + rng.normal(0.0, sigma, src.shape).astype(np.float32)
        vecs[start:end] = noisy / np.linalg.norm(noisy, axis=1, keepdims=True)
    info: dict[str, Any] = {
        "base_rows": int(len(base)), "sigma_per_coordinate": sigma, "copies_per_base_row": rows / len(base),
        "mean_nn_cosine_base": mean_nn_cosine(base, rng), "mean_nn_cosine_scaled": mean_nn_cosine(vecs, rng),
        "mean_cosine_copy_to_origin": float(np.mean(np.sum(
            vecs[n_base:n_base + 2000] * base[order[np.arange(n_base, n_base + 2000) % len(base)]], axis=1)))
        if rows > n_base else None,
        "mean_cosine_random_pair_base": float(np.mean(np.sum(base[rng.integers(0, len(base), 2000)]
                                                             * base[rng.integers(0, len(base), 2000)], axis=1))),
    }  # fmt: skip
    info["_origins"] = order[np.arange(rows) % len(base)]  # the base passage each row is (a copy of)
    return vecs, info


def mean_nn_cosine(vecs: np.ndarray, rng: np.random.Generator, sample: int = 500) -> float:
    """Mean cosine of a row to its nearest other row, over a sample of rows (the clusters' tightness)."""
    idx = rng.choice(len(vecs), min(sample, len(vecs)), replace=False)
    best = np.full(len(idx), -2.0, dtype=np.float32)
    for start in range(0, len(vecs), 200_000):
        sims = vecs[idx] @ vecs[start : start + 200_000].T
        own = (idx >= start) & (idx < start + 200_000)
        sims[np.nonzero(own)[0], idx[own] - start] = -2.0  # not itself
        best = np.maximum(best, sims.max(axis=1))
    return float(best.mean())


def make_data(rows: int, seed: int, vectors: str = "random",
              sigma: float = 0.025) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:  # fmt: skip
    rng = np.random.default_rng(seed)
    info: dict[str, Any] = {"kind": vectors}
    if vectors == "real":
        vecs, extra = real_vectors(rows, seed, sigma)
        info.update(extra)
    else:
        vecs = rng.standard_normal((rows, DIM), dtype=np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    tenants = rng.integers(0, TENANTS, rows, dtype=np.int32)
    pairs = rng.integers(0, len(PAIRS), rows, dtype=np.int32)
    acls = (tenants * 10_000 + pairs).astype(np.int32)
    return vecs, tenants, acls, info


def make_queries(n: int, seed: int, selectivity: float, vectors: str = "random"
                 ) -> list[tuple[np.ndarray, int, list[int]]]:  # fmt: skip
    """``n`` queries, each (vector, tenant, readable ACL set ids) for a reader of ``selectivity`` % of a tenant."""
    rng = np.random.default_rng(seed + 1)
    pool = np.load(CORPUS / "queries.npy").astype(np.float32) if vectors == "real" else None
    picks = rng.choice(len(pool), n, replace=n > len(pool)) if pool is not None else None
    n_sets = max(1, round(selectivity / 100 * len(PAIRS)))
    out = []
    for i in range(n):
        if pool is not None and picks is not None:
            q = pool[picks[i]]
        else:
            q = rng.standard_normal(DIM).astype(np.float32)
            q /= np.linalg.norm(q)
        tenant = int(rng.integers(0, TENANTS))
        sets = sorted(rng.choice(len(PAIRS), n_sets, replace=False).tolist())
        out.append((q, tenant, [acl_id(tenant, j) for j in sets]))
    return out


def ground_truth(vecs: np.ndarray, tenants: np.ndarray, acls: np.ndarray,
                 queries: list[tuple[np.ndarray, int, list[int]]], k: int
                 ) -> tuple[list[list[int]], float, list[int]]:  # fmt: skip
    truth, fractions, counts = [], [], []
    for q, tenant, readable in queries:
        mask = (tenants == tenant) & np.isin(acls, np.asarray(readable, dtype=np.int32))
        idx = np.nonzero(mask)[0]
        fractions.append(len(idx) / len(vecs))
        counts.append(len(idx))
        d = 1.0 - vecs[idx] @ q
        order = np.argsort(d, kind="stable")[:k]
        truth.append([int(i) + 1 for i in idx[order]])  # ids are 1-based
    return truth, float(np.mean(fractions)), counts


# Which index each strategy reads (exact_heap bitmap-scans the leading (tenant, acl) keys of a covering index).
NEEDS: dict[str, set[str]] = {
    "hnsw_iterative": {"hnsw"},
    "exact_heap": {"cover_half"},
    "exact_cover_float": {"cover_float"},
    "exact_cover_half": {"cover_half"},
    "hnsw_partial_half": {"hnsw_partial_half"},
    "adaptive": {"cover_half", "hnsw", "tenant_acl"},
}


HNSW_VARIANT = re.compile(r"hnsw_(relaxed|strict)_ef(\d+)(?:_mst(\d+))?$")
# Clustered exact scan: per-tenant spherical k-means (retrieval/vclusters.py), nlist clusters, nprobe probed.
IVF_VARIANT = re.compile(r"ivf_(cover|keyacl)_nl(\d+)_p(\d+)$")
IVFFLAT_VARIANT = re.compile(r"ivfflat_l(\d+)_p(\d+)$")
ADAPTIVE_IVF_VARIANT = re.compile(r"adaptive_ivf_nl(\d+)_p(\d+)(_skip)?$")
# Clustered scan on a bit copy: hamming top-N of the probed clusters' readable rows, index-only over
# (tenant, vcluster, acl) INCLUDE (id, emb_bits), then exact halfvec re-scoring of those N.
IVFBQ_VARIANT = re.compile(r"ivfbq_nl(\d+)_p(\d+)_r(\d+)$")
# adaptive_ivf_..._skip: per-(tenant, ACL set) row counts kept beside the centroids (the product's snapshot at
# training time); a reader whose sets sum to more than SKIP_COUNT_FACTOR x cap takes the clustered scan uncounted.
SKIP_COUNT_FACTOR = 2.0
_acl_counts: dict[tuple[str, int], dict[int, int]] = {}
ADAPTIVE_VARIANT = re.compile(r"adaptive_cap(\d+)(?:_ef(\d+))?$")


def needs(strategy: str) -> set[str]:
    ivf = IVF_VARIANT.match(strategy)
    if ivf:
        return {f"ivf{ivf.group(2)}_{ivf.group(1)}"}
    bq = IVFBQ_VARIANT.match(strategy)
    if bq:
        return {f"ivf{bq.group(1)}_bits"}
    aivf = ADAPTIVE_IVF_VARIANT.match(strategy)
    if aivf:
        return {"cover_half", "tenant_acl", f"ivf{aivf.group(1)}_keyacl"}
    flat = IVFFLAT_VARIANT.match(strategy)
    if flat:
        return {f"ivfflat{flat.group(1)}"}
    if strategy.startswith("bq_rescore_"):
        return {"cover_bits"}
    if HNSW_VARIANT.match(strategy):
        return {"hnsw"}
    if strategy.startswith("exact_cover_half_par"):
        return {"cover_half"}
    if ADAPTIVE_VARIANT.match(strategy):
        return NEEDS["adaptive"]
    return NEEDS[strategy]


def load(conn: psycopg.Connection, schema: str, vecs: np.ndarray, tenants: np.ndarray, acls: np.ndarray,
         indexes: set[str], maintenance_work_mem: str = "1GB", hnsw_m: int = 16,
         hnsw_ef_construction: int = 64) -> dict[str, float]:  # fmt: skip
    t: dict[str, float] = {}
    conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    conn.execute(f"CREATE SCHEMA {schema}")
    # The bit column only when a binary strategy runs: it is computed on load (COPY) from the vector.
    bits = (f", emb_bits bit({DIM}) GENERATED ALWAYS AS (binary_quantize(embedding)::bit({DIM})) STORED"
            if "cover_bits" in indexes else "")  # fmt: skip
    conn.execute(
        f"CREATE TABLE {schema}.items (id bigint PRIMARY KEY, tenant_id int NOT NULL, acl_set_id int NOT NULL, "
        f"embedding vector({DIM}) NOT NULL, emb_half halfvec({DIM}) NOT NULL{bits})"
    )
    t0 = time.perf_counter()
    with conn.cursor() as cur, cur.copy(f"COPY {schema}.items FROM STDIN WITH (FORMAT BINARY)") as copy:
        copy.set_types(["int8", "int4", "int4", "vector", "halfvec"])
        for i in range(len(vecs)):
            copy.write_row((i + 1, int(tenants[i]), int(acls[i]), vecs[i], HalfVector(vecs[i])))
    t["copy_s"] = time.perf_counter() - t0
    print(f"  copy_s: {t['copy_s']:.1f}s", flush=True)
    steps = [
        ("cover_float_s", f"CREATE INDEX items_cover_float ON {schema}.items (tenant_id, acl_set_id) "
                          f"INCLUDE (id, embedding)"),
        ("cover_half_s", f"CREATE INDEX items_cover_half ON {schema}.items (tenant_id, acl_set_id) INCLUDE (id, emb_half)"),
        ("cover_bits_s", f"CREATE INDEX items_cover_bits ON {schema}.items (tenant_id, acl_set_id) "
                         f"INCLUDE (id, emb_bits)"),
        ("hnsw_s", f"CREATE INDEX items_hnsw ON {schema}.items USING hnsw (embedding vector_cosine_ops) "
                   f"WITH (m = {int(hnsw_m)}, ef_construction = {int(hnsw_ef_construction)})"),
    ]  # fmt: skip
    steps = [st for st in steps if st[0].removesuffix("_s") in indexes]
    if "hnsw_partial_half" in indexes:
        for tenant in range(TENANTS):
            steps.append(
                (f"hnsw_partial_half_t{tenant}_s",
                 f"CREATE INDEX items_hnsw_half_t{tenant} ON {schema}.items USING hnsw (emb_half halfvec_cosine_ops) "
                 f"WITH (m = 16, ef_construction = 64) WHERE tenant_id = {tenant}")
            )  # fmt: skip
    # The 1M-row HNSW graph needs about 2 GB; a graph that outgrows maintenance_work_mem builds far slower.
    conn.execute(f"SET maintenance_work_mem = '{maintenance_work_mem}'")
    for name, sql in steps:
        t0 = time.perf_counter()
        conn.execute(sql)
        t[name] = time.perf_counter() - t0
        print(f"  {name}: {t[name]:.1f}s", flush=True)
    t0 = time.perf_counter()
    conn.execute(f"VACUUM (ANALYZE) {schema}.items")  # visibility map: index-only scans need it
    t["vacuum_analyze_s"] = time.perf_counter() - t0
    return t


def ensure_ivf(conn: psycopg.Connection, schema: str, vecs: np.ndarray, tenants: np.ndarray, acls: np.ndarray,
               nlist: int, variants: set[str], seed: int) -> dict[str, Any]:  # fmt: skip
    """The clustered exact scan's data: per-tenant centroids and a side table with each row's cluster.

    ``{schema}.ivf<nlist>`` holds (id, tenant_id, vcluster, acl_set_id, emb_half) of every row and
    ``{schema}.ivf<nlist>_centroids`` each tenant's centroids; the covering btrees are
    ``cover``: (tenant_id, vcluster) INCLUDE (acl_set_id, id, emb_half) and
    ``keyacl``: (tenant_id, vcluster, acl_set_id) INCLUDE (id, emb_half).  The product keeps ``vcluster``
    on the chunk table itself; a side table measures the same index-only scan without rewriting the 1M-row
    table (and its HNSW index) for every nlist.  Timings and sizes are kept in ``{schema}.ivf_meta``.
    """
    from retrieval.vclusters import assign, spherical_kmeans

    table = f"{schema}.ivf{nlist}"
    conn.execute(f"CREATE TABLE IF NOT EXISTS {schema}.ivf_meta (nlist int PRIMARY KEY, info jsonb NOT NULL)")
    got = conn.execute(f"SELECT info FROM {schema}.ivf_meta WHERE nlist = %s", [nlist]).fetchone()
    info: dict[str, Any] = dict(got[0]) if got else {}
    if not got:
        t: dict[str, Any] = {"nlist_per_tenant": nlist, "train_s": {}, "train_rows": {}}
        labels = np.empty(len(vecs), dtype=np.int32)
        cents = {}
        assign_s = 0.0
        for tenant in range(TENANTS):
            idx = np.nonzero(tenants == tenant)[0]
            t0 = time.perf_counter()
            cents[tenant] = spherical_kmeans(vecs[idx], nlist, iters=20, seed=seed + tenant)
            t["train_s"][str(tenant)] = time.perf_counter() - t0
            t["train_rows"][str(tenant)] = int(min(len(idx), 64 * nlist))
            t0 = time.perf_counter()
            labels[idx] = assign(vecs[idx], cents[tenant])
            assign_s += time.perf_counter() - t0
        t["assign_s"] = assign_s
        t["assign_us_per_row"] = assign_s / len(vecs) * 1e6
        t0 = time.perf_counter()  # one row at a time, as ingest would (a 384 x nlist matrix-vector product)
        for i in range(200):
            assign(vecs[i], cents[int(tenants[i])])
        t["assign_one_row_us"] = (time.perf_counter() - t0) / 200 * 1e6
        sizes = np.bincount(labels[tenants == 0], minlength=nlist)
        t["cluster_rows_tenant0"] = {"min": int(sizes.min()), "median": float(np.median(sizes)),
                                     "max": int(sizes.max())}  # fmt: skip
        conn.execute(f"DROP TABLE IF EXISTS {table}, {table}_centroids")
        conn.execute(f"CREATE TABLE {table}_centroids (tenant_id int, cluster int, centroid vector({DIM}), "
                     f"PRIMARY KEY (tenant_id, cluster))")  # fmt: skip
        with conn.cursor() as cur, cur.copy(f"COPY {table}_centroids FROM STDIN WITH (FORMAT BINARY)") as copy:
            copy.set_types(["int4", "int4", "vector"])
            for tenant, c in cents.items():
                for j in range(len(c)):
                    copy.write_row((tenant, j, c[j]))
        conn.execute(f"CREATE TABLE {table} (id bigint PRIMARY KEY, tenant_id int NOT NULL, vcluster int NOT NULL, "
                     f"acl_set_id int NOT NULL, emb_half halfvec({DIM}) NOT NULL)")  # fmt: skip
        t0 = time.perf_counter()
        with conn.cursor() as cur, cur.copy(f"COPY {table} FROM STDIN WITH (FORMAT BINARY)") as copy:
            copy.set_types(["int8", "int4", "int4", "int4", "halfvec"])
            for i in range(len(vecs)):
                copy.write_row((i + 1, int(tenants[i]), int(labels[i]), int(acls[i]), HalfVector(vecs[i])))
        t["copy_s"] = time.perf_counter() - t0
        info = t
        print(f"  ivf{nlist}: {json.dumps(t)}", flush=True)
    conn.execute(f"ALTER TABLE {table} ALTER COLUMN vcluster DROP NOT NULL")  # as the product's column
    for variant in sorted(variants):
        key = f"index_{variant}_s"
        if key in info:
            continue
        cols = ("(tenant_id, vcluster) INCLUDE (acl_set_id, id, emb_half)" if variant == "cover"
                else "(tenant_id, vcluster, acl_set_id) INCLUDE (id, emb_bits)" if variant == "bits"
                else "(tenant_id, vcluster, acl_set_id) INCLUDE (id, emb_half)")  # fmt: skip
        t0 = time.perf_counter()
        if variant == "bits":  # a stored bit copy of each row (48 bytes): rewrites the side table once
            conn.execute(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS emb_bits bit({DIM}) "
                         f"GENERATED ALWAYS AS (binary_quantize(emb_half)::bit({DIM})) STORED")  # fmt: skip
            info["add_bits_column_s"] = time.perf_counter() - t0
            t0 = time.perf_counter()
        conn.execute(f"CREATE INDEX ivf{nlist}_{variant} ON {table} {cols}")
        info[key] = time.perf_counter() - t0
        info[f"index_{variant}_bytes"] = one(conn.execute("SELECT pg_relation_size(%s)",
                                                          [f"{schema}.ivf{nlist}_{variant}"]
                                                          ).fetchone())  # fmt: skip
        conn.execute(f"VACUUM (ANALYZE) {table}")
        print(f"  ivf{nlist}_{variant}: {info[key]:.1f}s, {info[f'index_{variant}_bytes'] / 2**20:.0f} MB", flush=True)
    conn.execute(f"INSERT INTO {schema}.ivf_meta VALUES (%s, %s) ON CONFLICT (nlist) DO UPDATE SET info = excluded.info",
                 [nlist, json.dumps(info)])  # fmt: skip
    return info


def ensure_ivfflat(conn: psycopg.Connection, schema: str, lists: int) -> dict[str, Any]:
    """pgvector's own IVFFlat on the halfvec column (one index over all tenants), for comparison."""
    name = f"items_ivfflat{lists}"
    conn.execute(f"CREATE TABLE IF NOT EXISTS {schema}.ivf_meta (nlist int PRIMARY KEY, info jsonb NOT NULL)")
    got = conn.execute(f"SELECT info FROM {schema}.ivf_meta WHERE nlist = %s", [-lists]).fetchone()
    if got:
        return dict(got[0])
    t0 = time.perf_counter()
    conn.execute(f"CREATE INDEX {name} ON {schema}.items USING ivfflat (emb_half halfvec_cosine_ops) "
                 f"WITH (lists = {int(lists)})")  # fmt: skip
    info = {"lists": lists, "build_s": time.perf_counter() - t0,
            "bytes": one(conn.execute("SELECT pg_relation_size(%s)", [f"{schema}.{name}"]).fetchone())}  # fmt: skip
    print(f"  {name}: {json.dumps(info)}", flush=True)
    conn.execute(f"INSERT INTO {schema}.ivf_meta VALUES (%s, %s)", [-lists, json.dumps(info)])
    return info


def one(row: tuple[Any, ...] | None) -> Any:
    """The first column of a row that the query always returns."""
    assert row is not None
    return row[0]


def vec_literal(q: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.7f}" for x in q) + "]"


def run_strategy(conn: psycopg.Connection, schema: str, name: str, q: np.ndarray, tenant: int,
                 readable: list[int], k: int, cap: int, ef_search: int = 100) -> tuple[list[int], str]:  # fmt: skip
    """One query, in its own transaction with SET LOCAL planner settings; returns (ids, plan tag)."""
    v = vec_literal(q)
    tag = name
    order, max_scan = "relaxed_order", None
    variant = HNSW_VARIANT.match(name)
    if variant:
        order, ef_search = f"{variant.group(1)}_order", int(variant.group(2))
        max_scan = int(variant.group(3)) if variant.group(3) else None
        name = "hnsw_iterative"
    adaptive = ADAPTIVE_VARIANT.match(name)
    if adaptive:  # the product's rule with another cap / ef_search (adaptive_cap20000_ef200)
        cap = int(adaptive.group(1))
        ef_search = int(adaptive.group(2)) if adaptive.group(2) else ef_search
        name = "adaptive"
    ivf = IVF_VARIANT.match(name)
    nprobe, skip = 0, False
    bq = IVFBQ_VARIANT.match(name)
    if bq:
        nlist, nprobe, rescore, name = int(bq.group(1)), int(bq.group(2)), int(bq.group(3)), "ivfbq"
    aivf = ADAPTIVE_IVF_VARIANT.match(name)
    if aivf:
        name, nlist, nprobe, variant = "adaptive", int(aivf.group(1)), int(aivf.group(2)), "keyacl"
        skip = bool(aivf.group(3))
    elif ivf:
        variant, nlist, nprobe, name = ivf.group(1), int(ivf.group(2)), int(ivf.group(3)), "ivf"
    flat = IVFFLAT_VARIANT.match(name)
    workers = 0
    if name.startswith("exact_cover_half_par"):
        workers, name = int(name.removeprefix("exact_cover_half_par") or 2), "exact_cover_half"
    n = -1
    with conn.transaction(), conn.cursor() as cur:
        if name == "adaptive" and skip:
            key = (schema, tenant)
            if key not in _acl_counts:  # the snapshot, read once (not timed after the warm-up queries)
                _acl_counts[key] = dict(conn.execute(f"SELECT acl_set_id, count(*) FROM {schema}.items WHERE "
                                                     f"tenant_id = %s GROUP BY 1", [tenant]).fetchall())  # fmt: skip
            counts = _acl_counts[key]
            if sum(counts.get(a, 0) for a in readable) > SKIP_COUNT_FACTOR * cap:
                name, n, tag = "ivf", cap + 1, "adaptive->ivf_uncounted"
        if name == "adaptive":
            cur.execute("SET LOCAL enable_bitmapscan = off")
            cur.execute(
                f"SELECT count(*) FROM (SELECT 1 FROM {schema}.items WHERE tenant_id = %s AND acl_set_id = ANY(%s) "
                f"LIMIT %s) s",
                [tenant, readable, cap + 1],
            )
            n = one(cur.fetchone())
            name = "exact_cover_half" if n <= cap else ("ivf" if nprobe else "hnsw_iterative")
            tag = f"adaptive->{name}"
        if name == "hnsw_iterative":
            cur.execute(f"SET LOCAL hnsw.iterative_scan = {order}")
            cur.execute(f"SET LOCAL hnsw.ef_search = {int(ef_search)}")
            if max_scan is not None:
                cur.execute(f"SET LOCAL hnsw.max_scan_tuples = {int(max_scan)}")
            cur.execute("SET LOCAL enable_bitmapscan = off")
            cur.execute("SET LOCAL enable_seqscan = off")
            cur.execute("SET LOCAL enable_sort = off")  # the ordered HNSW scan, never scan + sort
            # "+ 0" hides the btree paths so the planner has to walk HNSW (as in the probe).
            cur.execute(
                f"WITH nn AS MATERIALIZED (SELECT id, embedding <=> %s::vector AS d FROM {schema}.items "
                f"WHERE tenant_id + 0 = %s AND acl_set_id + 0 = ANY(%s) ORDER BY embedding <=> %s::vector LIMIT %s) "
                f"SELECT id FROM nn ORDER BY d, id",
                [v, tenant, readable, v, k],
            )
            if tag == "adaptive->hnsw_iterative" and cur.rowcount < min(k, n):
                name, tag = "exact_cover_half", "adaptive->hnsw_iterative+exact-fallback"  # as the product does
        if name == "ivf":
            # The nprobe centroids nearest the query (a seq scan over the tenant's nlist centroids), then
            # one exact index-only scan over those clusters' rows of the reader's ACL sets.
            cur.execute("SET LOCAL enable_bitmapscan = off")
            cur.execute("SET LOCAL enable_seqscan = off")
            probe = (f"SELECT id, emb_half <=> %s::halfvec AS d FROM {schema}.ivf{nlist} WHERE tenant_id = %s "
                     f"AND vcluster = ANY(ARRAY(SELECT cluster FROM {schema}.ivf{nlist}_centroids WHERE tenant_id = %s "
                     f"ORDER BY centroid <=> %s::vector LIMIT %s)) AND acl_set_id = ANY(%s) OFFSET 0")  # fmt: skip
            if tag.startswith("adaptive"):
                uncounted = tag == "adaptive->ivf_uncounted"
                # The product's statement (retrieval/backends/postgres.py): also every row without a cluster.
                tag = f"adaptive->ivf_keyacl_nl{nlist}_p{nprobe}" + ("_uncounted" if uncounted else "")
                cur.execute(
                    f"SELECT id FROM (({probe}) UNION ALL (SELECT id, emb_half <=> %s::halfvec AS d FROM "
                    f"{schema}.ivf{nlist} WHERE tenant_id = %s AND vcluster IS NULL AND acl_set_id = ANY(%s) OFFSET 0)"
                    f") s ORDER BY d, id LIMIT %s",
                    [v, tenant, tenant, v, nprobe, readable, v, tenant, readable, k],
                )
            else:
                cur.execute(f"SELECT id FROM ({probe}) s ORDER BY d, id LIMIT %s",
                            [v, tenant, tenant, v, nprobe, readable, k])  # fmt: skip
        if name == "ivfbq":
            cur.execute("SET LOCAL enable_bitmapscan = off")
            cur.execute("SET LOCAL enable_seqscan = off")
            t = f"{schema}.ivf{nlist}"
            cur.execute(
                f"WITH cand AS MATERIALIZED (SELECT id FROM {t} WHERE tenant_id = %s AND vcluster = ANY(ARRAY("
                f"SELECT cluster FROM {t}_centroids WHERE tenant_id = %s ORDER BY centroid <=> %s::vector LIMIT %s)) "
                f"AND acl_set_id = ANY(%s) ORDER BY emb_bits <~> binary_quantize(%s::vector)::bit({DIM}) LIMIT %s) "
                f"SELECT i.id FROM cand JOIN {t} i USING (id) ORDER BY i.emb_half <=> %s::halfvec, i.id LIMIT %s",
                [tenant, tenant, v, nprobe, readable, v, rescore, v, k],
            )
        if flat:
            cur.execute(f"SET LOCAL ivfflat.probes = {int(flat.group(2))}")
            cur.execute("SET LOCAL ivfflat.iterative_scan = relaxed_order")
            cur.execute("SET LOCAL enable_bitmapscan = off")
            cur.execute("SET LOCAL enable_seqscan = off")
            cur.execute("SET LOCAL enable_sort = off")
            cur.execute(
                f"WITH nn AS MATERIALIZED (SELECT id, emb_half <=> %s::halfvec AS d FROM {schema}.items "
                f"WHERE tenant_id + 0 = %s AND acl_set_id + 0 = ANY(%s) ORDER BY emb_half <=> %s::halfvec LIMIT %s) "
                f"SELECT id FROM nn ORDER BY d, id",
                [v, tenant, readable, v, k],
            )
            name = "ivfflat"
        if name == "exact_heap":
            # Bitmap on the (tenant, acl) keys, then the heap: the product's exact path without a covering index.
            cur.execute("SET LOCAL enable_indexscan = off")
            cur.execute("SET LOCAL enable_seqscan = off")
            cur.execute(
                f"SELECT id FROM (SELECT id, embedding <=> %s::vector AS d FROM {schema}.items "
                f"WHERE tenant_id = %s AND acl_set_id = ANY(%s) OFFSET 0) s ORDER BY d, id LIMIT %s",
                [v, tenant, readable, k],
            )
        elif name in ("exact_cover_float", "exact_cover_half"):
            col, typ = ("embedding", "vector") if name == "exact_cover_float" else ("emb_half", "halfvec")
            cur.execute("SET LOCAL enable_bitmapscan = off")
            cur.execute("SET LOCAL enable_seqscan = off")
            if workers:
                cur.execute(f"SET LOCAL max_parallel_workers_per_gather = {workers}")
                cur.execute("SET LOCAL parallel_setup_cost = 0")
                cur.execute("SET LOCAL parallel_tuple_cost = 0")
                cur.execute("SET LOCAL min_parallel_index_scan_size = 0")
                cur.execute("SET LOCAL min_parallel_table_scan_size = 0")
            cur.execute(
                f"SELECT id FROM (SELECT id, {col} <=> %s::{typ} AS d FROM {schema}.items "
                f"WHERE tenant_id = %s AND acl_set_id = ANY(%s) OFFSET 0) s ORDER BY d, id LIMIT %s",
                [v, tenant, readable, k],
            )
        elif name.startswith("bq_rescore_"):
            # First pass: hamming distance over the 48-byte bit copy, index-only on the covering btree
            # (a top-N heapsort over the readable rows); second pass: exact halfvec distance of those N.
            candidates = int(name.removeprefix("bq_rescore_"))
            cur.execute("SET LOCAL enable_bitmapscan = off")
            cur.execute("SET LOCAL enable_seqscan = off")
            cur.execute(
                f"WITH cand AS MATERIALIZED (SELECT id FROM {schema}.items WHERE tenant_id = %s "
                f"AND acl_set_id = ANY(%s) ORDER BY emb_bits <~> binary_quantize(%s::vector)::bit({DIM}) LIMIT %s) "
                f"SELECT i.id FROM cand JOIN {schema}.items i USING (id) "
                f"ORDER BY i.emb_half <=> %s::halfvec, i.id LIMIT %s",
                [tenant, readable, v, candidates, v, k],
            )
        elif name == "hnsw_partial_half":
            cur.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            cur.execute("SET LOCAL hnsw.ef_search = 100")
            cur.execute("SET LOCAL enable_bitmapscan = off")
            cur.execute("SET LOCAL enable_seqscan = off")
            cur.execute("SET LOCAL enable_sort = off")
            cur.execute(
                f"WITH nn AS MATERIALIZED (SELECT id, emb_half <=> %s::halfvec AS d FROM {schema}.items "
                f"WHERE tenant_id = {int(tenant)} AND acl_set_id + 0 = ANY(%s) ORDER BY emb_half <=> %s::halfvec "
                f"LIMIT %s) SELECT id FROM nn ORDER BY d, id",
                [v, readable, v, k],
            )
        elif name not in ("hnsw_iterative", "ivf", "ivfflat", "ivfbq"):
            raise ValueError(name)
        return [int(r[0]) for r in cur.fetchall()], tag


def explain(conn: psycopg.Connection, schema: str, name: str, q: np.ndarray, tenant: int, readable: list[int],
            k: int) -> str:  # fmt: skip
    """The plan's node types, to show which index each strategy really used."""
    if name.startswith("adaptive"):
        return "count on the covering index, then exact_cover_half or hnsw_iterative (+ exact fallback)"
    orig_execute = psycopg.Cursor.execute
    plans: list[str] = []

    def capture(self: Any, query: Any, params: Any = None, **kw: Any) -> Any:
        if isinstance(query, str) and query.lstrip().upper().startswith(("WITH", "SELECT ID")):
            orig_execute(self, "EXPLAIN (COSTS OFF) " + query, params, **kw)
            plans.append(" | ".join(r[0].strip() for r in self.fetchall()))
        return orig_execute(self, query, params, **kw)

    psycopg.Cursor.execute = capture  # type: ignore[method-assign]
    try:
        run_strategy(conn, schema, name, q, tenant, readable, k, 0)
    finally:
        psycopg.Cursor.execute = orig_execute  # type: ignore[method-assign]
    return plans[0] if plans else ""


def product_settings() -> dict[str, int]:
    """The product's vector settings as cairn/settings.py resolves them (env.bench provides its environment)."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cairn.settings")
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from django.conf import settings

    return {k: int(settings.CAIRN[k]) for k in ("VECTOR_EXACT_SCAN_MAX_ROWS", "HNSW_EF_SEARCH")}


def pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dsn", default=os.environ.get("CAIRN_PG_SUPERUSER_URL", ""))
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument(
        "--cap",
        type=int,
        default=None,
        help="exact-scan cap of the adaptive strategy (default: the product's CAIRN_VECTOR_EXACT_SCAN_MAX_ROWS)",
    )
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--reuse", action="store_true", help="keep the loaded schema from an earlier run")
    ap.add_argument("--no-partial", action="store_true", help="skip the per-tenant partial HNSW indexes")
    ap.add_argument("--no-hnsw", action="store_true", help="skip every HNSW index and strategy (1M rows on 2 cores)")
    ap.add_argument("--strategies", default="hnsw_iterative,exact_heap,exact_cover_float,exact_cover_half,"
                                            "hnsw_partial_half,adaptive")  # fmt: skip
    ap.add_argument("--selectivities", default="1,2.6,7.8,33,100",
                    help="reader selectivities, percent of one tenant's rows")  # fmt: skip
    ap.add_argument("--vectors", choices=["random", "real"], default="random")
    ap.add_argument("--sigma", type=float, default=0.025, help="--vectors real: per-coordinate noise of the copies")
    ap.add_argument("--maintenance-work-mem", default="1GB", help="for the index builds (3GB for a 1M HNSW)")
    ap.add_argument("--hnsw-m", type=int, default=16, help="HNSW m of the hnsw index (the product's is 16)")
    ap.add_argument("--hnsw-ef-construction", type=int, default=64, help="HNSW ef_construction (the product's: 64)")
    ap.add_argument("--tag", default="", help="suffix of the output file names")
    args = ap.parse_args()
    load_start = os.getloadavg()
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    if not args.dsn:
        print("set CAIRN_PG_SUPERUSER_URL (source /tmp/cairn-<you>/env.bench) or pass --dsn", file=sys.stderr)
        return 2
    product = product_settings()
    if args.cap is None:
        args.cap = product["VECTOR_EXACT_SCAN_MAX_ROWS"]
    schema = f"bench_vf_{args.vectors}_{args.rows}"
    if args.vectors == "real" and args.sigma != 0.025:
        schema += f"_s{round(args.sigma * 1000):03d}"  # another perturbation: its own tables
    if (args.hnsw_m, args.hnsw_ef_construction) != (16, 64):
        schema += f"_m{args.hnsw_m}efc{args.hnsw_ef_construction}"
    strategies = [s for s in args.strategies.split(",") if s]
    if args.no_partial:
        strategies = [s for s in strategies if s != "hnsw_partial_half"]
    if args.no_hnsw:
        strategies = [s for s in strategies if not s.startswith(("hnsw", "adaptive"))]
    indexes = set().union(*(needs(s) for s in strategies)) if strategies else set()
    vecs, tenants, acls, vector_info = make_data(args.rows, args.seed, args.vectors, args.sigma)
    origins = vector_info.pop("_origins", None)
    print(f"vectors: {json.dumps(vector_info)}", flush=True)
    conn = psycopg.connect(args.dsn, autocommit=True)
    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    register_vector(conn)
    exists = one(conn.execute("SELECT to_regclass(%s)", [f"{schema}.items"]).fetchone()) is not None
    build: dict[str, float] = {}
    if not (args.reuse and exists):
        print(f"loading {args.rows} rows into {schema} ...", flush=True)
        hnsw_params = (args.hnsw_m, args.hnsw_ef_construction)
        build = load(conn, schema, vecs, tenants, acls, indexes, args.maintenance_work_mem, *hnsw_params)
    ivf_build: dict[str, Any] = {}
    if "tenant_acl" in indexes:
        # The adaptive rule's count reads this narrow btree, as the product's count reads chunk_tenant_acl
        # (retrieval/backends/postgres.py::count_readable); without it the count read a covering index.
        t0 = time.perf_counter()
        conn.execute(f"CREATE INDEX IF NOT EXISTS items_tenant_acl ON {schema}.items (tenant_id, acl_set_id)")
        conn.execute(f"VACUUM (ANALYZE) {schema}.items")
        ivf_build["tenant_acl_index_s"] = time.perf_counter() - t0
    ivf_variants: dict[int, set[str]] = {}
    for key in sorted(indexes):
        m = re.match(r"ivf(\d+)_(cover|keyacl|bits)$", key)
        if m:
            ivf_variants.setdefault(int(m.group(1)), set()).add(m.group(2))
        m = re.match(r"ivfflat(\d+)$", key)
        if m:
            ivf_build[f"ivfflat_lists{m.group(1)}"] = ensure_ivfflat(conn, schema, int(m.group(1)))
    for nlist, variants in sorted(ivf_variants.items()):
        ivf_build[f"ivf_nlist{nlist}"] = ensure_ivf(conn, schema, vecs, tenants, acls, nlist, variants, args.seed)
    sizes: dict[str, int] = dict(
        conn.execute(
            "SELECT c.relname, pg_relation_size(c.oid) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s",
            [schema],
        ).fetchall()
    )
    # setting is counted in unit (shared_buffers: 8kB pages), so "bytes" multiplies them; "value" is SHOW's form.
    settings = {name: {"value": value, "setting": setting, "unit": unit, "bytes": nbytes} for name, value, setting, unit,
                nbytes in conn.execute(
        "SELECT name, current_setting(name), setting, unit, CASE WHEN unit IN ('B', 'kB', '8kB', 'MB') THEN "
        "setting::bigint * CASE unit WHEN 'B' THEN 1 WHEN 'kB' THEN 1024 WHEN '8kB' THEN 8192 ELSE 1048576 END END "
        "FROM pg_settings WHERE name = ANY(%s)",
        [["shared_buffers", "work_mem", "effective_cache_size", "jit", "random_page_cost", "max_parallel_workers",
          "max_parallel_workers_per_gather"]],
    ).fetchall()}  # fmt: skip
    results: dict[str, Any] = {
        "rows": args.rows, "dim": DIM, "k": args.k, "queries": args.queries, "cap": args.cap,
        "hnsw_build": {"m": args.hnsw_m, "ef_construction": args.hnsw_ef_construction},
        "vectors": vector_info, "started_utc": started,
        "loadavg_start": load_start, "nproc": os.cpu_count(),
        "product_settings": product, "strategies": strategies, "indexes_built": sorted(indexes), "build": build,
        "ivf_build": ivf_build,
        "sizes_bytes": sizes, "pg_settings": settings, "cpu_count": os.cpu_count(),
        "pg_version": one(conn.execute("SHOW server_version").fetchone()),
        "pgvector": one(conn.execute("SELECT extversion FROM pg_extension WHERE extname='vector'").fetchone()),
        "loadavg_after_build": os.getloadavg(),
        "scenarios": {},
    }  # fmt: skip
    OUT.mkdir(parents=True, exist_ok=True)
    stem = OUT / f"vector_filtered_{args.vectors}_{args.rows}{args.tag}"
    for sel in [float(x) for x in args.selectivities.split(",") if x]:
        scenario = f"tenant_{sel:g}pct"
        queries = make_queries(args.queries, args.seed, sel, args.vectors)
        truth, frac, counts = ground_truth(vecs, tenants, acls, queries, args.k)
        print(f"\n== {scenario}: a reader of {sel:g} % of a tenant; filter keeps {frac * 100:.2f} % of all rows "
              f"(median {statistics.median(counts):,.0f} readable), {args.queries} queries, k={args.k}")  # fmt: skip
        print(f"{'strategy':30} {'recall@10':>9} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}  plan")
        sc: dict[str, Any] = {"selectivity_pct_of_tenant": sel, "filter_fraction": frac,
                              "readable_rows_median": statistics.median(counts), "readable_rows_min": min(counts),
                              "readable_rows_max": max(counts), "loadavg_start": os.getloadavg(),
                              "strategies": {}}  # fmt: skip
        for name in strategies:
            for q, tenant, readable in queries[: min(20, len(queries))]:  # warm the cache
                run_strategy(conn, schema, name, q, tenant, readable, args.k, args.cap, product["HNSW_EF_SEARCH"])
            lat, recalls, origin_recalls, tags = [], [], [], set()
            for (q, tenant, readable), gt in zip(queries, truth, strict=True):
                t0 = time.perf_counter()
                ids, tag = run_strategy(
                    conn, schema, name, q, tenant, readable, args.k, args.cap, product["HNSW_EF_SEARCH"]
                )
                lat.append((time.perf_counter() - t0) * 1000)
                tags.add(tag)
                recalls.append(len(set(ids) & set(gt)) / max(1, len(gt)))
                if origins is not None:  # did it find the right passages, whichever perturbed copies?
                    want = {int(origins[i - 1]) for i in gt}
                    origin_recalls.append(len({int(origins[i - 1]) for i in ids} & want) / max(1, len(want)))
            q0, t0_, r0 = queries[0]
            row: dict[str, Any] = {
                "recall_at_10": statistics.mean(recalls), "min_recall": min(recalls),
                "p50_ms": pct(lat, 50), "p95_ms": pct(lat, 95), "p99_ms": pct(lat, 99),
                "share_recall_below_half": sum(r < 0.5 for r in recalls) / len(recalls),
                "share_recall_zero": sum(r == 0 for r in recalls) / len(recalls),
                "mean_ms": statistics.mean(lat), "paths": sorted(tags),
                "origin_recall_at_10": statistics.mean(origin_recalls) if origin_recalls else None,
                "plan": explain(conn, schema, name, q0, t0_, r0, args.k),
            }  # fmt: skip
            sc["strategies"][name] = row
            orec = f" origin_recall {row['origin_recall_at_10']:.3f}" if origin_recalls else ""
            print(f"{name:30} {row['recall_at_10']:9.3f} {row['p50_ms']:8.1f} {row['p95_ms']:8.1f} "
                  f"{row['p99_ms']:8.1f}  {','.join(row['paths'])}{orec}", flush=True)  # fmt: skip
        sc["loadavg_end"] = os.getloadavg()
        results["scenarios"][scenario] = sc
        results["loadavg_end"] = os.getloadavg()
        stem.with_suffix(".json").write_text(json.dumps(results, indent=2, default=str))  # after each selectivity
    results["loadavg_end"] = os.getloadavg()
    results["finished_utc"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    stem.with_suffix(".json").write_text(json.dumps(results, indent=2, default=str))
    plot(results, stem.with_suffix(".png"))
    print(f"\nwrote {stem}.json and {stem}.png")
    return 0


def plot(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scen = list(results["scenarios"])
    if not scen:
        return  # a build-only run (--selectivities "")
    most = max(len(results["scenarios"][s]["strategies"]) for s in scen)
    fig, axes = plt.subplots(1, len(scen), figsize=(5.5 * len(scen), 0.35 * most + 2.5), squeeze=False)
    for ax, s in zip(axes[0], scen, strict=True):
        rows = results["scenarios"][s]["strategies"]
        names = list(rows)
        p95 = [rows[n]["p95_ms"] for n in names]
        p50 = [rows[n]["p50_ms"] for n in names]
        y = np.arange(len(names))
        ax.barh(y, p95, color="#c55", label="p95")
        ax.barh(y, p50, color="#58c", label="p50")
        for i, n in enumerate(names):
            ax.text(p95[i], i, f"  recall {rows[n]['recall_at_10']:.3f}", va="center", fontsize=8)
        ax.axvline(25, color="k", ls="--", lw=0.8)
        ax.set_yticks(y, names)
        ax.set_xscale("log")
        ax.set_xlabel("latency ms (log); dashed = 25 ms goal")
        frac = results["scenarios"][s]["filter_fraction"] * 100
        ax.set_title(f"{s}: {frac:.1f} % of {results['rows']:,} {results['vectors']['kind']} rows", fontsize=9)
        ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    sys.exit(main())
