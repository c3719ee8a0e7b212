"""Retrieval quality on BEIR SciFact: lexical leg, vector leg, hybrid RRF, hybrid + rerank.

Every system runs through the product path (``hybrid_search`` with the evaluation tenant's
permission context, then the configured reranker); a reference BM25 (``bm25s``, Lucene
parameters k1 0.9 b 0.4, English stopwords + Snowball, title + text, in memory) runs on the same
corpus in the same run.  Document-level scoring: a document's score is its best chunk's.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, cast

from tqdm import tqdm

from answers.rerank import _zscores, reranker, with_depth
from evaluation import metrics
from evaluation.corpora import scifact_documents
from evaluation.datasets import RetrievalSet, load_scifact
from evaluation.report import SuiteResult, table
from evaluation.tenancy import ensure_eval_tenant
from retrieval.backends.base import SearchFilters
from retrieval.models import Document
from retrieval.search import hybrid_search
from tenants.context import tenant_context

if TYPE_CHECKING:
    import numpy as np

PUBLISHED = {
    "BM25 flat (Pyserini 2CR)": (0.6789, 0.9253),
    "BM25 multifield (Pyserini 2CR)": (0.6647, 0.9076),
    "SPLADE++ ED": (0.7041, 0.9353),
    "BGE-small-en-v1.5": (0.71273, 0.945),
    "BGE-base-en-v1.5": (0.7408, 0.9667),
    "all-MiniLM-L6-v2 (MTEB, quoted)": (0.6451, None),
}


def reference_bm25(rs: RetrievalSet, k: int = 100) -> dict[str, list[str]]:
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    ids = [d.doc_id for d in rs.corpus]
    texts = [f"{d.title} {d.text}" for d in rs.corpus]
    retriever = bm25s.BM25(k1=0.9, b=0.4, method="lucene")
    retriever.index(bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False), show_progress=False)
    qids = list(rs.queries)
    qtok = bm25s.tokenize([rs.queries[q] for q in qids], stopwords="en", stemmer=stemmer, show_progress=False)
    res, _ = retriever.retrieve(qtok, k=min(k, len(ids)), show_progress=False)
    return {q: [ids[j] for j in res[i]] for i, q in enumerate(qids)}


def evaluate_runs(runs: dict[str, dict[str, list[str]]], qrels: dict[str, dict[str, int]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, run in runs.items():
        nd = [metrics.ndcg_at_k(run.get(q, []), qrels[q], 10) for q in qrels]
        rc = [metrics.recall_at_k(run.get(q, []), qrels[q], 100) for q in qrels]
        out[name] = {"ndcg@10": metrics.mean(nd), "recall@100": metrics.mean(rc), "queries": len(nd)}
    return out


def run(limit: int | None = None, progress: bool = True, depth: int | None = None, fresh: bool = False,
        **_: Any) -> SuiteResult:  # fmt: skip

    started = datetime.now(UTC).isoformat(timespec="seconds")
    t_start = time.perf_counter()
    rs = load_scifact(limit)
    slug = f"eval-scifact-{rs.digest}" + (f"-{int(time.time())}" if fresh else "")
    et = ensure_eval_tenant(slug, scifact_documents(rs), progress=progress)
    perm = et.perm()
    with tenant_context(et.tenant.pk):
        doc_map = {pk: ext.split(":", 1)[1] for pk, ext in Document.objects.values_list("id", "external_id")}
    rr = reranker()
    if depth:
        rr = with_depth(rr, depth)
    runs: dict[str, dict[str, list[str]]] = {k: {} for k in ("lexical", "vector", "hybrid_rrf", "hybrid_rerank")}
    timings: dict[str, list[float]] = {k: [] for k in runs}
    signals_sample: dict[str, Any] = {}
    for qid, query in tqdm(rs.queries.items(), desc="scifact queries", disable=not progress):
        for name, kw in (("lexical", {"use_vector": False}), ("vector", {"use_lexical": False}), ("hybrid_rrf", {})):
            t0 = time.perf_counter()
            with tenant_context(et.tenant.pk):
                out = hybrid_search(perm, [query], SearchFilters(), k=200, leg_k=200, **kw)
            timings[name].append((time.perf_counter() - t0) * 1000)
            runs[name][qid] = metrics.doc_ranking_from_chunks([doc_map[c.document_id] for c in out.chunks])
            if name == "hybrid_rrf":
                t0 = time.perf_counter()
                with tenant_context(et.tenant.pk):
                    ro = rr.rerank(query, None, out.chunks, top_n=rr.depth)
                timings["hybrid_rerank"].append(timings["hybrid_rrf"][-1] + (time.perf_counter() - t0) * 1000)
                runs["hybrid_rerank"][qid] = metrics.doc_ranking_from_chunks(
                    [doc_map[c.document_id] for c in ro.chunks]
                )
                _ablations(runs, qid, out.chunks, ro, doc_map)
                if not signals_sample and ro.chunks:
                    top = ro.chunks[0]
                    signals_sample = {
                        "query": query,
                        "top_chunk": top.chunk_id,
                        "signals": ro.signals.get(top.chunk_id),
                    }
    t0 = time.perf_counter()
    runs["reference_bm25s"] = reference_bm25(rs)
    ref_seconds = time.perf_counter() - t0
    scores = evaluate_runs(runs, rs.qrels)
    for name, ts in timings.items():
        scores[name]["p50_ms"] = metrics.percentile(ts, 50)
        scores[name]["p95_ms"] = metrics.percentile(ts, 95)
    scores["reference_bm25s"]["total_seconds"] = ref_seconds
    gap = scores["lexical"]["ndcg@10"] - scores["reference_bm25s"]["ndcg@10"]
    full = scores["hybrid_rerank"]["ndcg@10"]
    metrics_out = {
        "systems": scores,
        "published": {k: {"ndcg@10": v[0], "recall@100": v[1]} for k, v in PUBLISHED.items()},
        "lexical_minus_reference_ndcg@10": gap,
        "goals": {
            "lexical_within_0.01_of_reference": abs(gap) <= 0.01 or gap > 0,
            "full_pipeline_at_least_0.72": full >= 0.72,
        },
        "corpus": {"documents": et.documents, "chunks": et.chunks, "queries": len(rs.queries), "digest": rs.digest,
                   "ingest_seconds_this_run": round(et.ingest_seconds, 1), "ingested_this_run": et.ingested_now},
        "reranker": {"name": rr.name, "version": rr.version, "depth": rr.depth},
        "limit": limit,
    }  # fmt: skip
    rows = [[n, s["ndcg@10"], s["recall@100"], f"{s.get('p50_ms', 0):.0f} / {s.get('p95_ms', 0):.0f}"]
            for n, s in scores.items()]  # fmt: skip
    rows += [[f"published: {k}", v[0], v[1] if v[1] is not None else "–", "–"] for k, v in PUBLISHED.items()]
    md = (
        f"BEIR SciFact test, {len(rs.queries)} queries, {et.documents} documents / {et.chunks} chunks "
        f"(evaluation tenant `{slug}`, loaded through the ingestion pipeline). Document score = best chunk. "
        f"Reranker `{rr.name}` v{rr.version} over the hybrid top {rr.depth} chunks.\n\n"
        + table(["system", "nDCG@10", "R@100", "latency p50 / p95 ms"], rows)
        + f"\nLexical leg minus reference BM25 (same run): {gap:+.4f} nDCG@10.\n"
        + f"\nExample of recorded signals (top chunk of the first query): `{signals_sample}`\n"
    )
    result = SuiteResult("retrieval", metrics_out, {"per_query": _per_query(runs, rs.qrels)}, md, started_at=started)
    result.plots["ndcg"] = _plot(scores)
    result.seconds = time.perf_counter() - t_start
    return result


ABLATIONS: dict[str, dict[str, float]] = {
    "dense passage only": {"dense": 1.0},
    "sentence max only": {"sentence_max": 1.0},
    "dense + sentence + retrieval": {"dense": 1.0, "sentence_max": 0.8, "retrieval": 0.6},
    "without retrieval rank": {"dense": 1.0, "sentence_max": 0.8, "proximity": 0.4, "title": 0.15, "heading": 0.1},
    "retrieval rank x2": {"dense": 1.0, "sentence_max": 0.8, "retrieval": 1.2, "proximity": 0.4, "title": 0.15},
}


def _ablations(runs: dict[str, dict[str, list[str]]], qid: str, chunks: list[Any], ro: Any,
               doc_map: dict[int, str]) -> None:  # fmt: skip
    """Re-combine the signals the reranker recorded (same vectors) with other weights."""

    head = [c for c in chunks if c.chunk_id in ro.signals]
    if not head or "dense" not in ro.signals[head[0].chunk_id]:
        return
    tail = chunks[len(head) :]
    for name, weights in ABLATIONS.items():
        # cast: every ABLATIONS entry has at least one weight, so sum() never returns its int start 0
        score = cast(
            "np.ndarray",
            sum(w * _zscores([ro.signals[c.chunk_id].get(f, 0.0) for c in head]) for f, w in weights.items()),
        )
        order = sorted(range(len(head)), key=lambda i: (-score[i], i))
        ranked = [head[i] for i in order] + tail
        runs.setdefault(f"rerank ablation: {name}", {})[qid] = metrics.doc_ranking_from_chunks(
            [doc_map[c.document_id] for c in ranked]
        )


def _per_query(runs: dict[str, dict[str, list[str]]], qrels: dict[str, dict[str, int]]) -> dict[str, dict[str, float]]:
    return {q: {n: round(metrics.ndcg_at_k(r.get(q, []), qrels[q], 10), 4) for n, r in runs.items()} for q in qrels}


def _plot(scores: dict[str, Any]) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(scores) + list(PUBLISHED)
    nd = [scores[n]["ndcg@10"] for n in scores] + [v[0] for v in PUBLISHED.values()]
    colors = ["tab:blue"] * len(scores) + ["tab:gray"] * len(PUBLISHED)
    fig, ax = plt.subplots(figsize=(9, 4.5))
    ax.barh(names[::-1], nd[::-1], color=colors[::-1])
    ax.axvline(0.72, color="tab:red", linestyle="--", label="goal 0.72")
    ax.set_xlabel("nDCG@10 (BEIR SciFact test)")
    ax.set_xlim(0.4, 0.8)
    for i, v in enumerate(nd[::-1]):
        ax.text(v + 0.003, i, f"{v:.3f}", va="center", fontsize=8)
    ax.legend(loc="lower right")
    ax.set_title("Retrieval: this run (blue) vs published (grey)")
    return fig
