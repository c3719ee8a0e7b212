"""Ingest throughput and query latency per index backend, through the real pipeline.

    source /tmp/cairn-<you>/env.bench          # python -m cairn.stack services --db bench
    .venv/bin/python benchmarks/ingest_and_query.py --chunks 20000 --embed-docs 60

1. Ingest with embeddings: ``--embed-docs`` synthetic documents go through
   ``pipeline.apply_upsert`` with the real MiniLM embedder (docs/s, chunks/s).
2. Corpus for latency: documents until ``--chunks`` chunks exist, written by the
   same pipeline write path (``_write_document``: chunks, postings, term stats,
   index outbox) with random unit vectors instead of the embedder -- embedding
   100k chunks on 2 cores takes over an hour (PROBES.md: ~17 passages/s), and
   only the write and query paths are under test here.  The outbox is drained
   into OpenSearch (osmem-server unless OPENSEARCH_URL is set; osmem is an
   in-memory test server, so its numbers are not a real cluster's).
3. Queries: ``--queries`` searches (hybrid_search: lexical + vector + RRF + load)
   for users reading ≈7.8 % (2 of 50 groups) and 100 % of the corpus, per backend; p50/p95/p99.

Writes ``benchmarks/out/ingest_and_query_<chunks>.json`` and ``.png``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cairn.settings")
OUT = ROOT / "benchmarks" / "out"

WORDS = ("deploy release budget review incident postmortem badge access laptop encryption travel expense hiring "
         "feedback database backup restore cluster upgrade network firewall policy vendor contract invoice payroll "
         "onboarding checklist security audit compliance retention archive quarterly forecast roadmap milestone "
         "customer escalation support ticket outage latency capacity storage kubernetes certificate rotation").split()  # fmt: skip
GROUPS = [f"confluence:group:g{i}" for i in range(50)]


def text_for(rng: np.random.Generator, n_words: int) -> str:
    sents = []
    while n_words > 0:
        k = int(rng.integers(8, 18))
        sents.append(" ".join(rng.choice(WORDS, k)).capitalize() + ".")
        n_words -= k
    return " ".join(sents)


def doc_for(i: int, rng: np.random.Generator) -> Any:
    from retrieval.contracts import SourceDocument

    # "any of 2 of 50 groups", as in benchmarks/vector_filtered.py: a 2-group user reads ≈7.8 % of the tenant.
    a, b = rng.choice(50, 2, replace=False)
    return SourceDocument(
        external_id=f"doc-{i}", title=f"Page {i} {rng.choice(WORDS)}", url=f"https://wiki.example.com/p/{i}",
        content=text_for(rng, int(rng.integers(300, 700))).encode(), media_type="text/plain",
        acl=((GROUPS[a], GROUPS[b]),), source_version=1, container=f"SPACE{i % 7}",
        updated_at=datetime(2026, 1 + i % 12, 1 + i % 28, tzinfo=UTC),
    )  # fmt: skip


def pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))] if s else 0.0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chunks", type=int, default=20_000)
    ap.add_argument("--embed-docs", type=int, default=60)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--seed", type=int, default=11)
    args = ap.parse_args()

    import django

    django.setup()
    from django.conf import settings

    from cairn.backends import embedder, get_backend
    from retrieval import outbox, pipeline
    from retrieval.actions import do_create_source, do_record_identity, do_set_group_members
    from retrieval.backends.base import SearchFilters
    from retrieval.contracts import normalise_acl
    from retrieval.models import Chunk
    from retrieval.permissions import permission_context
    from retrieval.search import hybrid_search
    from tenants.actions import do_add_member, do_create_tenant, do_create_user
    from tenants.context import tenant_context

    server = None
    os_url = os.environ.get("OPENSEARCH_URL", "")
    if not os_url:
        from osmem_server import OsmemServer

        server = OsmemServer.start(japanese=False)
        os_url = server.url
    composite = {**settings.CAIRN, "INDEX_BACKEND": "retrieval.backends.composite.CompositeIndexBackend",
                 "OPENSEARCH_URL": os_url, "OPENSEARCH_REPLICAS": 0, "OPENSEARCH_TIMEOUT": 30,
                 "OPENSEARCH_INDEX_PREFIX": f"cairn-bench-{int(time.time())}"}  # fmt: skip
    postgres = {**settings.CAIRN, "INDEX_BACKEND": "retrieval.backends.postgres.PostgresIndexBackend"}

    def use(conf: dict[str, Any]) -> None:
        settings.CAIRN = conf
        get_backend.cache_clear()
        outbox._uses_outbox.cache_clear()

    rng = np.random.default_rng(args.seed)
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

    results: dict[str, Any] = {"chunks_target": args.chunks, "cpu_count": os.cpu_count(), "opensearch": os_url if not
                               server else f"osmem-server {server.version}", "ingest": {}, "query": {}}  # fmt: skip
    use(composite)
    # 1. Ingest with real embeddings (the OpenSearch configuration: outbox rows written and drained too).
    emb = embedder()
    emb.embed(["warm up"])
    t0 = time.perf_counter()
    n_chunks = 0
    for i in range(args.embed_docs):
        doc = doc_for(i, rng)
        with tenant_context(tenant.pk):
            pipeline.apply_upsert(source, doc, emb)
    t_embed = time.perf_counter() - t0
    with tenant_context(tenant.pk):
        n_chunks = Chunk.objects.count()
    t1 = time.perf_counter()
    outbox.drain_all(tenant.pk)
    t_drain = time.perf_counter() - t1
    results["ingest"]["with_embeddings"] = {
        "docs": args.embed_docs, "chunks": n_chunks, "seconds": t_embed,
        "docs_per_s": args.embed_docs / t_embed, "chunks_per_s": n_chunks / t_embed,
        "outbox_drain_chunks_per_s": n_chunks / t_drain if t_drain else None,
    }  # fmt: skip
    print(f"ingest with embeddings: {args.embed_docs} docs / {n_chunks} chunks in {t_embed:.1f}s = "
          f"{args.embed_docs / t_embed:.2f} docs/s, {n_chunks / t_embed:.1f} chunks/s; "
          f"outbox drain {n_chunks / max(t_drain, 1e-9):.0f} chunks/s", flush=True)  # fmt: skip

    # 2. Corpus up to --chunks through the pipeline's write path, random vectors instead of the embedder.
    t0 = time.perf_counter()
    i = args.embed_docs
    written_docs = 0
    drain_s = 0.0
    while n_chunks < args.chunks:
        prepared = pipeline.prepare(doc_for(i, rng))
        vecs = rng.standard_normal((len(prepared.chunks), 384)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        with tenant_context(tenant.pk):
            pipeline._write_document(source, prepared, normalise_acl(prepared.doc.acl), vecs)
        n_chunks += len(prepared.chunks)
        written_docs += 1
        i += 1
        if written_docs % 200 == 0:
            td = time.perf_counter()
            outbox.drain_all(tenant.pk)
            drain_s += time.perf_counter() - td
            el = time.perf_counter() - t0
            print(f"\r  corpus {n_chunks}/{args.chunks} chunks, {written_docs / el:.1f} docs/s", end="", flush=True)
    td = time.perf_counter()
    outbox.drain_all(tenant.pk)
    drain_s += time.perf_counter() - td
    t_write = time.perf_counter() - t0
    print()
    results["ingest"]["write_path_without_embedding"] = {
        "docs": written_docs, "chunks": n_chunks, "seconds_total": t_write, "seconds_opensearch_drain": drain_s,
        "docs_per_s": written_docs / t_write, "chunks_per_s": (n_chunks - results["ingest"]["with_embeddings"]["chunks"])
        / t_write,
    }  # fmt: skip
    with tenant_context(tenant.pk):
        from django.db import connection

        with connection.cursor() as cur:
            cur.execute("ANALYZE retrieval_chunk; ANALYZE retrieval_posting")

    # 3. Query latency per backend and user.
    queries = [" ".join(rng.choice(WORDS, int(rng.integers(2, 5)))) for _ in range(args.queries)]
    for backend_name, conf in (("postgres", postgres), ("opensearch+pgvector", composite)):
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
                   "legs_p50_ms": {k: pct(v, 50) for k, v in legs.items()}}  # fmt: skip
            results["query"][f"{backend_name}/{uname}"] = row
            print(f"{backend_name:22} {uname:7} p50 {row['p50_ms']:7.1f}  p95 {row['p95_ms']:7.1f}  "
                  f"p99 {row['p99_ms']:7.1f} ms   legs {row['legs_p50_ms']}", flush=True)  # fmt: skip
    results["chunks"] = n_chunks
    OUT.mkdir(parents=True, exist_ok=True)
    stem = OUT / f"ingest_and_query_{args.chunks}"
    stem.with_suffix(".json").write_text(json.dumps(results, indent=2, default=str))
    plot(results, stem.with_suffix(".png"))
    print(f"wrote {stem}.json and {stem}.png")
    if server:
        server.close()
    return 0


def plot(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 4.5))
    names = list(results["query"])
    y = np.arange(len(names))
    for key, color in (("p99_ms", "#a33"), ("p95_ms", "#d77"), ("p50_ms", "#58c")):
        a1.barh(y, [results["query"][n][key] for n in names], color=color, label=key.replace("_ms", ""))
    a1.set_yticks(y, names)
    a1.set_xlabel("hybrid_search latency, ms")
    a1.set_title(f"query latency at {results['chunks']:,} chunks")
    a1.legend()
    ing = results["ingest"]
    labels = ["with embeddings\n(chunks/s)", "write path only\n(chunks/s)", "outbox drain\n(chunks/s)"]
    vals = [ing["with_embeddings"]["chunks_per_s"], ing["write_path_without_embedding"]["chunks_per_s"],
            ing["with_embeddings"]["outbox_drain_chunks_per_s"] or 0]  # fmt: skip
    a2.bar(labels, vals, color=["#58c", "#8a5", "#c95"])
    a2.set_yscale("log")
    a2.set_title("ingest throughput (log)")
    for i, v in enumerate(vals):
        a2.text(i, v, f"{v:,.1f}", ha="center", va="bottom")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    sys.exit(main())
