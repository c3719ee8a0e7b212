"""Held-out figures for a reranker model directory (no torch needed): the int8 ONNX through the
product's own loader (``answers.rerank.TrainedCrossEncoderReranker``).

* TREC DL19 passage: BM25 top-100 given, nDCG@10 (linear gain, trec_eval) -- the reranker suite's data.
* BEIR SciFact **test** (300 queries; never read by the trainer): reference BM25 (bm25s) top-30
  re-scored, document nDCG@10.  This is a proxy: the product pipeline is hybrid RRF + reranker,
  measured by ``manage.py evaluate --suite retrieval`` (needs the stack).
* Latency: rerank 30 DL19 candidates per query, p50 / p95 over the 43 queries, at the loader's threads.
"""

from __future__ import annotations

import time
from typing import Any

from evaluation import metrics
from evaluation.datasets import load_scifact, load_trec_dl19
from evaluation.suites.reranker import as_chunks
from evaluation.suites.retrieval import reference_bm25


def _rerank_ids(model: Any, query: str, cands: list[tuple[str, str]], base: int) -> list[str]:
    chunks = as_chunks(cands, base=base)
    out = model.rerank(query, None, chunks, top_n=len(chunks))
    pos = {c.chunk_id: i for i, c in enumerate(chunks)}
    return [cands[pos[c.chunk_id]][0] for c in out.chunks]


def dl19(model: Any, depth: int = 100, limit: int | None = None) -> dict[str, Any]:
    qs = load_trec_dl19(limit, depth=depth)
    nd, bm = [], []
    for qi, rq in enumerate(qs):
        ranked = _rerank_ids(model, rq.query, rq.candidates, (qi + 1) * 1_000_000)
        nd.append(metrics.ndcg_at_k(ranked, rq.qrels, 10))
        bm.append(metrics.ndcg_at_k([d for d, _ in rq.candidates], rq.qrels, 10))
    return {"ndcg@10": metrics.mean(nd), "bm25_ndcg@10": metrics.mean(bm), "queries": len(qs), "depth": depth}


def latency(model: Any, n: int = 30, limit: int | None = None) -> dict[str, Any]:
    qs = load_trec_dl19(limit, depth=n)
    secs = []
    for qi, rq in enumerate(qs):
        t0 = time.perf_counter()
        _rerank_ids(model, rq.query, rq.candidates, (qi + 1) * 1_000_000)
        secs.append((time.perf_counter() - t0) * 1000)
    return {"candidates": n, "queries": len(qs), "p50_ms": metrics.percentile(secs, 50),
            "p95_ms": metrics.percentile(secs, 95)}  # fmt: skip


def scifact_test(model: Any, depth: int = 30, limit: int | None = None) -> dict[str, Any]:
    rs = load_scifact(limit)
    docs = {d.doc_id: f"{d.title} {d.text}".strip() for d in rs.corpus}
    bm25 = reference_bm25(rs, k=depth)
    nd, bm = [], []
    for qi, (qid, query) in enumerate(rs.queries.items()):
        cands = [(d, docs[d]) for d in bm25[qid][:depth]]
        ranked = _rerank_ids(model, query, cands, (qi + 1) * 1_000_000)
        nd.append(metrics.ndcg_at_k(ranked, rs.qrels[qid], 10))
        bm.append(metrics.ndcg_at_k(bm25[qid], rs.qrels[qid], 10))
    return {"ndcg@10": metrics.mean(nd), "bm25_ndcg@10": metrics.mean(bm), "queries": len(rs.queries),
            "depth": depth, "split": "test"}  # fmt: skip


def evaluate(model: Any, limit: int | None = None) -> dict[str, Any]:
    return {"dl19": dl19(model, limit=limit), "scifact_test_bm25_top30": scifact_test(model, limit=limit),
            "latency_30_candidates": latency(model, limit=limit)}  # fmt: skip
