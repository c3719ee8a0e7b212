"""Ingest throughput and query latency per index backend at 100k and 1M chunks.

    source /tmp/cairn-<you>/env.bench          # python -m cairn.stack services --db bench
    .venv/bin/python benchmarks/ingest_and_query.py --chunks 100000 --embed-docs 40 --queries 100

The corpus is real prose: windows of consecutive sentences from BEIR SciFact and the 18F
handbook (../shared/data), so term frequencies follow a natural distribution (a 70-word
synthetic vocabulary puts every term in every chunk and makes BM25 look far worse than it is).
Each document is readable by "any of 2 of 50 groups"; queries are SciFact test claims.

1. Corpus to ``--chunks``: a bulk load, not the per-event path (that path embeds every chunk,
   ~17 passages/s on 2 cores: 16 h for 1M).  Documents are chunked by ``pipeline.prepare``,
   rows written in batches with random unit vectors, and the lexical index built by the
   pipeline's own ``_index_lexical`` per batch; the HNSW, GIN and posting-key indexes are
   dropped for the load and rebuilt after it, as any bulk load does.
2. OpenSearch copy: ``manage.py reindex_opensearch`` (the product's alias reindex: bulk copy,
   alias swap, outbox drain, consistency check) into osmem-server, or ``OPENSEARCH_URL``.
3. Ingest with embeddings at that index size, per backend: ``--embed-docs`` new documents
   through ``pipeline.apply_upsert`` with the real MiniLM embedder (docs/s, chunks/s, and the
   share spent embedding); for the OpenSearch backend the outbox drain is included.
4. Queries: ``--queries`` ``hybrid_search`` calls (lexical + vector + RRF + chunk load, k = 20)
   per backend for a user reading ≈7.8 % (2 of 50 groups) and one reading 100 %; p50/p95/p99.

Writes ``benchmarks/out/ingest_and_query_<chunks>.json`` and ``.png``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import sys
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from datetime import UTC, datetime
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cairn.settings")
OUT = ROOT / "benchmarks" / "out"
DATA = ROOT.parent / "shared" / "data"
GROUPS = [f"confluence:group:g{i}" for i in range(50)]
SEED = 11
SENTENCES: list[str] = []  # filled before the pool forks
_SPLIT = re.compile(r"(?<=[.!?])\s+")


def load_sentences() -> list[str]:
    out: list[str] = []
    for part in sorted((DATA / "beir_scifact").glob("corpus.part*.jsonl")):
        for line in part.open():
            d = json.loads(line)
            out += _SPLIT.split(f"{d['title'].rstrip('.')}. {d['text']}")
    for line in (DATA / "18f_handbook" / "pages_current.jsonl").open():
        text = re.sub(r"(?s)\A---.*?\n---\n", "", json.loads(line)["text"])  # front matter
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # [label](url) -> label
        text = re.sub(r"[#*`>|_]+", " ", text)
        out += _SPLIT.split(" ".join(text.split()))
    return [s for s in out if len(s) >= 30]


def doc_for(i: int) -> Any:
    from retrieval.contracts import SourceDocument

    rng = np.random.default_rng((SEED, i))
    n_words, start = int(rng.integers(300, 700)), int(rng.integers(0, len(SENTENCES)))
    sents: list[str] = []
    while n_words > 0:
        s = SENTENCES[(start + len(sents)) % len(SENTENCES)]
        sents.append(s)
        n_words -= len(s.split())
    # "any of 2 of 50 groups", as in benchmarks/vector_filtered.py: a 2-group user reads ≈7.8 % of the tenant.
    a, b = rng.choice(50, 2, replace=False)
    return SourceDocument(
        external_id=f"doc-{i}", title=" ".join(SENTENCES[start].split()[:8]), url=f"https://wiki.example.com/p/{i}",
        content=" ".join(sents).encode(), media_type="text/plain", acl=((GROUPS[a], GROUPS[b]),), source_version=1,
        container=f"SPACE{i % 7}", updated_at=datetime(2026, 1 + i % 12, 1 + i % 28, tzinfo=UTC),
    )  # fmt: skip


def prepared_for(i: int) -> Any:
    from retrieval import pipeline

    return pipeline.prepare(doc_for(i))


class TimedEmbedder:
    """The real embedder, with the time spent in it counted."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.seconds, self.passages = inner, 0.0, 0

    def embed(self, texts: list[str]) -> np.ndarray:
        t = time.perf_counter()
        out = self.inner.embed(texts)
        self.seconds += time.perf_counter() - t
        self.passages += len(texts)
        return out


def pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))] if s else 0.0


BULK_INDEXES = ("chunk_embedding_hnsw", "chunk_tsv_gin")


def drop_for_bulk(owner: Any) -> list[str]:
    """Drop the indexes a bulk load should build once at the end; returns the statements that rebuild them."""
    rebuild = []
    for name in BULK_INDEXES:
        row = owner.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", [name]).fetchone()
        if row:
            rebuild.append(row[0])
            owner.execute(f"DROP INDEX {name}")
    row = owner.execute("SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
                        "WHERE conrelid = 'retrieval_posting'::regclass AND contype = 'p'").fetchone()  # fmt: skip
    if row:
        rebuild.insert(0, f"ALTER TABLE retrieval_posting ADD CONSTRAINT {row[0]} {row[1]}")
        owner.execute(f"ALTER TABLE retrieval_posting DROP CONSTRAINT {row[0]}")
    return rebuild


def write_batch(source: Any, batch: list[Any], acl_ids: dict[Any, int], rng: np.random.Generator) -> int:
    """One batch of documents written as the pipeline writes one (rows, then ``_index_lexical``)."""
    from django.db import transaction
    from django.utils import timezone

    from retrieval import pipeline
    from retrieval.contracts import normalise_acl
    from retrieval.models import Chunk, Document
    from retrieval.permissions import get_index_state, intern_acl

    now = timezone.now()
    with transaction.atomic():
        # No FOR UPDATE: two writers load in parallel, and the counters below are F() increments.
        state = get_index_state()
        docs = []
        for p in batch:
            acl = normalise_acl(p.doc.acl)
            if acl not in acl_ids:
                acl_ids[acl] = intern_acl(acl).pk
            docs.append(Document(
                tenant_id=source.tenant_id, source=source, external_id=p.doc.external_id,
                **pipeline._doc_fields(source, p.doc), canonical_url=p.canonical_url,
                content_fingerprint=p.fingerprint, simhash=p.simhash, snapshot_sha256=p.snapshot_sha256,
                text=p.text, acl_set_id=acl_ids[acl], acl_observed_at=now, indexed_at=now,
            ))  # fmt: skip
        Document.objects.bulk_create(docs, batch_size=500)
        n = sum(len(p.chunks) for p in batch)
        vecs = rng.standard_normal((n, 384)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        chunks, k = [], 0
        for d, p in zip(docs, batch, strict=True):
            denorm = pipeline._chunk_denorm(d)
            for o, span in enumerate(p.chunks):
                chunks.append(Chunk(tenant_id=source.tenant_id, document=d, ord=o, text=span.text,
                                    heading=span.heading, char_start=span.start, char_end=span.end,
                                    embedding=vecs[k].tolist(), **denorm))  # fmt: skip
                k += 1
        Chunk.objects.bulk_create(chunks, batch_size=1000)
        pipeline._index_lexical([d.pk for d in docs], state)
        pipeline._bump_index(state)
    return n


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--embed-docs", type=int, default=40)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--batch-docs", type=int, default=500)
    ap.add_argument("--writers", type=int, default=2)
    ap.add_argument(
        "--queries-only",
        action="store_true",
        help="re-time step 4 on the last benchmark tenant and rewrite its JSON (after a retrieval change)",
    )
    ap.add_argument(
        "--backends",
        default="postgres,opensearch",
        help="comma-separated; osmem-server keeps everything in memory (about 30 MB per 1,000 chunks), "
        "so a 1M-chunk OpenSearch run needs a real cluster (OPENSEARCH_URL)",
    )
    ap.add_argument("--maintenance-work-mem", default="2GB", help="for the index rebuild after the bulk load")
    ap.add_argument(
        "--vector-strategies",
        type=int,
        default=50,
        metavar="N",
        help="N random query vectors through the Postgres vector leg, exact and HNSW forced (0: skip)",
    )
    args = ap.parse_args()

    import django

    django.setup()
    logging.getLogger("opensearch").setLevel(logging.WARNING)  # one INFO line per request otherwise
    SENTENCES[:] = load_sentences()
    # Forked before any database connection exists; the workers only chunk text.
    pool = ProcessPoolExecutor(max(1, (os.cpu_count() or 2)), mp_context=get_context("fork"))

    import psycopg
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connections

    from core.backends import embedder, get_backend
    from retrieval import outbox, pipeline
    from retrieval.actions import do_create_source, do_record_identity, do_set_group_members
    from retrieval.backends.base import SearchFilters
    from retrieval.permissions import permission_context
    from retrieval.search import hybrid_search
    from tenants.actions import do_add_member, do_create_tenant, do_create_user
    from tenants.context import tenant_context

    backends = set(args.backends.split(","))
    server = None
    os_url = os.environ.get("OPENSEARCH_URL", "")
    if not os_url and "opensearch" in backends:
        from osmem_server import OsmemServer

        server = OsmemServer.start(japanese=False)
        os_url = server.url
    composite = {**settings.CAIRN, "INDEX_BACKEND": "retrieval.backends.composite.CompositeIndexBackend",
                 "OPENSEARCH_URL": os_url, "OPENSEARCH_REPLICAS": 0, "OPENSEARCH_TIMEOUT": 60,
                 "OPENSEARCH_INDEX_PREFIX": f"cairn-bench-{int(time.time())}"}  # fmt: skip
    postgres = {**settings.CAIRN, "INDEX_BACKEND": "retrieval.backends.postgres.PostgresIndexBackend"}

    def use(conf: dict[str, Any]) -> None:
        settings.CAIRN = conf
        get_backend.cache_clear()
        outbox._uses_outbox.cache_clear()

    def time_queries() -> None:
        """4. Query latency per backend and user."""
        results["vector_exact_scan_max_rows"] = settings.CAIRN["VECTOR_EXACT_SCAN_MAX_ROWS"]
        claims = [json.loads(line)["text"] for line in (DATA / "beir_scifact" / "queries.jsonl").open()]
        rng = np.random.default_rng(SEED)  # the same queries in every run
        queries = [claims[int(j)] for j in rng.choice(len(claims), args.queries, replace=False)]
        for backend_name, conf in (("postgres", postgres), ("opensearch+pgvector", composite)):
            if backend_name.split("+")[0] not in backends:
                continue
            use(conf)
            for uname, user in users.items():
                with tenant_context(tenant.pk):
                    perm = permission_context(user)
                lat, legs = [], {}
                for q in queries[:10]:
                    with tenant_context(tenant.pk):
                        hybrid_search(perm, [q], SearchFilters(), k=20)
                for q in queries:
                    with tenant_context(tenant.pk):
                        t = time.perf_counter()
                        out = hybrid_search(perm, [q], SearchFilters(), k=20)
                        lat.append((time.perf_counter() - t) * 1000)
                    for name, leg in out.legs.items():
                        legs.setdefault(f"{name}:{leg['strategy']}", []).append(leg.get(name.split(":")[0], 0.0))
                row = {"p50_ms": pct(lat, 50), "p95_ms": pct(lat, 95), "p99_ms": pct(lat, 99),
                       "legs_p50_ms": {k: pct(v, 50) for k, v in legs.items()},
                       "legs_p95_ms": {k: pct(v, 95) for k, v in legs.items()}}  # fmt: skip
                results["query"][f"{backend_name}/{uname}"] = row
                print(f"{backend_name:22} {uname:7} p50 {row['p50_ms']:7.1f}  p95 {row['p95_ms']:7.1f}  "
                      f"p99 {row['p99_ms']:7.1f} ms   legs p50 {row['legs_p50_ms']}", flush=True)  # fmt: skip

    def compare_vector_strategies(n: int) -> None:
        """The Postgres vector leg with the exact scan forced and with HNSW forced: latency and recall@10."""
        from retrieval.backends.postgres import PostgresIndexBackend

        be, saved = PostgresIndexBackend(), settings.CAIRN
        qv = np.random.default_rng((SEED, 384)).standard_normal((n, 384)).astype(np.float32)
        qv /= np.linalg.norm(qv, axis=1, keepdims=True)
        out: dict[str, Any] = {}
        for uname, user in users.items():
            with tenant_context(tenant.pk):
                ids = permission_context(user).readable_acl_set_ids
            tops: dict[str, list[set[int]]] = {}
            for strategy, cap in (("exact", 10**9), ("hnsw", 0)):
                settings.CAIRN = {**saved, "VECTOR_EXACT_SCAN_MAX_ROWS": cap}
                lat = []
                for j, q in enumerate(np.concatenate([qv[:3], qv])):
                    with tenant_context(tenant.pk):
                        t = time.perf_counter()
                        hits = be.vector(tenant.pk, ids, q, SearchFilters(), 10).hits
                        if j >= 3:
                            lat.append((time.perf_counter() - t) * 1000)
                            tops.setdefault(strategy, []).append({h.chunk_id for h in hits})
                out[f"{uname}/{strategy}"] = {"p50_ms": pct(lat, 50), "p95_ms": pct(lat, 95)}
            settings.CAIRN = saved
            with tenant_context(tenant.pk):
                readable = be.count_readable(tenant.pk, ids, SearchFilters(), 10**9)
            out[f"{uname}/hnsw"]["recall_at_10"] = float(np.mean([len(a & b) / 10 for a, b in
                                                                  zip(tops["hnsw"], tops["exact"], strict=True)]))  # fmt: skip
            out[f"{uname}/readable_rows"] = readable
            print(f"vector leg, {uname} ({readable:,} readable rows): exact p50 {out[f'{uname}/exact']['p50_ms']:.1f} "
                  f"p95 {out[f'{uname}/exact']['p95_ms']:.1f} ms; hnsw p50 {out[f'{uname}/hnsw']['p50_ms']:.1f} "
                  f"p95 {out[f'{uname}/hnsw']['p95_ms']:.1f} ms, recall@10 {out[f'{uname}/hnsw']['recall_at_10']:.3f}",
                  flush=True)  # fmt: skip
        results["vector_strategies"] = {"queries": n, "query_vectors": "random unit", **out}

    if args.queries_only:
        # Re-time the queries on the last loaded benchmark tenant (after a retrieval change).
        from django.contrib.auth import get_user_model

        from tenants.models import Tenant

        tenant = Tenant.objects.filter(slug__startswith="bench-").order_by("-id").first()
        users = {n: get_user_model().objects.filter(username__startswith=f"{n}-").order_by("-id").first()
                 for n in ("narrow", "wide")}  # fmt: skip
        stem = OUT / f"ingest_and_query_{args.chunks}"
        results = json.loads(stem.with_suffix(".json").read_text())
        results["query_previous"] = results["query"]
        # Entries of backends not re-timed now are kept.
        results["query"] = {k: v for k, v in results["query"].items() if k.split("/")[0].split("+")[0] not in backends}
        results["queries_retimed_at"] = datetime.now(UTC).isoformat()
        time_queries()
        if args.vector_strategies and "postgres" in backends:
            compare_vector_strategies(args.vector_strategies)
        stem.with_suffix(".json").write_text(json.dumps(results, indent=2, default=str))
        plot(results, stem.with_suffix(".png"))
        plot_sizes(OUT / "ingest_and_query_by_size.png")
        print(f"rewrote {stem}.json and .png")
        return 0

    stamp = int(time.time())
    tenant = do_create_tenant(f"bench-{stamp}", "Benchmark")
    users = {}
    for name in ("narrow", "wide"):
        u = do_create_user(f"{name}-{stamp}", f"{name}-{stamp}@example.com", "pw", email_verified=True)
        do_add_member(tenant, u, role="member")
        users[name] = u
    with tenant_context(tenant.pk):
        source = do_create_source("confluence", "wiki")
        principals = {}
        for name, user in users.items():
            principals[name] = f"confluence:user:{user.username}"
            do_record_identity(principals[name], email=user.email, email_verified=True, display_name=user.username)
        # narrow holds 2 of the 50 groups (reads ≈7.8 % of the corpus), wide holds all of them.
        for g, group in enumerate(GROUPS):
            do_set_group_members(group, [principals["wide"], *([principals["narrow"]] if g < 2 else [])])

    results: dict[str, Any] = {
        "chunks_target": args.chunks, "cpu_count": os.cpu_count(), "loadavg_start": os.getloadavg(),
        "opensearch": "not run" if "opensearch" not in backends else "osmem-server (in-memory)" if server else os_url,
        "corpus": "windows of BEIR SciFact + 18F handbook sentences", "bulk_load": {}, "ingest": {}, "query": {},
    }  # fmt: skip

    # 1. Corpus by bulk load (Postgres rows + lexical index; the OpenSearch copy follows).
    owner = psycopg.connect(os.environ["DATABASE_OWNER_URL"], autocommit=True)
    dbname = owner.execute("SELECT current_database()").fetchone()[0]
    if "bench" not in dbname:
        # The load drops and rebuilds the search indexes: never on a database that serves users.
        raise SystemExit(f"refusing to bulk-load into {dbname!r}: use a benchmark database (services --db bench)")
    rebuild = drop_for_bulk(owner)
    # Interned up front: interning bumps the tenant's ACL version (a row lock the two writers would
    # otherwise take in different orders than the term statistics).
    from retrieval.contracts import normalise_acl
    from retrieval.permissions import intern_acl

    acl_ids: dict[Any, int] = {}
    with tenant_context(tenant.pk):
        for a in range(50):
            for b in range(a + 1, 50):
                acl = normalise_acl(((GROUPS[a], GROUPS[b]),))
                acl_ids[acl] = intern_acl(acl).pk

    def write_job(batch: list[Any], seed: int) -> int:
        try:
            with tenant_context(tenant.pk):
                return write_batch(source, batch, acl_ids, np.random.default_rng((SEED, seed)))
        finally:
            connections.close_all()  # this thread's connection

    try:
        # Two writer connections: a batch is mostly Postgres work (tsvector, postings), one core each.
        writers = ThreadPoolExecutor(args.writers)
        inflight: list[Any] = []
        t0 = time.perf_counter()
        n_chunks = n_docs = 0
        planned = 0
        while planned < args.chunks:
            want = min(args.batch_docs, max(20, int((args.chunks - planned) / 2.8) + 1))
            batch = list(pool.map(prepared_for, range(n_docs, n_docs + want), chunksize=25))
            planned += sum(len(p.chunks) for p in batch)
            inflight.append(writers.submit(write_job, batch, n_docs))
            n_docs += want
            while len(inflight) > args.writers or (planned >= args.chunks and inflight):
                n_chunks += inflight.pop(0).result()
                el = time.perf_counter() - t0
                print(f"\r  bulk load {n_chunks:,}/{args.chunks:,} chunks, {n_chunks / el:,.0f} chunks/s",
                      end="", flush=True)  # fmt: skip
        writers.shutdown()
    finally:
        # Rebuilt even when the load fails: a later run must not find the tables without them.
        owner.execute(f"SET maintenance_work_mem = '{args.maintenance_work_mem}'")
        index_s = {}
        for stmt in rebuild:
            t = time.perf_counter()
            owner.execute(stmt)
            name = stmt.split(" ON ")[0].split()[-1] if stmt.startswith("CREATE") else "retrieval_posting_pkey"
            index_s[name] = time.perf_counter() - t
            print(f"\n  rebuilt {name} in {index_s[name]:.0f}s", end="", flush=True)
        pool.shutdown()
    t_rows = time.perf_counter() - t0 - sum(index_s.values())
    print()
    t = time.perf_counter()
    owner.execute("VACUUM (ANALYZE) retrieval_chunk, retrieval_posting, retrieval_termstat, retrieval_document")
    vacuum_s = time.perf_counter() - t
    sizes = dict(owner.execute(
        "SELECT relname, pg_total_relation_size(oid) FROM pg_class WHERE relname IN "
        "('retrieval_chunk', 'retrieval_posting', 'retrieval_document', 'retrieval_termstat')").fetchall())  # fmt: skip
    postings = owner.execute("SELECT reltuples::bigint FROM pg_class WHERE relname = 'retrieval_posting'").fetchone()[0]
    results["bulk_load"] = {
        "docs": n_docs, "chunks": n_chunks, "postings": postings, "rows_and_lexical_seconds": t_rows,
        "index_rebuild_seconds": index_s, "vacuum_analyze_seconds": vacuum_s,
        "chunks_per_s_rows": n_chunks / t_rows,
        "chunks_per_s_total": n_chunks / (t_rows + sum(index_s.values()) + vacuum_s),
        "table_bytes": sizes,
    }  # fmt: skip
    print(f"bulk load: {n_docs:,} docs / {n_chunks:,} chunks / {postings:,} postings; rows {t_rows:.0f}s, "
          f"indexes {sum(index_s.values()):.0f}s, vacuum {vacuum_s:.0f}s; "
          f"{sum(sizes.values()) / 2**30:.1f} GiB", flush=True)  # fmt: skip

    # 2. OpenSearch copy through the product's alias reindex.
    if "opensearch" in backends:
        use(composite)
        t = time.perf_counter()
        call_command("reindex_opensearch", tenant=[tenant.pk], batch=1000)
        reindex_s = time.perf_counter() - t
        results["bulk_load"]["opensearch_reindex_seconds"] = reindex_s
        results["bulk_load"]["opensearch_reindex_chunks_per_s"] = n_chunks / reindex_s
        print(f"reindex_opensearch: {n_chunks / reindex_s:,.0f} chunks/s ({reindex_s:.0f}s)", flush=True)

    # 3. Ingest with real embeddings at this index size, per backend.
    emb = TimedEmbedder(embedder())
    emb.embed(["warm up"])
    next_doc = n_docs
    for backend_name, conf in (("postgres", postgres), ("opensearch", composite)):
        if backend_name not in backends:
            continue
        use(conf)
        emb.seconds, emb.passages = 0.0, 0
        t = time.perf_counter()
        for _ in range(args.embed_docs):
            with tenant_context(tenant.pk):
                pipeline.apply_upsert(source, doc_for(next_doc), emb)
            next_doc += 1
        t_ingest = time.perf_counter() - t
        t = time.perf_counter()
        drained = outbox.drain_all(tenant.pk) if backend_name == "opensearch" else 0
        t_drain = time.perf_counter() - t
        row = {
            "docs": args.embed_docs, "chunks": emb.passages, "seconds": t_ingest + t_drain,
            "embedding_seconds": emb.seconds, "write_seconds": t_ingest - emb.seconds,
            "outbox_drain_seconds": t_drain, "outbox_rows_drained": drained,
            "docs_per_s": args.embed_docs / (t_ingest + t_drain), "chunks_per_s": emb.passages / (t_ingest + t_drain),
            "write_ms_per_doc": (t_ingest - emb.seconds) * 1000 / args.embed_docs,
        }  # fmt: skip
        results["ingest"][backend_name] = row
        print(f"ingest ({backend_name}): {row['docs_per_s']:.2f} docs/s, {row['chunks_per_s']:.1f} chunks/s; "
              f"embedding {emb.seconds:.1f}s of {row['seconds']:.1f}s, write {row['write_ms_per_doc']:.0f} ms/doc, "
              f"drain {t_drain:.2f}s", flush=True)  # fmt: skip

    time_queries()
    if args.vector_strategies and "postgres" in backends:
        compare_vector_strategies(args.vector_strategies)
    results["chunks"] = n_chunks
    results["loadavg_end"] = os.getloadavg()
    OUT.mkdir(parents=True, exist_ok=True)
    stem = OUT / f"ingest_and_query_{args.chunks}"
    stem.with_suffix(".json").write_text(json.dumps(results, indent=2, default=str))
    plot(results, stem.with_suffix(".png"))
    plot_sizes(OUT / "ingest_and_query_by_size.png")
    print(f"wrote {stem}.json, {stem}.png and {OUT / 'ingest_and_query_by_size.png'}")
    if server:
        server.close()
    return 0


def plot(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(13, 4.8))
    names = list(results["query"])
    y = np.arange(len(names))
    for key, color in (("p99_ms", "#a33"), ("p95_ms", "#d77"), ("p50_ms", "#58c")):
        a1.barh(y, [results["query"][n][key] for n in names], color=color, label=key.replace("_ms", ""))
    a1.set_yticks(y, names)
    a1.set_xscale("log")
    a1.set_xlabel("hybrid_search latency, ms (log)")
    a1.set_title(f"query latency at {results['chunks']:,} chunks")
    a1.legend()
    ing, bulk = results["ingest"], results["bulk_load"]
    labels = ["postgres\nwith embeddings", "opensearch\nwith embeddings\n(incl. outbox drain)",
              "bulk load\n(random vectors)", "reindex_opensearch\ncopy"]  # fmt: skip
    vals = [ing.get("postgres", {}).get("chunks_per_s", 0), ing.get("opensearch", {}).get("chunks_per_s", 0),
            bulk["chunks_per_s_total"], bulk.get("opensearch_reindex_chunks_per_s", 0)]  # fmt: skip
    a2.bar(labels, vals, color=["#58c", "#c95", "#8a5", "#999"])
    a2.set_yscale("log")
    a2.set_title("ingest throughput, chunks/s (log)")
    for i, v in enumerate(vals):
        a2.text(i, v, f"{v:,.1f}", ha="center", va="bottom")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def plot_sizes(path: Path) -> None:
    """p95 latency and ingest rate against corpus size, from every run's JSON in benchmarks/out."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = []
    for f in OUT.glob("ingest_and_query_*.json"):
        r = json.loads(f.read_text())
        if "bulk_load" in r:
            runs.append(r)
    runs.sort(key=lambda r: r["chunks"])
    if not runs:
        return
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 4.5))
    xs = [r["chunks"] for r in runs]
    for name in sorted({n for r in runs for n in r["query"]}):
        a1.plot(xs, [r["query"].get(name, {}).get("p95_ms", np.nan) for r in runs], "o-", label=name)
    a1.set_xscale("log")
    a1.set_yscale("log")
    a1.set_xlabel("chunks")
    a1.set_ylabel("p95 ms")
    a1.set_title("hybrid_search p95 by corpus size")
    a1.legend(fontsize=8)
    for name in ("postgres", "opensearch"):
        a2.plot(
            xs,
            [r["ingest"].get(name, {}).get("chunks_per_s", np.nan) for r in runs],
            "o-",
            label=f"{name}, with embeddings",
        )
    a2.set_xscale("log")
    a2.set_xlabel("chunks already indexed")
    a2.set_ylabel("chunks/s")
    a2.set_ylim(bottom=0)
    a2.set_title("ingest rate by index size")
    a2.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    sys.exit(main())
