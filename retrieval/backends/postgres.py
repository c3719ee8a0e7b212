"""Postgres index backend: BM25 over a posting table, pgvector HNSW / exact scan.

Both legs put ``tenant_id = %s AND acl_set_id = ANY(%s)`` in the same SQL
statement that ranks, so restricted text never leaves the database; RLS
(forced, app role) filters the same rows again underneath.

Lexical: BM25 (Lucene's formula, k1=0.9, b=0.4 as in BEIR's Anserini runs)
from precomputed postings (tf, |d|) and per-tenant document frequencies,
touching only the postings of the query's lexemes in the reader's ACL sets (the
posting key is (tenant, lexeme, acl_set, chunk), migration 0008).  Tokenisation is
Postgres's ``english`` text-search config (Snowball stemmer + stopwords) on
both the index and the query side.

Vector: cosine distance.  A selective permission filter makes HNSW walk far
(or stop at ``hnsw.max_scan_tuples`` with fewer than k rows), so when the
readable rows are few an exact scan over the (tenant, acl) index is both
faster and exact; above it, when the tenant's vector clustering is ready
(retrieval/clustering.py), the clustered exact scan (the nearest clusters'
readable rows, exactly); otherwise HNSW with iterative scan.  Either of the
latter falls back to the exact scan if it returns fewer than k.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from django.conf import settings
from django.db import connection

from retrieval import clustering
from retrieval.backends.base import LegHit, LegResult, SearchFilters

K1 = 0.9
B = 0.4


def _filter_sql(filters: SearchFilters, alias: str) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    if filters.sources:
        clauses.append(f"{alias}.source_system = ANY(%s)")
        params.append(list(filters.sources))
    if filters.containers:
        clauses.append(f"{alias}.container = ANY(%s)")
        params.append(list(filters.containers))
    if filters.after:
        clauses.append(f"{alias}.updated_at_source >= %s")
        params.append(filters.after)
    if filters.before:
        clauses.append(f"{alias}.updated_at_source < %s")
        params.append(filters.before)
    if filters.max_authority_tier is not None:
        clauses.append(f"{alias}.authority_tier <= %s")
        params.append(filters.max_authority_tier)
    if filters.document_ids:
        clauses.append(f"{alias}.document_id = ANY(%s)")
        params.append([int(d) for d in filters.document_ids])
    for term in filters.exclude_terms:
        clauses.append(f"NOT ({alias}.tsv @@ phraseto_tsquery('english', %s))")
        params.append(term)
    for phrase in filters.phrases:
        clauses.append(f"{alias}.tsv @@ phraseto_tsquery('english', %s)")
        params.append(phrase)
    return (" AND " + " AND ".join(clauses)) if clauses else "", params


def _has_filters(filters: SearchFilters) -> bool:
    return any(
        [filters.sources, filters.containers, filters.after, filters.before, filters.exclude_terms,
         filters.phrases, filters.max_authority_tier is not None, filters.document_ids]
    )  # fmt: skip


class PostgresIndexBackend:
    name = "postgres"

    def lexical(self, tenant_id: int, acl_set_ids: tuple[int, ...], query: str, filters: SearchFilters,
                k: int) -> LegResult:  # fmt: skip
        if not acl_set_ids or not query.strip():
            return LegResult([], "empty")
        t0 = time.perf_counter()
        join = ""
        fparams: list[Any]
        fsql, fparams = "", []
        if _has_filters(filters):
            join = "JOIN retrieval_chunk c ON c.id = p.chunk_id AND c.tenant_id = p.tenant_id"
            fsql, fparams = _filter_sql(filters, "c")
        sql = f"""
            WITH st AS (
                SELECT n_chunks::float8 AS n,
                       greatest(total_length::float8 / nullif(n_chunks, 0), 1.0) AS avgdl
                FROM retrieval_indexstate WHERE tenant_id = %s
            ), ql AS (
                SELECT DISTINCT lexeme FROM unnest(to_tsvector('english', %s))
            ), q AS (
                SELECT t.lexeme, ln(1.0 + (st.n - t.df + 0.5) / (t.df + 0.5)) AS idf
                FROM retrieval_termstat t JOIN ql ON ql.lexeme = t.lexeme, st
                WHERE t.tenant_id = %s AND t.df > 0
            )
            SELECT p.chunk_id,
                   sum(q.idf * p.tf * ({K1} + 1) / (p.tf + {K1} * (1 - {B} + {B} * p.dl / st.avgdl))) AS score
            FROM retrieval_posting p JOIN q ON q.lexeme = p.lexeme {join}, st
            WHERE p.tenant_id = %s AND p.acl_set_id = ANY(%s) {fsql}
            GROUP BY p.chunk_id
            ORDER BY score DESC, p.chunk_id
            LIMIT %s
        """
        params = [tenant_id, query, tenant_id, tenant_id, list(acl_set_ids), *fparams, k]
        with connection.cursor() as cur:
            cur.execute(sql, params)
            rows = cur.fetchall()
        hits = [LegHit(int(r[0]), float(r[1])) for r in rows]
        return LegResult(hits, "bm25-postings", {"lexical": (time.perf_counter() - t0) * 1000})

    def count_readable(self, tenant_id: int, acl_set_ids: tuple[int, ...], filters: SearchFilters,
                       cap: int) -> int:  # fmt: skip
        # Chunks, embedded or not (the pipeline writes every chunk with its embedding): so the count runs
        # index-only on the narrow chunk_tenant_acl btree (~24 bytes an entry) instead of reading up to
        # cap + 1 halfvecs from the covering one (~800 bytes an entry) just to test them for NULL.
        fsql, fparams = _filter_sql(filters, "c")
        with connection.cursor() as cur:
            cur.execute(
                f"SELECT count(*) FROM (SELECT 1 FROM retrieval_chunk c WHERE c.tenant_id = %s "
                f"AND c.acl_set_id_denorm = ANY(%s) {fsql} LIMIT %s) s",
                [tenant_id, list(acl_set_ids), *fparams, cap + 1],
            )
            return int(cur.fetchone()[0])

    def vector(self, tenant_id: int, acl_set_ids: tuple[int, ...], embedding: np.ndarray, filters: SearchFilters,
               k: int) -> LegResult:  # fmt: skip
        if not acl_set_ids:
            return LegResult([], "empty")
        t0 = time.perf_counter()
        vec = "[" + ",".join(f"{x:.7f}" for x in np.asarray(embedding, dtype=np.float32)) + "]"
        fsql, fparams = _filter_sql(filters, "c")
        cap = int(settings.CAIRN["VECTOR_EXACT_SCAN_MAX_ROWS"])
        clustered, acl_counts = clustering.current()
        if clustered and not _has_filters(filters) and clustering.broad_without_count(acl_counts, acl_set_ids, cap):
            readable = cap + 1  # far above the cap by the tenant's per-ACL-set counts: no need to count
        else:
            readable = self.count_readable(tenant_id, acl_set_ids, filters, cap)
        base = f"c.tenant_id = %s AND c.acl_set_id_denorm = ANY(%s) AND c.embedding IS NOT NULL {fsql}"
        base_params: list[Any] = [tenant_id, list(acl_set_ids), *fparams]
        strategy = "exact" if readable <= cap else "clustered" if clustered else "hnsw-iterative"
        rows: list[Any] = []
        with connection.cursor() as cur:
            if strategy == "clustered":
                # The NPROBE centroids nearest the query, then an exact index-only scan of those clusters'
                # readable rows on chunk_tenant_vcluster_half (tenant, vcluster, acl) INCLUDE (id, halfvec),
                # plus every row not yet assigned (vcluster NULL: never invisible).  OFFSET 0 fences each
                # branch so neither can turn into an HNSW walk; the btree is forced like the benchmark's.
                cur.execute("SELECT set_config('enable_seqscan', 'off', true)")
                cur.execute("SELECT set_config('enable_bitmapscan', 'off', true)")
                half_base = base.replace("c.embedding IS NOT NULL", "c.embedding_half IS NOT NULL")
                cur.execute(
                    f"""
                    SELECT id, dist FROM (
                        (SELECT c.id, c.embedding_half <=> %s::halfvec AS dist FROM retrieval_chunk c
                         WHERE c.vcluster = ANY(ARRAY(
                             SELECT v.cluster FROM retrieval_vectorcentroid v WHERE v.tenant_id = %s
                             ORDER BY v.centroid <=> %s::vector LIMIT %s)) AND {half_base} OFFSET 0)
                        UNION ALL
                        (SELECT c.id, c.embedding_half <=> %s::halfvec AS dist FROM retrieval_chunk c
                         WHERE c.vcluster IS NULL AND {half_base} OFFSET 0)
                    ) s ORDER BY dist, id LIMIT %s
                    """,
                    [vec, tenant_id, vec, int(settings.CAIRN["VECTOR_CLUSTER_NPROBE"]), *base_params,
                     vec, *base_params, k],
                )  # fmt: skip
                rows = cur.fetchall()
                if len(rows) < min(k, readable):
                    strategy = "clustered+exact-fallback"
            if strategy == "hnsw-iterative":
                cur.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true)")
                cur.execute("SELECT set_config('hnsw.ef_search', %s, true)", [str(settings.CAIRN["HNSW_EF_SEARCH"])])
                cur.execute(
                    f"""
                    WITH nn AS MATERIALIZED (
                        SELECT c.id, c.embedding <=> %s::vector AS dist FROM retrieval_chunk c
                        WHERE {base} ORDER BY c.embedding <=> %s::vector LIMIT %s
                    ) SELECT id, dist FROM nn ORDER BY dist, id
                    """,
                    [vec, *base_params, vec, k],
                )
                rows = cur.fetchall()
                if len(rows) < min(k, readable):
                    strategy = "hnsw-iterative+exact-fallback"
            if strategy in ("exact", "hnsw-iterative+exact-fallback", "clustered+exact-fallback"):
                # OFFSET 0 fences the subquery so the planner cannot swap in the HNSW index.  The
                # halfvec copy lives in the covering (tenant, acl) index: an index-only scan, no heap
                # (recall@10 0.999 vs float; benchmarks/vector_filtered.py).
                exact_base = base.replace("c.embedding IS NOT NULL", "c.embedding_half IS NOT NULL")
                cur.execute(
                    f"""
                    SELECT id, dist FROM (
                        SELECT c.id, c.embedding_half <=> %s::halfvec AS dist FROM retrieval_chunk c
                        WHERE {exact_base} OFFSET 0
                    ) s ORDER BY dist, id LIMIT %s
                    """,
                    [vec, *base_params, k],
                )
                rows = cur.fetchall()
        hits = [LegHit(int(r[0]), 1.0 - float(r[1])) for r in rows]
        return LegResult(hits, strategy, {"vector": (time.perf_counter() - t0) * 1000})
