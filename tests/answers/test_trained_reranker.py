"""Cairn's own cross-encoder (models/reranker-minilm-l6-ce): the shipped int8 ONNX, loaded for real.

No mocks: the repository's weights rerank a small slice (the refund passage must come first, and a
few TREC DL19 candidates from ../shared/data when present), and weights whose sha256 is not the
pinned one are refused before onnxruntime sees them.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from answers.rerank import (
    TRAINED_RERANKER_SHA256,
    ModelIntegrityError,
    TrainedCrossEncoderReranker,
    trained_reranker_dir,
)
from tests.answers.test_rerank import CANDIDATES, chunk


def test_the_shipped_weights_match_the_pinned_sha256_and_their_sidecar() -> None:
    model = trained_reranker_dir() / "model.onnx"
    digest = hashlib.sha256(model.read_bytes()).hexdigest()
    assert digest == TRAINED_RERANKER_SHA256
    assert (trained_reranker_dir() / "model.onnx.sha256").read_text().split()[0] == digest
    assert (trained_reranker_dir() / "MODEL_CARD.md").is_file()


def test_the_shipped_model_reranks_a_small_slice() -> None:
    rr = TrainedCrossEncoderReranker(depth=10)
    distractor = chunk(4, "Refunds of the annual travel budget are handled by the finance office in March.")
    out = rr.rerank("how many days do I have to get a refund?", None, [*CANDIDATES, distractor])
    assert out.name == "minilm-l6-cross-encoder" and len(rr.version) == 16
    assert out.chunks[0].chunk_id == 3
    assert set(out.signals[3]) >= {"cross_encoder", "retrieval", "final"}
    scores = {c.chunk_id: out.signals[c.chunk_id]["cross_encoder"] for c in out.chunks}
    assert scores[3] > scores[1] and scores[3] > scores[2]


def test_on_a_dl19_slice_judged_relevant_passages_score_above_judged_irrelevant_ones() -> None:
    """The first 8 TREC DL19 queries' BM25 top-30: the pooled mean score of passages judged 2-3 is above
    that of passages judged 0.  A weak check on purpose: the model is weaker than the default on DL19
    (docs/models.md), and a per-query ordering assertion would fail on some queries."""
    from django.conf import settings

    root = Path(settings.CAIRN["DEMO_DATA_DIR"]) / "trec_dl19"
    if not (root / "qrels.dl19-passage.txt").is_file():
        pytest.skip("../shared/data/trec_dl19 is not present")
    from evaluation.datasets import load_trec_dl19

    rr = TrainedCrossEncoderReranker(depth=30)
    relevant, irrelevant = [], []
    for rq in load_trec_dl19(limit=8, depth=30):
        scores = rr.scores(rq.query, [t for _, t in rq.candidates])
        for (doc, _), score in zip(rq.candidates, scores, strict=True):
            grade = rq.qrels.get(doc, -1)
            if grade >= 2:
                relevant.append(score)
            elif grade == 0:
                irrelevant.append(score)
    assert len(relevant) > 20 and len(irrelevant) > 20
    assert sum(relevant) / len(relevant) > sum(irrelevant) / len(irrelevant) + 0.2


def test_weights_with_another_sha256_are_refused(tmp_path: Path) -> None:
    for name in ("model.onnx", "tokenizer.json"):
        shutil.copyfile(trained_reranker_dir() / name, tmp_path / name)
    data = bytearray((tmp_path / "model.onnx").read_bytes())
    data[-1] ^= 0xFF  # one flipped byte
    (tmp_path / "model.onnx").write_bytes(bytes(data))
    rr = TrainedCrossEncoderReranker(model_dir=str(tmp_path), depth=5)
    with pytest.raises(ModelIntegrityError, match="refusing to load"):
        rr.rerank("refund", None, list(CANDIDATES))
    assert rr._session is None
