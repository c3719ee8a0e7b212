"""Train the claim-support classifier (SUPPORT / CONTRADICT / NEI) from the MiniLM-L6 float weights.

Same encoder and export as the reranker (``evaluation/training/reranker.py``) with a 3-way head over
``[CLS] claim [SEP] evidence [SEP]``; cross-entropy on ``support_data.build`` pairs.  Training venv only.
"""

from __future__ import annotations

import random
import time
from typing import Any

import numpy as np

from evaluation.training.reranker import (
    _batch,
    base_model_dir,
    seed_everything,
    shuffled_batches,
    tokenizer,
    warmup_linear,
)
from evaluation.training.support_data import Pair

LABELS = ("SUPPORT", "CONTRADICT", "NEI")


def build_classifier() -> Any:
    import torch
    from transformers import BertModel

    class Classifier(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = BertModel.from_pretrained(str(base_model_dir()), add_pooling_layer=False)
            self.head = torch.nn.Linear(self.bert.config.hidden_size, len(LABELS))

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            hidden = self.bert(input_ids=input_ids, attention_mask=attention_mask,
                               token_type_ids=token_type_ids).last_hidden_state  # fmt: skip
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            return self.head((hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9))

    return Classifier()


def train(pairs: list[Pair], *, seed: int, max_len: int, batch: int, lr: float, steps: int, threads: int,
          log: Any = print) -> tuple[Any, dict[str, Any]]:  # fmt: skip
    import torch

    seed_everything(seed, threads)
    tok = tokenizer(max_len)
    model = build_classifier()
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    sched = warmup_linear(opt, steps)
    # Class weights: inverse frequency, so CONTRADICT (the rarest) is not ignored.
    counts = np.array([sum(p.label == lab for p in pairs) for lab in LABELS], dtype=np.float64)
    weights = torch.tensor(counts.sum() / (len(LABELS) * np.maximum(counts, 1)), dtype=torch.float32)
    batches = shuffled_batches(len(pairs), batch, random.Random(seed))
    losses: list[float] = []
    t0 = time.perf_counter()
    for step in range(steps):
        b = [pairs[i] for i in next(batches)]
        logits = model(**_batch(tok, [(p.claim, p.evidence) for p in b]))
        target = torch.tensor([LABELS.index(p.label) for p in b], dtype=torch.long)
        loss = torch.nn.functional.cross_entropy(logits, target, weight=weights)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
        if (step + 1) % 20 == 0 or step == 0:
            el = time.perf_counter() - t0
            log(f"step {step + 1}/{steps} loss {np.mean(losses[-20:]):.4f} {(step + 1) / el:.3f} steps/s")
    model.eval()
    return model, {
        "steps": steps, "pairs": len(pairs), "epochs": round(steps * batch / len(pairs), 2),
        "seconds": round(time.perf_counter() - t0, 1), "loss_first_20": round(float(np.mean(losses[:20])), 4),
        "loss_last_20": round(float(np.mean(losses[-20:])), 4), "class_weights": weights.tolist(),
        "loss_curve_every_20": [round(float(np.mean(losses[i : i + 20])), 4) for i in range(0, len(losses), 20)],
    }  # fmt: skip
