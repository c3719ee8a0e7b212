"""The claim verifier on SciFact claims: accuracy, per-label precision/recall/F1, confusion matrices.

Each (claim, cited abstract) pair is one item.  SUPPORT / CONTRADICT items pair the claim with
its rationale sentences (what a citation would quote); NOT ENOUGH INFO items (no evidence) pair
it with the first three sentences of the cited abstract.  Every item goes through the engine's
own ``answers.verification.verify_claim`` (the quote is its own passage, so the quote check
passes and only support is measured): ``supported`` -> SUPPORT, ``contradicted`` -> CONTRADICT,
anything else -> NEI.  Variants, side by side on the same items:

* ``lexical`` — the lexical fallback alone (what runs without Django, and in ``conflicts``);
* ``lexical+embedding`` — plus MiniLM similarity (``get_backend("EMBEDDER")``), the default
  ``ClaimVerifier`` when no judge is configured; its figures are the suite's headline metrics;
* ``judge`` — with ``--judge-url URL`` (an OpenAI-compatible ``…/v1``): the judge decides and the
  previous variant is the fallback; items where the judge failed are counted.

The thresholds were tuned on dev only (``python -m evaluation.suites.verifier --tune``);
``--split train`` reports the held-out split.  No index is involved, so no tenant is created.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import time
from collections import Counter
from datetime import UTC, datetime
from typing import Any

from tqdm import tqdm

import answers.support as v
from answers.contracts import Citation, DraftClaim, EvidenceRecord, ParsedQuery, QueryPlan
from answers.judge import LlamaCppJudge, OpenAICompatibleJudge
from answers.verification import verifier_release, verify_claim
from core.backends import embedder as configured_embedder
from evaluation import metrics
from evaluation.datasets import load_scifact, load_scifact_claims
from evaluation.report import SuiteResult, table
from retrieval.chunking import split_sentences

LABELS = ("SUPPORT", "CONTRADICT", "NEI")
MAP = {"supported": "SUPPORT", "contradicted": "CONTRADICT"}
SPLITS = ("dev", "train")


def items(limit: int | None, split: str = "dev") -> list[dict[str, Any]]:
    claims = load_scifact_claims(split)
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
        # Keep every label in a smoke run (and in a judge sample): round-robin over the labels.
        by = {lab: [x for x in out if x["gold"] == lab] for lab in LABELS}
        mixed = [x for trio in zip(*by.values(), strict=False) for x in trio]
        out = mixed[:limit]
    return out


def _verify(it: dict[str, Any], *, embedder: Any = None, judge: Any = None) -> tuple[str, str, tuple[str, ...]]:
    """The engine's verify_claim on one item; returns (support label, method, reasons)."""

    ev = EvidenceRecord(id="E", document_id=0, chunk_id=0, canonical_url="", title=it["doc"], source_system="scifact",
                        container="", text=it["quote"], char_start=0, char_end=len(it["quote"]),
                        snapshot_sha256="")  # fmt: skip
    plan = QueryPlan(parsed=ParsedQuery(original=it["claim"], text=it["claim"]), as_of=datetime.now(UTC),
                     retrieval_queries=(it["claim"],))  # fmt: skip
    draft = DraftClaim(id=str(it["id"]), text=it["claim"], citations=(Citation("E", it["quote"]),))
    r = verify_claim(draft, {"E": ev}, plan, authorised_ids={"E"}, embedder=embedder, judge=judge)
    return r.support, r.method, r.reasons


def score(gold: list[str], pred: list[str]) -> dict[str, Any]:
    acc = sum(g == p for g, p in zip(gold, pred, strict=True)) / len(gold) if gold else 0.0
    f1 = metrics.per_label_f1(gold, pred, LABELS)
    confusion = {g: {p: sum(1 for a, b in zip(gold, pred, strict=True) if a == g and b == p) for p in LABELS}
                 for g in LABELS}  # fmt: skip
    return {"accuracy": acc, "macro_f1": metrics.mean([f1[lab]["f1"] for lab in LABELS]), "per_label": f1,
            "confusion": confusion}  # fmt: skip


def _variant_md(name: str, s: dict[str, Any]) -> str:
    per, conf = s["per_label"], s["confusion"]
    return (
        f"**{name}**: accuracy **{s['accuracy']:.4f}**, macro-F1 {s['macro_f1']:.4f}\n\n"
        + table(["label", "precision", "recall", "F1", "support"],
                [[lab, per[lab]["precision"], per[lab]["recall"], per[lab]["f1"], int(per[lab]["support"])]
                 for lab in LABELS])
        + "\n" + table(["gold \\ predicted", *LABELS], [[g, *(conf[g][p] for p in LABELS)] for g in LABELS]) + "\n"
    )  # fmt: skip


def run(limit: int | None = None, progress: bool = True, split: str = "dev", judge_url: str | None = None,
        judge_model: str = "local", judge_timeout: float = 300.0, judge_local: bool = False,
        **_: Any) -> SuiteResult:  # fmt: skip

    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}")
    started = datetime.now(UTC).isoformat(timespec="seconds")
    t0 = time.perf_counter()
    data = items(limit, split)
    emb = configured_embedder()
    judge: OpenAICompatibleJudge | None = None
    if judge_local:
        # The operator's local model server, exactly as a tenant's verifier asks it (CAIRN_VERIFIER_LOCAL_JUDGE).
        judge = LlamaCppJudge(timeout=judge_timeout)
        judge_url, judge_model = judge.endpoint_url, judge.model
    elif judge_url:
        judge = OpenAICompatibleJudge(judge_url, judge_model, timeout=judge_timeout)

    gold = [it["gold"] for it in data]
    preds: dict[str, list[str]] = {"lexical": [], "lexical+embedding": []}
    if judge is not None:
        preds["judge"] = []
    judge_seconds: list[float] = []
    methods: Counter[str] = Counter()
    for it in tqdm(data, desc=f"scifact claims {split}", disable=not progress):
        label, _method, reasons = _verify(it)
        preds["lexical"].append(MAP.get(label, "NEI"))
        it["lexical"] = label
        label, _method, reasons = _verify(it, embedder=emb)
        preds["lexical+embedding"].append(MAP.get(label, "NEI"))
        it["predicted"], it["verifier_label"], it["reasons"] = MAP.get(label, "NEI"), label, list(reasons)
        if judge is not None:
            j0 = time.perf_counter()
            label, method, reasons = _verify(it, embedder=emb, judge=judge)
            judge_seconds.append(time.perf_counter() - j0)
            methods[method] += 1
            preds["judge"].append(MAP.get(label, "NEI"))
            it["judge_label"], it["judge_method"] = label, method
            it["judge_reasons"] = [r for r in reasons if r.startswith("judge")]
            # One line per judged item, so a long run on a slow machine can be read (and stopped) part-way.
            tqdm.write(json.dumps({"id": it["id"], "gold": it["gold"], "judge": label, "method": method,
                                   "seconds": round(judge_seconds[-1], 1), "lexical+embedding": it["verifier_label"]}))  # fmt: skip

    variants = {name: score(gold, p) for name, p in preds.items()}
    head = variants["lexical+embedding"]
    md = (
        f"SciFact claims {split}: {len(data)} (claim, abstract) items"
        + (" (a label-balanced sample)" if limit else "")
        + "; every item through `answers.verification.verify_claim`. No NLI model ships offline; "
        "`lexical` and `lexical+embedding` are the labelled fallback, `judge` the tenant-model judge.\n\n"
        + "".join(_variant_md(name, s) for name, s in variants.items())
    )
    extra: dict[str, Any] = {}
    if judge is not None:
        extra = {"judge": {"url": judge_url, "model": judge_model, "methods": dict(methods),
                           "seconds_p50": statistics.median(judge_seconds) if judge_seconds else None,
                           "seconds_total": sum(judge_seconds)}}  # fmt: skip
        md += (
            f"Judge `{judge_model}` at `{judge_url}`: decided {methods.get('judge', 0)} of {len(data)} items "
            f"(the rest fell back to lexical+embedding: {dict(methods)}), median {extra['judge']['seconds_p50']:.1f} s "
            "per item.\n"
        )
    res = SuiteResult("verifier", {"split": split, "accuracy": head["accuracy"], "macro_f1": head["macro_f1"],
                                   "per_label": head["per_label"], "confusion": head["confusion"], "items": len(data),
                                   "variants": variants, "verifier": verifier_release(), **extra},
                      {"sample": data[:40] if judge is None else data}, md, started_at=started)  # fmt: skip
    res.plots["f1"] = _plot(variants, split)
    res.seconds = time.perf_counter() - t0
    return res


def _plot(variants: dict[str, dict[str, Any]], split: str) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.5))
    xs = range(len(LABELS))
    width = 0.8 / len(variants)
    for i, (name, s) in enumerate(variants.items()):
        ax.bar([x + (i - (len(variants) - 1) / 2) * width for x in xs], [s["per_label"][lab]["f1"] for lab in LABELS],
               width=width, label=f"{name} (acc {s['accuracy']:.2f})")  # fmt: skip
    ax.set_xticks(list(xs), LABELS)
    ax.set_ylim(0, 1)
    ax.set_ylabel("F1")
    ax.legend(fontsize=8)
    ax.set_title(f"Verifier on SciFact claims ({split})")
    return fig


def tune() -> list[tuple[float, float, float, float]]:
    """Grid over the similarity thresholds on *dev*; prints the best settings (accuracy, P(SUPPORT))."""

    emb = configured_embedder()
    data = items(None, "dev")
    feats = []
    for it in data:
        verbatim, _ = v.support_label(it["claim"], it["quote"])
        feats.append(None if verbatim == "supported" and _ == ("verbatim",) else
                     v.support_features(it["claim"], it["quote"], embedder=emb))  # fmt: skip
    gold = [it["gold"] for it in data]
    saved = v.SIM_SUPPORTED, v.SIM_RELATED, v.SIM_CONTRADICTS
    rows = []
    try:
        for sup, con in itertools.product((0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8), (0.35, 0.4, 0.45, 0.5, 0.55, 0.6)):
            v.SIM_SUPPORTED, v.SIM_CONTRADICTS = sup, con
            pred = [MAP.get("supported" if f is None else v.decide_support(f), "NEI") for f in feats]
            s = score(gold, pred)
            rows.append((s["accuracy"], s["per_label"]["SUPPORT"]["precision"], sup, con))
    finally:
        v.SIM_SUPPORTED, v.SIM_RELATED, v.SIM_CONTRADICTS = saved
    rows.sort(reverse=True)
    for acc, prec, sup, con in rows[:10]:
        print(f"accuracy {acc:.4f}  P(SUPPORT) {prec:.3f}  SIM_SUPPORTED={sup}  SIM_CONTRADICTS={con}")
    return rows


if __name__ == "__main__":
    import django

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tune", action="store_true", help="grid-search the similarity thresholds on dev")
    args = parser.parse_args()
    django.setup()
    if args.tune:
        tune()
