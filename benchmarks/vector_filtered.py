"""ACL-filtered vector search in Postgres: recall@10 and latency, strategy by strategy.

    source /tmp/cairn-<you>/env.bench   # from `python -m cairn.stack services --db bench`
    .venv/bin/python benchmarks/vector_filtered.py --rows 100000 --queries 200

The data reproduces the probe in ``../shared/PROBES.md``: random unit 384-d
vectors, 3 tenants, each row readable by one CNF set "any of 2 of 50 groups"
(1,225 sets per tenant); a user holds 2 groups, so a query's tenant + ACL filter
keeps ≈2.6 % of all rows ("selective").  A second scenario ("broad") reads every
set of the tenant (≈33 %), the case where an exact scan stops paying.

Ground truth is exact filtered cosine search in numpy over float32.  Every
strategy runs once to warm the cache, then ``--queries`` timed queries; we report
p50/p95/p99 and recall@10 side by side and write
``benchmarks/out/vector_filtered_<rows>.json`` and ``.png``.

Strategies (one SQL statement each, as the product would send it):
  hnsw_iterative       HNSW (vector_cosine_ops) + filter, hnsw.iterative_scan = relaxed_order
                       (the probe's 222 ms p95 path)
  exact_heap           bitmap on the (tenant, acl) btree keys -> heap -> sort by distance (the product's
                       exact path before the covering index)
  exact_cover_float    index-only scan of btree (tenant, acl) INCLUDE (id, embedding) -> sort
  exact_cover_half     the same over a halfvec(384) copy (half the bytes to read)
  hnsw_partial_half    per-tenant partial HNSW on halfvec + iterative scan
  adaptive             count readable rows on the covering index (capped), then exact_cover_half
                       when <= cap, else hnsw_iterative: what ``PostgresIndexBackend.vector`` does, with
                       the product's own cap and ef_search (``CAIRN_VECTOR_EXACT_SCAN_MAX_ROWS``,
                       ``CAIRN_HNSW_EF_SEARCH``, read from cairn/settings.py; ``--cap`` overrides)
  bq_rescore_<N>       binary-quantised first pass: hamming distance on binary_quantize(embedding)::bit(384)
                       (48 bytes a row) over a covering btree (tenant, acl) INCLUDE (id, emb_bits), the
                       N nearest candidates, then exact halfvec re-scoring of those N (e.g. bq_rescore_200)

Only the indexes the chosen strategies use are built (``--strategies``, ``--no-hnsw``, ``--no-partial``);
the JSON records each Postgres setting with its unit and in bytes.
"""

from __future__ import annotations

import argparse
import json
import os
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


def make_data(rows: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    vecs = rng.standard_normal((rows, DIM), dtype=np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    tenants = rng.integers(0, TENANTS, rows, dtype=np.int32)
    pairs = rng.integers(0, len(PAIRS), rows, dtype=np.int32)
    acls = (tenants * 10_000 + pairs).astype(np.int32)
    return vecs, tenants, acls


def make_queries(n: int, seed: int, scenario: str) -> list[tuple[np.ndarray, int, list[int]]]:
    rng = np.random.default_rng(seed + 1)
    out = []
    for _ in range(n):
        q = rng.standard_normal(DIM).astype(np.float32)
        q /= np.linalg.norm(q)
        tenant = int(rng.integers(0, TENANTS))
        if scenario == "broad":
            readable = [acl_id(tenant, i) for i in range(len(PAIRS))]
        else:
            held = set(rng.choice(GROUPS, 2, replace=False).tolist())
            readable = [acl_id(tenant, i) for i, (a, b) in enumerate(PAIRS) if a in held or b in held]
        out.append((q, tenant, readable))
    return out


def ground_truth(vecs: np.ndarray, tenants: np.ndarray, acls: np.ndarray,
                 queries: list[tuple[np.ndarray, int, list[int]]], k: int) -> tuple[list[list[int]], float]:  # fmt: skip
    truth, fractions = [], []
    for q, tenant, readable in queries:
        mask = (tenants == tenant) & np.isin(acls, np.asarray(readable, dtype=np.int32))
        idx = np.nonzero(mask)[0]
        fractions.append(len(idx) / len(vecs))
        d = 1.0 - vecs[idx] @ q
        order = np.argsort(d, kind="stable")[:k]
        truth.append([int(i) + 1 for i in idx[order]])  # ids are 1-based
    return truth, float(np.mean(fractions))


# Which index each strategy reads (exact_heap bitmap-scans the leading (tenant, acl) keys of a covering index).
NEEDS: dict[str, set[str]] = {
    "hnsw_iterative": {"hnsw"},
    "exact_heap": {"cover_half"},
    "exact_cover_float": {"cover_float"},
    "exact_cover_half": {"cover_half"},
    "hnsw_partial_half": {"hnsw_partial_half"},
    "adaptive": {"cover_half", "hnsw"},
}


def needs(strategy: str) -> set[str]:
    return {"cover_bits"} if strategy.startswith("bq_rescore_") else NEEDS[strategy]


def load(conn: psycopg.Connection, schema: str, vecs: np.ndarray, tenants: np.ndarray, acls: np.ndarray,
         indexes: set[str]) -> dict[str, float]:  # fmt: skip
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
                   f"WITH (m = 16, ef_construction = 64)"),
    ]  # fmt: skip
    steps = [st for st in steps if st[0].removesuffix("_s") in indexes]
    if "hnsw_partial_half" in indexes:
        for tenant in range(TENANTS):
            steps.append(
                (f"hnsw_partial_half_t{tenant}_s",
                 f"CREATE INDEX items_hnsw_half_t{tenant} ON {schema}.items USING hnsw (emb_half halfvec_cosine_ops) "
                 f"WITH (m = 16, ef_construction = 64) WHERE tenant_id = {tenant}")
            )  # fmt: skip
    conn.execute("SET maintenance_work_mem = '1GB'")
    for name, sql in steps:
        t0 = time.perf_counter()
        conn.execute(sql)
        t[name] = time.perf_counter() - t0
        print(f"  {name}: {t[name]:.1f}s", flush=True)
    t0 = time.perf_counter()
    conn.execute(f"VACUUM (ANALYZE) {schema}.items")  # visibility map: index-only scans need it
    t["vacuum_analyze_s"] = time.perf_counter() - t0
    return t


def vec_literal(q: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.7f}" for x in q) + "]"


def run_strategy(conn: psycopg.Connection, schema: str, name: str, q: np.ndarray, tenant: int,
                 readable: list[int], k: int, cap: int, ef_search: int = 100) -> tuple[list[int], str]:  # fmt: skip
    """One query, in its own transaction with SET LOCAL planner settings; returns (ids, plan tag)."""
    v = vec_literal(q)
    tag = name
    with conn.transaction(), conn.cursor() as cur:
        if name == "adaptive":
            cur.execute("SET LOCAL enable_bitmapscan = off")
            cur.execute(
                f"SELECT count(*) FROM (SELECT 1 FROM {schema}.items WHERE tenant_id = %s AND acl_set_id = ANY(%s) "
                f"LIMIT %s) s",
                [tenant, readable, cap + 1],
            )
            n = cur.fetchone()[0]
            name = "exact_cover_half" if n <= cap else "hnsw_iterative"
            tag = f"adaptive->{name}"
        if name == "hnsw_iterative":
            cur.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            cur.execute(f"SET LOCAL hnsw.ef_search = {int(ef_search)}")
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
        elif name == "exact_heap":
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
        else:
            raise ValueError(name)
        return [int(r[0]) for r in cur.fetchall()], tag


def explain(conn: psycopg.Connection, schema: str, name: str, q: np.ndarray, tenant: int, readable: list[int],
            k: int) -> str:  # fmt: skip
    """The plan's node types, to show which index each strategy really used."""
    if name == "adaptive":
        return "count on the covering index, then exact_cover_half or hnsw_iterative"
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
    ap.add_argument("--scenarios", default="selective,broad")
    args = ap.parse_args()
    if not args.dsn:
        print("set CAIRN_PG_SUPERUSER_URL (source /tmp/cairn-<you>/env.bench) or pass --dsn", file=sys.stderr)
        return 2
    product = product_settings()
    if args.cap is None:
        args.cap = product["VECTOR_EXACT_SCAN_MAX_ROWS"]
    schema = f"bench_vf_{args.rows}"
    strategies = [s for s in args.strategies.split(",") if s]
    if args.no_partial:
        strategies = [s for s in strategies if s != "hnsw_partial_half"]
    if args.no_hnsw:
        strategies = [s for s in strategies if not s.startswith("hnsw") and s != "adaptive"]
    indexes = set().union(*(needs(s) for s in strategies)) if strategies else set()
    vecs, tenants, acls = make_data(args.rows, args.seed)
    conn = psycopg.connect(args.dsn, autocommit=True)
    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    register_vector(conn)
    exists = conn.execute("SELECT to_regclass(%s)", [f"{schema}.items"]).fetchone()[0] is not None
    build: dict[str, float] = {}
    if not (args.reuse and exists):
        print(f"loading {args.rows} rows into {schema} ...", flush=True)
        build = load(conn, schema, vecs, tenants, acls, indexes)
    sizes = dict(
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
        "product_settings": product, "strategies": strategies, "indexes_built": sorted(indexes), "build": build,
        "sizes_bytes": sizes, "pg_settings": settings, "cpu_count": os.cpu_count(),
        "pg_version": conn.execute("SHOW server_version").fetchone()[0],
        "pgvector": conn.execute("SELECT extversion FROM pg_extension WHERE extname='vector'").fetchone()[0],
        "scenarios": {},
    }  # fmt: skip
    for scenario in [s for s in args.scenarios.split(",") if s]:
        queries = make_queries(args.queries, args.seed, scenario)
        truth, frac = ground_truth(vecs, tenants, acls, queries, args.k)
        print(f"\n== {scenario}: filter keeps {frac * 100:.2f} % of rows, {args.queries} queries, k={args.k}")
        print(f"{'strategy':22} {'recall@10':>9} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}  plan")
        sc: dict[str, Any] = {"filter_fraction": frac, "strategies": {}}
        for name in strategies:
            for q, tenant, readable in queries[: min(20, len(queries))]:  # warm the cache
                run_strategy(conn, schema, name, q, tenant, readable, args.k, args.cap, product["HNSW_EF_SEARCH"])
            lat, recalls, tags = [], [], set()
            for (q, tenant, readable), gt in zip(queries, truth, strict=True):
                t0 = time.perf_counter()
                ids, tag = run_strategy(
                    conn, schema, name, q, tenant, readable, args.k, args.cap, product["HNSW_EF_SEARCH"]
                )
                lat.append((time.perf_counter() - t0) * 1000)
                tags.add(tag)
                recalls.append(len(set(ids) & set(gt)) / max(1, len(gt)))
            q0, t0_, r0 = queries[0]
            row = {
                "recall_at_10": statistics.mean(recalls), "min_recall": min(recalls),
                "p50_ms": pct(lat, 50), "p95_ms": pct(lat, 95), "p99_ms": pct(lat, 99),
                "mean_ms": statistics.mean(lat), "paths": sorted(tags),
                "plan": explain(conn, schema, name, q0, t0_, r0, args.k),
            }  # fmt: skip
            sc["strategies"][name] = row
            print(f"{name:22} {row['recall_at_10']:9.3f} {row['p50_ms']:8.1f} {row['p95_ms']:8.1f} "
                  f"{row['p99_ms']:8.1f}  {','.join(row['paths'])}", flush=True)  # fmt: skip
        results["scenarios"][scenario] = sc
    OUT.mkdir(parents=True, exist_ok=True)
    stem = OUT / f"vector_filtered_{args.rows}"
    stem.with_suffix(".json").write_text(json.dumps(results, indent=2, default=str))
    plot(results, stem.with_suffix(".png"))
    print(f"\nwrote {stem}.json and {stem}.png")
    return 0


def plot(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scen = list(results["scenarios"])
    fig, axes = plt.subplots(1, len(scen), figsize=(6 * len(scen), 4.5), squeeze=False)
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
        ax.set_title(f"{s}: filter keeps {frac:.1f} % of {results['rows']:,} rows")
        ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    sys.exit(main())
