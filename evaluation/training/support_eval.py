"""Held-out figures for a support-classifier ONNX directory (no torch): SciFact claims dev (the verifier
suite's items) and RAMDocs-derived pairs the trainer never saw.

RAMDocs pairs (``ramdocs_dev.jsonl``, 250 questions): claim = "<question> <first gold answer>."; each
document typed ``correct`` that contains a gold answer -> SUPPORT, ``misinfo`` -> CONTRADICT,
``noise`` -> NEI (document text clipped to 1,200 characters).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from evaluation import metrics
from evaluation.datasets import load_ramdocs

LABELS = ("SUPPORT", "CONTRADICT", "NEI")


class OnnxSupportModel:
    def __init__(self, model_dir: str, max_len: int = 128, threads: int = 2) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        self.session = ort.InferenceSession(f"{model_dir}/model.onnx", sess_options=opts,
                                            providers=["CPUExecutionProvider"])  # fmt: skip
        self.tok = Tokenizer.from_file(f"{model_dir}/tokenizer.json")
        self.tok.enable_truncation(max_length=max_len)
        self.tok.enable_padding(pad_id=0, pad_token="[PAD]")

    def predict(self, pairs: list[tuple[str, str]]) -> list[str]:
        out: list[str] = []
        for i in range(0, len(pairs), 16):
            encs = self.tok.encode_batch(pairs[i : i + 16])
            feed = {
                "input_ids": np.array([e.ids for e in encs], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask for e in encs], dtype=np.int64),
                "token_type_ids": np.array([e.type_ids for e in encs], dtype=np.int64),
            }
            logits = self.session.run(None, feed)[0]
            out += [LABELS[int(j)] for j in np.argmax(logits, axis=1)]
        return out


def ramdocs_items(limit: int | None = None) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for q in load_ramdocs(limit):
        golds = q.get("gold_answers") or q.get("answers") or []
        if isinstance(golds, str):
            golds = [golds]
        if not golds:
            continue
        claim = f"{q['question'].rstrip('?')}? {golds[0]}."
        for d in q.get("documents") or []:
            text = (d.get("text") or "")[:1200]
            kind = d.get("type")
            if kind == "correct" and any(g.lower() in text.lower() for g in golds):
                items.append({"claim": claim, "quote": text, "gold": "SUPPORT"})
            elif kind in ("misinfo", "misinformation"):
                items.append({"claim": claim, "quote": text, "gold": "CONTRADICT"})
            elif kind == "noise":
                items.append({"claim": claim, "quote": text, "gold": "NEI"})
    return items


def score(gold: list[str], pred: list[str]) -> dict[str, Any]:
    f1 = metrics.per_label_f1(gold, pred, LABELS)
    recalls = [f1[lab]["recall"] for lab in LABELS if f1[lab]["support"]]
    return {"items": len(gold), "accuracy": sum(g == p for g, p in zip(gold, pred, strict=True)) / len(gold),
            "macro_f1": metrics.mean([f1[lab]["f1"] for lab in LABELS]),
            "balanced_accuracy": metrics.mean(recalls), "per_label": f1,
            "always_nei_macro_f1": metrics.mean([metrics.per_label_f1(gold, ["NEI"] * len(gold), LABELS)[lab]["f1"]
                                                 for lab in LABELS])}  # fmt: skip


def evaluate(model: OnnxSupportModel, limit: int | None = None) -> dict[str, Any]:
    from evaluation.suites.verifier import items as scifact_items

    out: dict[str, Any] = {}
    for name, data in (
        ("scifact_claims_dev", scifact_items(limit, "dev")),
        ("ramdocs_never_seen", ramdocs_items(limit)),
    ):
        pred = model.predict([(it["claim"], it["quote"]) for it in data])
        out[name] = score([it["gold"] for it in data], pred)
    return out
