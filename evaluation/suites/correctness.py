"""Answer correctness on the demo tenant against the labelled set ``evaluation/data/correctness.jsonl``.

The demo corpus (18F handbook wiki, the ENG space with the design seed's worked examples, all 20 SEC
10-Q filings, the second tenant's wiki) is loaded through the real connectors
(``evaluation.demo_corpus``); each labelled question is asked as its labelled user
(alice / bob / carol in acme, mallory in globex) through ``answers.followups.turn_stages``, the code
behind ``POST /api/v1/answers`` and the answer stream, a follow-up as a turn of the same conversation.
Answer caching is off for the run, so every turn is computed and timed.

Reported per split (dev, test), overall and per category, worst category first (scoring rules in
``evaluation.correctness_scoring``; none of them uses the verifier under test):

* ``answer_correctness``: answerable turns with every gold fact stated and no labelled wrong fact;
* ``abstention_recall`` / ``abstention_precision``: on turns that must abstain (no answer in the corpus,
  a restricted page asked by a non-reader); ``answered_rate_on_answerable``;
* ``claim_relevance_precision``: delivered claims that cite a gold document or state a gold fact;
* ``retrieval_recall@10``: the gold passage among the first 10 chunks the engine ranked for this turn
  (read from the reranker's ``output_rank`` in the trace; a turn that reused earlier evidence is
  retrieved again with ``answers.engine.retrieve`` for its resolved question);
* ``wrong_entity_rate``: answered turns citing a document about another company/product/corpus;
* ``conflict_false_positive_rate``: answered turns showing a conflict (the set labels none);
* ``raw_markup_rate``: delivered claims carrying source markup;
* ``zero_result_rate`` and ``zero_results_by_cause`` (the abstention reason of those turns);
* ``first_claim_ms`` / ``full_answer_ms`` p50 and p95 (engine time in this process).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.test.utils import override_settings
from tqdm import tqdm

from answers import engine, followups
from answers.query_parser import QueryError
from core.errors import ApiError
from evaluation import correctness_scoring as cs
from evaluation.demo_corpus import load_demo_corpus
from evaluation.report import SuiteResult, table
from retrieval.models import Chunk
from retrieval.permissions import permission_context
from tenants.context import tenant_context

DATA = Path(__file__).resolve().parent.parent / "data" / "correctness.jsonl"
SPLITS = ("dev", "test")


def load_items(path: Path = DATA) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def select(
    items: list[dict[str, Any]], split: str, limit: int | None, ids: Iterable[str] | None
) -> list[dict[str, Any]]:
    """``split`` dev / test / all; ``limit``: round-robin over categories (a slice that still has every
    category); ``ids``: exactly these items."""
    if ids is not None:
        wanted = list(ids)
        by_id = {i["id"]: i for i in items}
        missing = [i for i in wanted if i not in by_id]
        if missing:
            raise ValueError(f"unknown item ids: {missing}")
        return [by_id[i] for i in wanted]
    chosen = [i for i in items if split in ("all", i["split"])]
    if not limit:
        return chosen
    queues: dict[str, list[dict[str, Any]]] = {}
    for item in chosen:
        queues.setdefault(item["category"], []).append(item)
    out: list[dict[str, Any]] = []
    while len(out) < limit and any(queues.values()):
        for cat in cs.CATEGORIES:
            if queues.get(cat) and len(out) < limit:
                out.append(queues[cat].pop(0))
    return out


def _docs_of(items: list[dict[str, Any]]) -> tuple[set[str], set[str]]:
    pages: set[str] = set()
    pdfs: set[str] = set()
    for item in items:
        for turn in item["turns"]:
            for p in turn["passages"]:
                kind, _, rest = p["doc"].partition(":")
                if kind in ("handbook", "globex"):
                    pages.add(rest)
                elif kind == "eng":
                    pages.add(p["doc"])
                elif kind == "sec10q":
                    pdfs.add(rest)
    return pages, pdfs


def _ask(perm: Any, question: str, conversation_id: str | None) -> tuple[dict[str, Any], float | None, float]:
    """One turn through the answer path of the REST API; (response, ms to first claim, ms to done)."""

    t0 = time.perf_counter()
    first: float | None = None
    response: dict[str, Any] | None = None
    try:
        for event in followups.turn_stages(perm, question, engine.RequestFilters(), conversation_id):
            if event.kind == "claim" and first is None:
                first = (time.perf_counter() - t0) * 1000
            if event.kind == "done":
                response = event.data
    except (QueryError, ApiError) as exc:  # a coded refusal is an abstention with that code
        code = getattr(exc, "code", type(exc).__name__)
        response = {"answer": {"claims": [], "abstention": {"reason": str(code), "message": str(exc)}},
                    "results": [], "evidence": []}  # fmt: skip
    total = (time.perf_counter() - t0) * 1000
    return response or {"answer": {"claims": [], "abstention": {"reason": "no_done_event"}}}, first, total


def _ranked_in_trace(response: dict[str, Any], doc_keys: dict[int, str]) -> list[tuple[str, str]] | None:
    """The engine's own top 10 (its reranker records every chunk's ``output_rank`` in the trace), or
    None when the turn did not retrieve (a follow-up on reused evidence) or nothing was reranked."""

    signals = (((response.get("trace") or {}).get("retrieval") or {}).get("rerank") or {}).get("signals") or {}
    ranked = sorted((sig.get("output_rank", 1e9), int(cid)) for cid, sig in signals.items())[:10]
    if not ranked:
        return None
    rows = dict(Chunk.objects.filter(pk__in=[cid for _, cid in ranked]).values_list("pk", "document_id"))
    texts = dict(Chunk.objects.filter(pk__in=[cid for _, cid in ranked]).values_list("pk", "text"))
    return [(doc_keys.get(rows.get(cid, -1), ""), texts.get(cid, "")) for _, cid in ranked]


def _ranked(perm: Any, question: str, doc_keys: dict[int, str]) -> list[tuple[str, str]]:
    """The same retrieval run again (only for turns whose trace has no ranking of their own)."""

    try:
        plan = engine.build_plan(question, datetime.now(UTC), engine.RequestFilters())
    except QueryError:
        return []  # the engine refused the question too (scored as its abstention)
    chunks = engine.retrieve(perm, plan).chunks
    return [(doc_keys.get(c.document_id, ""), c.text) for c in chunks[:10]]


def ask_items(items: list[dict[str, Any]], corpus: Any, progress: bool = True) -> list[dict[str, Any]]:
    """Every turn of every item, asked and scored (one row per turn)."""

    rows: list[dict[str, Any]] = []
    overrides = {**settings.CAIRN, "ANSWER_CACHE_SECONDS": 0, "LATEST_CACHE_SECONDS": 0}
    with override_settings(CAIRN=overrides):
        for item in tqdm(items, desc="correctness", unit="q", disable=not progress):
            tid, user = corpus.users[item["user"]]
            doc_keys = corpus.doc_keys.get(tid, {})
            with tenant_context(tid):
                perm = permission_context(user)
            conversation: str | None = None
            for n, turn in enumerate(item["turns"]):
                with tenant_context(tid):
                    response, first_ms, full_ms = _ask(perm, turn["question"], conversation)
                conversation = response.get("conversation_id") or conversation
                followup = (response.get("trace") or {}).get("followup") or {}
                resolved = followup.get("resolved_question") or turn["question"]
                recall = None
                expect = cs.turn_expect(item, turn)
                if expect == "answer" and turn["passages"]:
                    with tenant_context(tid):
                        ranked = _ranked_in_trace(response, doc_keys)
                        if ranked is None:
                            ranked = _ranked(perm, resolved, doc_keys)
                        recall = cs.gold_in_top(turn, ranked)
                s = cs.score_turn(item, turn, response, doc_keys)
                abst = (response.get("answer") or {}).get("abstention")
                rows.append({
                    "id": item["id"], "turn": n + 1, "split": item["split"], "category": item["category"],
                    "user": item["user"], "expect": expect, "question": turn["question"],
                    "resolved_question": resolved if resolved != turn["question"] else None,
                    "answered": s.answered, "correct": s.correct, "facts_stated": s.facts_stated,
                    "facts_total": s.facts_total, "wrong_stated": s.wrong_stated, "claims": s.claims,
                    "relevant_claims": s.relevant_claims, "markup_claims": s.markup_claims,
                    "wrong_entity": s.wrong_entity, "cited": s.cited_keys, "conflict_shown": s.conflict_shown,
                    "abstention": (abst or {}).get("reason") if abst else None,
                    "zero_results": not response.get("results"), "recall@10": recall,
                    "first_claim_ms": None if first_ms is None else round(first_ms, 1), "full_answer_ms": round(full_ms, 1),
                    "claim_texts": [t[:300] for t in cs.claim_texts(response)[:4]],
                    # The evidence strength the weak-evidence bar was applied to (docs/evaluation.md: its tuning).
                    "strength": ((response.get("trace") or {}).get("threshold") or {}).get("strength"),
                    # A generative writer's verified-claim-less draft followed by the extractive writer (engine).
                    "writer_fallback": ((response.get("trace") or {}).get("writer") or {}).get("fallback"),
                })  # fmt: skip
    return rows


def _ask_share(args: tuple[list[dict[str, Any]], Any]) -> list[dict[str, Any]]:
    from django.db import connections

    connections.close_all()  # a forked child opens its own connections
    items, corpus = args
    return ask_items(items, corpus, progress=False)


def ask_parallel(items: list[dict[str, Any]], corpus: Any, workers: int, progress: bool) -> list[dict[str, Any]]:
    """``ask_items`` in ``workers`` forked processes (items are independent; a conversation stays in one
    process).  Rows come back in item order.  Timings then include the other workers' CPU contention."""
    if workers <= 1 or len(items) < 2:
        return ask_items(items, corpus, progress)
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from django.db import connections

    shares = [items[k::workers] for k in range(workers)]
    connections.close_all()
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork")) as pool:
        parts = list(pool.map(_ask_share, [(share, corpus) for share in shares]))
    order = {item["id"]: n for n, item in enumerate(items)}
    return sorted((r for part in parts for r in part), key=lambda r: (order[r["id"]], r["turn"]))


def _rate(num: int | float, den: int) -> float | None:
    return round(num / den, 4) if den else None


def slice_metrics(rows: list[dict[str, Any]]) -> dict[str, Any]:
    answerable = [r for r in rows if r["expect"] == "answer"]
    must_abstain = [r for r in rows if r["expect"] == "abstain"]
    answered = [r for r in rows if r["answered"]]
    abstained = [r for r in rows if not r["answered"]]
    claims = sum(r["claims"] for r in answered)
    recall = [r["recall@10"] for r in rows if r["recall@10"] is not None]
    decidable = [r for r in answered if r["wrong_entity"] is not None]
    zero = [r for r in rows if r["zero_results"]]
    firsts = [r["first_claim_ms"] for r in rows if r["first_claim_ms"] is not None]
    fulls = [r["full_answer_ms"] for r in rows]
    return {
        "turns": len(rows), "items": len({r["id"] for r in rows}),
        "answerable_turns": len(answerable), "must_abstain_turns": len(must_abstain),
        "correctness": _rate(sum(r["correct"] for r in rows), len(rows)),
        "answer_correctness": _rate(sum(r["correct"] for r in answerable), len(answerable)),
        "answered_rate_on_answerable": _rate(sum(r["answered"] for r in answerable), len(answerable)),
        "abstention_recall": _rate(sum(not r["answered"] for r in must_abstain), len(must_abstain)),
        "abstention_precision": _rate(sum(r["expect"] == "abstain" for r in abstained), len(abstained)),
        "claim_relevance_precision": _rate(sum(r["relevant_claims"] for r in answered), claims),
        "retrieval_recall@10": _rate(sum(bool(x) for x in recall), len(recall)),
        "wrong_entity_rate": _rate(sum(bool(r["wrong_entity"]) for r in decidable), len(decidable)),
        "conflict_false_positive_rate": _rate(sum(r["conflict_shown"] for r in answered), len(answered)),
        "raw_markup_rate": _rate(sum(r["markup_claims"] for r in answered), claims),
        "zero_result_rate": _rate(len(zero), len(rows)),
        "zero_results_by_cause": dict(Counter(r["abstention"] or "answered" for r in zero)),
        "abstentions_by_reason": dict(Counter(r["abstention"] or "no_claims" for r in abstained)),
        "first_claim_ms": {"p50": cs.percentile(firsts, 0.5), "p95": cs.percentile(firsts, 0.95), "n": len(firsts)},
        "full_answer_ms": {"p50": cs.percentile(fulls, 0.5), "p95": cs.percentile(fulls, 0.95), "n": len(fulls)},
    }  # fmt: skip


def aggregate(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for split in SPLITS:
        part = [r for r in rows if r["split"] == split]
        if not part:
            continue
        per = [{"category": c, **slice_metrics([r for r in part if r["category"] == c])}
               for c in cs.CATEGORIES if any(r["category"] == c for r in part)]  # fmt: skip
        per.sort(key=lambda m: (m["correctness"] if m["correctness"] is not None else 2.0, m["category"]))
        out[split] = {"overall": slice_metrics(part), "per_category": per}
    return out


GOALS = {"answer_correctness": ">= 0.75", "wrong_entity_rate": "0", "abstention_recall": ">= 0.90",
         "answered_rate_on_answerable": ">= 0.85", "conflict_false_positive_rate": "<= 0.05", "raw_markup_rate": "0"}  # fmt: skip
COLUMNS = ("correctness", "answer_correctness", "answered_rate_on_answerable", "abstention_recall",
           "abstention_precision", "claim_relevance_precision", "retrieval_recall@10", "wrong_entity_rate",
           "conflict_false_positive_rate", "raw_markup_rate", "zero_result_rate")  # fmt: skip


def _fmt(v: Any) -> Any:
    return "–" if v is None else v


def markdown(splits: dict[str, Any], corpus_line: str) -> str:
    md = corpus_line + "\n\n"
    for split, data in splits.items():
        o = data["overall"]
        md += f"## {split} split: {o['items']} questions, {o['turns']} turns\n\n"
        md += table(["metric", "value", "goal (test split, issue 14)"],
                    [[k, _fmt(o[k]), GOALS.get(k, "")] for k in COLUMNS]
                    + [["first claim ms p50 / p95", f"{_fmt(o['first_claim_ms']['p50'])} / {_fmt(o['first_claim_ms']['p95'])}", ""],
                       ["full answer ms p50 / p95", f"{_fmt(o['full_answer_ms']['p50'])} / {_fmt(o['full_answer_ms']['p95'])}", ""],
                       ["zero results by cause", json.dumps(o["zero_results_by_cause"]), ""],
                       ["abstentions by reason", json.dumps(o["abstentions_by_reason"]), ""]])  # fmt: skip
        md += "\nPer category, worst first:\n\n"
        md += table(["category", "turns", "correct", "answered (answerable)", "abstained (must)", "claim relevance",
                     "recall@10", "wrong entity", "markup", "conflict FP", "full ms p50"],
                    [[m["category"], m["turns"], _fmt(m["correctness"]), _fmt(m["answered_rate_on_answerable"]),
                      _fmt(m["abstention_recall"]), _fmt(m["claim_relevance_precision"]), _fmt(m["retrieval_recall@10"]),
                      _fmt(m["wrong_entity_rate"]), _fmt(m["raw_markup_rate"]), _fmt(m["conflict_false_positive_rate"]),
                      _fmt(m["full_answer_ms"]["p50"])] for m in data["per_category"]])  # fmt: skip
        md += "\n"
    return md


def run(limit: int | None = None, progress: bool = True, split: str = "all", fresh: bool = False,
        ids: Iterable[str] | None = None, workers: int = 1, full_corpus: bool = False, data: Path | None = None,
        **_: Any) -> SuiteResult:  # fmt: skip

    started = datetime.now(UTC).isoformat(timespec="seconds")
    t0 = time.perf_counter()
    path = data or DATA
    items = select(load_items(path), split, limit, ids)
    # A selection searches only its own documents unless asked otherwise: quick to load, but an easier search
    # than the whole corpus, so a selection's figures compare with the headline ones only with full_corpus.
    if (limit or ids is not None) and not full_corpus:
        pages, pdfs = _docs_of(items)
        corpus = load_demo_corpus(pages=pages, pdfs=pdfs, progress=progress, fresh=fresh)
    else:
        corpus = load_demo_corpus(progress=progress, fresh=fresh)
    load_s = time.perf_counter() - t0
    rows = ask_parallel(items, corpus, workers, progress)
    splits = aggregate(rows)
    n_docs = {t.slug: len(corpus.documents.get(t.pk, {})) for t in corpus.tenants.values()}
    corpus_line = (
        f"Demo corpus through the connectors: {n_docs} labelled documents indexed "
        f"({'synced now' if corpus.synced_now else 'reused'}, {load_s:.0f} s)"
        + (f"; not indexed: {corpus.failed_documents}" if corpus.failed_documents else "")
        + f". {len(items)} labelled questions asked through `answers.followups.turn_stages` as their labelled users."
    )
    metrics = {"splits": splits, "selection": {"split": split, "limit": limit, "ids": list(ids) if ids else None,
                                               "workers": workers, "full_corpus": full_corpus},
               "corpus": {"documents": n_docs, "synced_now": corpus.synced_now, "load_seconds": round(load_s, 1),
                          "not_indexed": corpus.failed_documents}, "goals": GOALS,
               "dataset": {"path": _shown(path), "items": len(items)}}  # fmt: skip
    res = SuiteResult("correctness", metrics, {"turns": rows}, markdown(splits, corpus_line), started_at=started)
    res.plots["per_category"] = _plot(splits)
    res.seconds = time.perf_counter() - t0
    return res


def _shown(path: Path) -> str:
    """The question file as the report names it: relative to the project when it lies inside it."""
    resolved = path.resolve()
    base = Path(settings.BASE_DIR).resolve()
    return str(resolved.relative_to(base)) if resolved.is_relative_to(base) else str(resolved)


def _plot(splits: dict[str, Any]) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cats = [c for c in cs.CATEGORIES if any(m["category"] == c for d in splits.values() for m in d["per_category"])]
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(cats) + 1.5))
    height = 0.8 / max(len(splits), 1)
    for k, (split, data) in enumerate(splits.items()):
        by = {m["category"]: m["correctness"] or 0.0 for m in data["per_category"]}
        ax.barh([i + k * height for i in range(len(cats))], [by.get(c, 0.0) for c in cats], height=height, label=split)
    ax.set_yticks([i + height * (len(splits) - 1) / 2 for i in range(len(cats))], cats)
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of turns correct (answerable: all gold facts; must-abstain: abstained)")
    ax.set_title("Correctness per category (demo tenant, labelled set)")
    ax.legend(loc="lower right")
    return fig
