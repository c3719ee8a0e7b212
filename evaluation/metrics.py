"""Ranking and classification metrics, computed the way the published numbers were.

nDCG@k uses linear gain (``rel / log2(rank + 1)``) as trec_eval does (BEIR's pytrec_eval too);
the ideal ranking is built from every judged-relevant document of the query.  Documents judged 0
(or negatively) count as non-relevant.  Queries without any relevant judgement are skipped by
the callers (trec_eval's default).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence


def ndcg_at_k(ranking: Sequence[str], qrels: Mapping[str, int], k: int = 10) -> float:
    dcg = 0.0
    for i, doc in enumerate(ranking[:k]):
        rel = qrels.get(doc, 0)
        if rel > 0:
            dcg += rel / math.log2(i + 2)
    ideal = sorted((r for r in qrels.values() if r > 0), reverse=True)[:k]
    idcg = sum(r / math.log2(i + 2) for i, r in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at_k(ranking: Sequence[str], qrels: Mapping[str, int], k: int = 100, min_rel: int = 1) -> float:
    relevant = {d for d, r in qrels.items() if r >= min_rel}
    if not relevant:
        return 0.0
    return len(relevant & set(ranking[:k])) / len(relevant)


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank-with-interpolation percentile (numpy's default 'linear')."""
    if not values:
        return 0.0
    s = sorted(values)
    pos = (len(s) - 1) * p / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def per_label_f1(gold: Sequence[str], pred: Sequence[str], labels: Sequence[str]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for lab in labels:
        tp = sum(1 for g, p in zip(gold, pred, strict=True) if g == lab and p == lab)
        fp = sum(1 for g, p in zip(gold, pred, strict=True) if g != lab and p == lab)
        fn = sum(1 for g, p in zip(gold, pred, strict=True) if g == lab and p != lab)
        prec = tp / (tp + fp) if tp + fp else 0.0
        rec = tp / (tp + fn) if tp + fn else 0.0
        f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
        out[lab] = {"precision": prec, "recall": rec, "f1": f1, "support": float(tp + fn)}
    return out


def doc_ranking_from_chunks(chunk_docs: Sequence[str]) -> list[str]:
    """Document-level ranking: a document's score is its best chunk's, i.e. its first appearance."""
    seen: set[str] = set()
    out: list[str] = []
    for d in chunk_docs:
        if d not in seen:
            seen.add(d)
            out.append(d)
    return out
