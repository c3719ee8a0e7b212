"""Pure metric checks (no database): the numbers must match trec_eval's definitions."""

from __future__ import annotations

import math

from evaluation.metrics import doc_ranking_from_chunks, ndcg_at_k, per_label_f1, percentile, recall_at_k


def test_it_computes_ndcg_with_linear_gain_like_trec_eval() -> None:
    qrels = {"a": 3, "b": 1, "c": 0}
    ranking = ["b", "x", "a"]
    dcg = 1 / math.log2(2) + 3 / math.log2(4)
    idcg = 3 / math.log2(2) + 1 / math.log2(3)
    assert math.isclose(ndcg_at_k(ranking, qrels, 10), dcg / idcg)
    assert ndcg_at_k(["a", "b"], qrels, 10) == 1.0
    assert ndcg_at_k(["x"], {"c": 0}, 10) == 0.0


def test_it_counts_recall_over_relevant_documents_only() -> None:
    assert recall_at_k(["a", "z"], {"a": 1, "b": 2, "c": 0}, 100) == 0.5
    assert recall_at_k(["a", "b"], {"a": 1, "b": 2}, 1) == 0.5


def test_it_scores_a_document_by_its_best_chunk() -> None:
    assert doc_ranking_from_chunks(["d2", "d1", "d2", "d3"]) == ["d2", "d1", "d3"]


def test_it_reports_per_label_f1_and_percentiles() -> None:
    f1 = per_label_f1(["S", "S", "N"], ["S", "N", "N"], ["S", "N"])
    assert f1["S"]["precision"] == 1.0 and f1["S"]["recall"] == 0.5
    assert math.isclose(f1["N"]["f1"], 2 * 0.5 * 1.0 / 1.5)
    assert percentile([1, 2, 3, 4], 50) == 2.5 and percentile([5], 99) == 5
