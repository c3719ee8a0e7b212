"""The claim verifier on SciFact claims (dev): accuracy and per-label F1.

Each (claim, cited abstract) pair is one item.  SUPPORT / CONTRADICT items pair the claim with
its rationale sentences (what a citation would quote); NOT ENOUGH INFO items (no evidence) pair
it with the first three sentences of the cited abstract.  The verifier is the function the
answer engine uses, ``answers.verification.support_label`` (the labelled lexical fallback, since
no NLI model ships offline): ``supported`` -> SUPPORT, ``contradicted`` -> CONTRADICT, anything
else -> NEI.  No index is involved, so no tenant is created.
"""

from __future__ import annotations

import time
from collections import Counter
from datetime import UTC, datetime
from typing import Any

from tqdm import tqdm

from retrieval.chunking import split_sentences
from retrieval.evaluation import metrics
from retrieval.evaluation.datasets import load_scifact, load_scifact_claims
from retrieval.evaluation.report import SuiteResult, table

LABELS = ("SUPPORT", "CONTRADICT", "NEI")
MAP = {"supported": "SUPPORT", "contradicted": "CONTRADICT"}


def items(limit: int | None) -> list[dict[str, Any]]:
    claims = load_scifact_claims("dev")
    corpus = {d.doc_id: d for d in load_scifact().corpus}
    out: list[dict[str, Any]] = []
    for c in claims:
        if c["evidence"]:
            for doc_id, ev in c["evidence"].items():
                out.append({"id": c["id"], "claim": c["claim"], "doc": doc_id, "gold": ev["label"],
                            "quote": " ".join(ev["rationale_sentences"])})  # fmt: skip
        else:
            for doc_id in c["cited_doc_ids"][:1]:
                doc = corpus.get(str(doc_id))
                if doc is None:
                    continue
                sents = [doc.text[s:e] for s, e in split_sentences(doc.text)][:3]
                out.append(
                    {"id": c["id"], "claim": c["claim"], "doc": str(doc_id), "gold": "NEI", "quote": " ".join(sents)}
                )
    if limit:
        # Keep every label in a smoke run: round-robin over the labels.
        by = {lab: [x for x in out if x["gold"] == lab] for lab in LABELS}
        mixed = [x for trio in zip(*by.values(), strict=False) for x in trio]
        out = mixed[:limit]
    return out


def run(limit: int | None = None, progress: bool = True, **_: Any) -> SuiteResult:
    from answers.verification import support_label, verifier_release

    started = datetime.now(UTC).isoformat(timespec="seconds")
    t0 = time.perf_counter()
    data = items(limit)
    gold, pred, raw = [], [], []
    for it in tqdm(data, desc="scifact claims", disable=not progress):
        label, reasons = support_label(it["claim"], it["quote"])
        it["predicted"], it["verifier_label"], it["reasons"] = MAP.get(label, "NEI"), label, list(reasons)
        gold.append(it["gold"])
        pred.append(it["predicted"])
        raw.append(label)
    acc = sum(g == p for g, p in zip(gold, pred, strict=True)) / len(gold) if gold else 0.0
    f1 = metrics.per_label_f1(gold, pred, LABELS)
    confusion = Counter(f"{g}->{p}" for g, p in zip(gold, pred, strict=True))
    macro = metrics.mean([f1[lab]["f1"] for lab in LABELS])
    md = (
        f"SciFact claims dev: {len(data)} (claim, abstract) items; verifier `answers.verification.support_label` "
        f"(lexical fallback; no NLI model ships offline). Accuracy **{acc:.4f}**, macro-F1 {macro:.4f}.\n\n"
        + table(["label", "precision", "recall", "F1", "support"],
                [[lab, f1[lab]["precision"], f1[lab]["recall"], f1[lab]["f1"], int(f1[lab]["support"])] for lab in LABELS])
        + "\nConfusion (gold->predicted): " + ", ".join(f"{k}: {v}" for k, v in sorted(confusion.items())) + "\n"
    )  # fmt: skip
    res = SuiteResult("verifier", {"accuracy": acc, "macro_f1": macro, "per_label": f1, "items": len(data),
                                   "confusion": dict(confusion), "verifier": verifier_release(),
                                   "raw_labels": dict(Counter(raw))},
                      {"sample": data[:40]}, md, started_at=started)  # fmt: skip
    res.plots["f1"] = _plot(f1)
    res.seconds = time.perf_counter() - t0
    return res


def _plot(f1: dict[str, dict[str, float]]) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    xs = range(len(LABELS))
    for off, key in ((-0.25, "precision"), (0.0, "recall"), (0.25, "f1")):
        ax.bar([x + off for x in xs], [f1[lab][key] for lab in LABELS], width=0.25, label=key)
    ax.set_xticks(list(xs), LABELS)
    ax.set_ylim(0, 1)
    ax.legend()
    ax.set_title("Verifier on SciFact claims (dev)")
    return fig
