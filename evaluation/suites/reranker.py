"""Reranker quality in isolation on TREC DL19 passage (BM25 top-100 given, 43 judged queries).

nDCG@10 with linear gain, as trec_eval computes it (graded qrels 0-3).  The candidates are given,
so no index is involved: each query's candidates become ``RankedChunk``s in BM25 order and every
reranker variant re-scores all 100.  The default reranker's features are computed once per query;
its ablations (single signals, no retrieval rank) re-combine them, so every variant sees exactly
the same vectors.  Cross-encoder variants run when configured (model dir / endpoint), otherwise
they are listed as not configured; Cairn's own trained cross-encoder (models/reranker-minilm-l6-ce)
runs whenever its weights are present, alone and z-summed with the default's fused score.
"""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings
from tqdm import tqdm

from answers.rerank import (
    DEFAULT_WEIGHTS,
    HttpCrossEncoderReranker,
    MiniLMFusionReranker,
    OnnxCrossEncoderReranker,
    TrainedCrossEncoderReranker,
    _zscores,
    trained_reranker_dir,
)
from evaluation import metrics
from evaluation.datasets import load_trec_dl19
from evaluation.report import SuiteResult, table
from retrieval.search import RankedChunk

PUBLISHED = {"BM25 (first stage)": 0.5058, "monoBERT (quoted)": 0.7050, "RankVicuna-7B": 0.6682,
             "monoT5-3B (quoted)": 0.7183}  # fmt: skip

ABLATIONS: dict[str, dict[str, float]] = {
    "minilm-fusion (default)": DEFAULT_WEIGHTS,
    "dense passage only": {"dense": 1.0},
    "sentence max only": {"sentence_max": 1.0},
    "proximity only": {"proximity": 1.0},
    "dense + sentence": {"dense": 1.0, "sentence_max": 0.8},
    "default without retrieval rank": {k: v for k, v in DEFAULT_WEIGHTS.items() if k != "retrieval"},
}


TRAINED = "minilm-l6 cross-encoder (ours, trained)"
# The trained cross-encoder's score plus the default's fused score (both z-scored per query).
COMBINED = "cross-encoder (ours) + minilm-fusion"


def _cache_path() -> Path:
    return Path(os.environ.get("CAIRN_DATA_DIR") or Path(settings.BASE_DIR) / ".cairn") / "eval-cache" / "dl19.json"


def _load_cache() -> dict[str, Any]:
    p = _cache_path()
    return json.loads(p.read_text()) if p.exists() else {}


def _save_cache(cache: dict[str, Any]) -> None:
    p = _cache_path()
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_suffix(".tmp")
    tmp.write_text(json.dumps(cache))
    tmp.replace(p)


def as_chunks(cands: list[tuple[str, str]], base: int) -> list[RankedChunk]:
    return [
        RankedChunk(
            chunk_id=base + i,
            document_id=base + i,
            rrf=1.0 / (60 + i + 1),
            ranks={"bm25": i + 1},
            text=text,
            heading="",
            char_start=0,
            char_end=len(text),
            title="",
            url="",
            canonical_url="",
            source_system="upload",
            container="",
            updated_at=None,
            created_at=None,
            version_label="",
            authority_tier=1,
            snapshot_sha256="",
            fingerprint="",
            simhash=0,
        )  # fmt: skip
        for i, (_, text) in enumerate(cands)
    ]


def _cross_encoders() -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    cfg = settings.CAIRN
    if (trained_reranker_dir() / "model.onnx").is_file():
        out.append((TRAINED, TrainedCrossEncoderReranker(depth=100)))
    if cfg.get("RERANKER_MODEL_DIR"):
        out.append(("onnx cross-encoder", OnnxCrossEncoderReranker(depth=100)))
    if cfg.get("RERANKER_URL"):
        out.append(("http cross-encoder", HttpCrossEncoderReranker(depth=100)))
    return out


def run(limit: int | None = None, progress: bool = True, depth: int | None = None, **_: Any) -> SuiteResult:
    started = datetime.now(UTC).isoformat(timespec="seconds")
    t_start = time.perf_counter()
    depth = depth or 100
    queries = load_trec_dl19(limit, depth=depth)
    fusion = MiniLMFusionReranker(depth=depth)
    # Features depend only on (query, candidates, reranker version): cached on disk, so changing
    # the fusion weights re-scores without re-embedding (timings are then those of the first run).
    cache = _load_cache()
    cross = _cross_encoders()
    runs: dict[str, dict[str, list[str]]] = {"BM25 (input order)": {}}
    runs.update({name: {} for name in ABLATIONS})
    runs.update({name: {} for name, _ in cross})
    if any(n == TRAINED for n, _ in cross):
        runs[COMBINED] = {}
    secs: dict[str, list[float]] = {name: [] for name in runs}
    for qi, rq in enumerate(tqdm(queries, desc="dl19 queries", disable=not progress)):
        ids = [d for d, _ in rq.candidates]
        runs["BM25 (input order)"][rq.qid] = ids
        chunks = as_chunks(rq.candidates, base=(qi + 1) * 1_000_000)
        key = f"{rq.qid}:{depth}:{fusion.version}"
        feats = cache.get(key)
        if feats is None:
            t0 = time.perf_counter()
            feats = fusion.features(rq.query, chunks)
            secs["minilm-fusion (default)"].append(time.perf_counter() - t0)
            cache[key] = feats
            _save_cache(cache)
        for name, weights in ABLATIONS.items():
            score = np.zeros(len(chunks))
            for f, w in weights.items():
                score += w * _zscores([x.get(f, 0.0) for x in feats])
            order = sorted(range(len(chunks)), key=lambda i: (-score[i], i))
            runs[name][rq.qid] = [ids[i] for i in order]
        for name, model in cross:
            t0 = time.perf_counter()
            out = model.rerank(rq.query, None, chunks, top_n=depth)
            secs[name].append(time.perf_counter() - t0)
            pos = {c.chunk_id: i for i, c in enumerate(chunks)}
            runs[name][rq.qid] = [ids[pos[c.chunk_id]] for c in out.chunks]
            if name == TRAINED:
                ce = [0.0] * len(chunks)
                for c in out.chunks:
                    ce[pos[c.chunk_id]] = out.signals[c.chunk_id]["cross_encoder"]
                fused = np.zeros(len(chunks))
                for f, w in DEFAULT_WEIGHTS.items():
                    fused += w * _zscores([x.get(f, 0.0) for x in feats])
                score = _zscores(ce) + _zscores(fused.tolist())
                order = sorted(range(len(chunks)), key=lambda i: (-score[i], i))
                runs[COMBINED][rq.qid] = [ids[i] for i in order]
    qrels = {rq.qid: rq.qrels for rq in queries}
    scores: dict[str, dict[str, float]] = {}
    for name, r in runs.items():
        nd = [metrics.ndcg_at_k(r[q], qrels[q], 10) for q in qrels]
        scores[name] = {"ndcg@10": metrics.mean(nd), "queries": len(nd)}
        if secs.get(name):
            scores[name]["seconds_per_query_p50"] = metrics.percentile(secs[name], 50)
    configured = [n for n, _ in cross]
    not_configured = [n for n in (TRAINED, "onnx cross-encoder", "http cross-encoder") if n not in configured]
    rows = [[n, s["ndcg@10"], f"{s.get('seconds_per_query_p50', 0):.2f}"] for n, s in scores.items()]
    rows += [[f"published: {k}", v, "–"] for k, v in PUBLISHED.items()]
    md = (
        f"TREC DL19 passage, {len(queries)} judged queries, BM25 top-{depth} candidates re-scored; "
        "nDCG@10 with linear gain (trec_eval).\n\n"
        + table(["reranker", "nDCG@10", "s/query (p50, features)"], rows)
        + (
            f"\nNot configured in this run (no model dir / endpoint): {', '.join(not_configured)}.\n"
            if not_configured
            else ""
        )  # fmt: skip
        + "\nAblations re-combine the default reranker's features (same vectors), so they isolate each signal.\n"
    )
    metrics_out = {"systems": scores, "published": PUBLISHED, "depth": depth, "not_configured": not_configured,
                   "goal_at_least_0.65": scores["minilm-fusion (default)"]["ndcg@10"] >= 0.65,
                   "weights": DEFAULT_WEIGHTS}  # fmt: skip
    per_query = {q: {n: round(metrics.ndcg_at_k(r[q], qrels[q], 10), 4) for n, r in runs.items()} for q in qrels}
    result = SuiteResult("reranker", metrics_out, {"per_query": per_query}, md, started_at=started)
    result.plots["ndcg"] = _plot(scores)
    result.seconds = time.perf_counter() - t_start
    return result


def _plot(scores: dict[str, dict[str, float]]) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(scores) + [f"published: {k}" for k in PUBLISHED]
    vals = [s["ndcg@10"] for s in scores.values()] + list(PUBLISHED.values())
    colors = ["tab:blue"] * len(scores) + ["tab:gray"] * len(PUBLISHED)
    fig, ax = plt.subplots(figsize=(9, 4.5))
    ax.barh(names[::-1], vals[::-1], color=colors[::-1])
    ax.axvline(0.65, color="tab:red", linestyle="--", label="goal 0.65")
    for i, v in enumerate(vals[::-1]):
        ax.text(v + 0.004, i, f"{v:.3f}", va="center", fontsize=8)
    ax.set_xlim(0.3, 0.8)
    ax.set_xlabel("nDCG@10 (TREC DL19 passage, BM25 top-100 reranked)")
    ax.legend(loc="lower right")
    return fig
