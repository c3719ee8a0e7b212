"""``manage.py train_support``: the claim-support classifier (issue 18 §3), training venv only.

Builds the pairs (``evaluation/training/support_data.py``), trains a SUPPORT / CONTRADICT / NEI
classifier from the MiniLM-L6 float weights (``evaluation/training/support.py``), exports int8 ONNX to
``--out-model`` and measures it on SciFact claims dev and RAMDocs-derived pairs
(``evaluation/training/support_eval.py``), writing ``training.json`` there and a report under
``reports/train_support/``.  ``--data-only`` builds and summarises the pairs without torch.
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

from evaluation.report import SuiteResult, table, write


class Command(BaseCommand):
    help = "Claim-support classifier from SciFact claims train + FactCC-style swaps from the corpora."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--seed", type=int, default=13)
        parser.add_argument("--data-only", action="store_true")
        parser.add_argument("--examples", type=int, default=6)
        parser.add_argument("--max-len", type=int, default=128)
        parser.add_argument("--batch", type=int, default=16)
        parser.add_argument("--lr", type=float, default=5e-5)
        parser.add_argument("--steps", type=int, default=280)
        parser.add_argument("--threads", type=int, default=2)
        parser.add_argument("--out-model", default=None, help="default models/support-minilm-l6")
        parser.add_argument("--out", default=None, help="report directory (default reports/)")
        parser.add_argument("--eval-limit", type=int, default=None)

    def handle(self, *args: Any, **opts: Any) -> None:
        from core.crypto import sha256_file
        from evaluation.training.data import LICENCES, input_hashes
        from evaluation.training.support_data import build

        if not opts["data_only"]:
            from evaluation.training.reranker import require_training_env

            try:
                require_training_env()
            except RuntimeError as exc:
                raise CommandError(str(exc).replace("train_reranker", "train_support")) from exc
        started = datetime.now(UTC).isoformat(timespec="seconds")
        t0 = time.perf_counter()
        pairs = build(opts["seed"])
        by = Counter((p.source, p.label) for p in pairs)
        self.stdout.write(f"pairs: {len(pairs)}")
        for (source, label), n in sorted(by.items()):
            self.stdout.write(f"  {source:22s} {label:10s} {n}")
        self.stdout.write(f"transforms: {dict(Counter(p.transform for p in pairs if p.transform))}")
        if opts["data_only"]:
            for p in pairs[: opts["examples"]]:
                self.stdout.write(f"  [{p.source} {p.label} {p.transform}] {p.claim[:120]!r} | {p.evidence[:100]!r}")
            return
        from evaluation.training import support, support_eval
        from evaluation.training.reranker import export

        model, stats = support.train(pairs, seed=opts["seed"], max_len=opts["max_len"], batch=opts["batch"],
                                     lr=opts["lr"], steps=opts["steps"], threads=opts["threads"],
                                     log=lambda m: self.stdout.write(m))  # fmt: skip
        out_model = Path(opts["out_model"] or Path(settings.BASE_DIR) / "models" / "support-minilm-l6")
        exp = export(model, out_model, opts["max_len"])
        digest = sha256_file(out_model / "model.onnx")
        (out_model / "model.onnx.sha256").write_text(f"{digest}  model.onnx\n")
        ev = support_eval.evaluate(support_eval.OnnxSupportModel(str(out_model), opts["max_len"]), opts["eval_limit"])
        hashes = input_hashes(("scifact-train", "18f-headings", "sec10q-headings"))
        hashes = {k: v for k, v in hashes.items() if not k.startswith("beir_scifact/qrels")}
        from evaluation.datasets import data_root

        hashes["scifact_claims/scifact_claims_train.jsonl"] = sha256_file(
            data_root() / "scifact_claims" / "scifact_claims_train.jsonl"
        )
        recipe = {
            "command": "manage.py train_support " + " ".join(shlex.quote(a) for a in sys.argv[2:]),
            "labels": list(support.LABELS), "pairs": len(pairs),
            "pairs_per_source_label": {f"{s}/{lab}": n for (s, lab), n in sorted(by.items())},
            "seed": opts["seed"], "max_len": opts["max_len"], "batch": opts["batch"], "lr": opts["lr"],
            "threads": opts["threads"], "input_sha256": hashes,
            "licences": {"scifact-claims-train": LICENCES["scifact-train"], "18f": LICENCES["18f-headings"],
                         "sec10q": LICENCES["sec10q-headings"], "base-model": LICENCES["base-model"]},
            "training": stats, "export": exp, "model_sha256": digest, "heldout": ev,
        }  # fmt: skip
        (out_model / "training.json").write_text(json.dumps(recipe, indent=2) + "\n")
        rows = [[name, r["items"], r["macro_f1"], r["balanced_accuracy"], r["accuracy"], r["always_nei_macro_f1"]]
                for name, r in ev.items()]  # fmt: skip
        md = (
            f"Support classifier from all-MiniLM-L6-v2, {stats['steps']} steps ({stats['seconds']} s, "
            f"{stats['epochs']} epochs over {len(pairs)} pairs); loss {stats['loss_first_20']} -> "
            f"{stats['loss_last_20']}. int8 ONNX sha256 `{digest}`.\n\n"
            + table(["set", "items", "macro-F1", "balanced acc.", "accuracy", "always-NEI macro-F1"], rows)
        )
        result = SuiteResult("train_support", recipe, {}, md, started_at=started)
        result.plots["f1"] = plot(ev)
        result.seconds = time.perf_counter() - t0
        out = Path(opts["out"]) if opts["out"] else Path(settings.BASE_DIR) / "reports"
        files = write(result, recipe["command"], out)
        self.stdout.write(md)
        for kind, path in files.items():
            self.stdout.write(f"{kind}: {path}")


def plot(ev: dict[str, Any]) -> Any:
    """Per-label F1 on each held-out set, with the always-NEI macro-F1 as a reference line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = ("SUPPORT", "CONTRADICT", "NEI")
    fig, ax = plt.subplots(figsize=(7, 3.5))
    width = 0.8 / max(1, len(ev))
    for i, (name, r) in enumerate(ev.items()):
        xs = [x + (i - (len(ev) - 1) / 2) * width for x in range(len(labels))]
        ax.bar(xs, [r["per_label"][lab]["f1"] for lab in labels], width=width,
               label=f"{name} (macro-F1 {r['macro_f1']:.2f}, bal. acc. {r['balanced_accuracy']:.2f})")  # fmt: skip
    ax.set_xticks(list(range(len(labels))), labels)
    ax.set_ylim(0, 1)
    ax.set_ylabel("F1")
    ax.legend(fontsize=8)
    ax.set_title("Trained support classifier, held-out sets")
    return fig
