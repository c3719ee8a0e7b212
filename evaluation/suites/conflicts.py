"""Conflicting sources on RAMDocs (dev): accuracy as the data set defines it, abstention rate.

Every question's documents (correct, misinformation, noise) are ingested into one evaluation
tenant, each question in its own container, and the question is asked through
``answers.engine.answer_question`` restricted to that container (the tenant's writer).
Accuracy = the answer contains every gold answer and no wrong answer (case-insensitive), as in
the RAMDocs paper; an abstention is not correct.  Published (Qwen2.5-72B): prompt-based 20.6,
MADAM-RAG 26.4.
"""

from __future__ import annotations

import hashlib
import re
import time
from datetime import UTC, datetime
from typing import Any

from tqdm import tqdm

from answers.engine import answer_question
from answers.planning import RequestFilters
from evaluation.datasets import load_ramdocs
from evaluation.report import SuiteResult, table
from evaluation.tenancy import ensure_eval_tenant
from retrieval.contracts import SourceDocument
from tenants.context import tenant_context

PUBLISHED = {"prompt-based (Qwen2.5-72B, quoted)": 0.206, "Astute-RAG (quoted)": 0.208, "MADAM-RAG (quoted)": 0.264}


def norm(s: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[^\w\s]", " ", s.lower())).strip()


def contains(text: str, answer: str) -> bool:
    a = norm(answer)
    return bool(a) and f" {a} " in f" {norm(text)} "


def answer_text(resp: dict[str, Any]) -> str:
    ans = resp.get("answer") or {}
    parts = [c.get("text", "") for c in ans.get("claims") or []]
    if ans.get("conclusion"):
        parts.append(str(ans["conclusion"]))
    return " ".join(parts)


def documents(rows: list[dict[str, Any]]) -> list[SourceDocument]:
    docs = []
    for i, row in enumerate(rows):
        for j, d in enumerate(row["documents"]):
            # A few RAMDocs passages carry NUL characters, which Postgres text/jsonb cannot store.
            text = d["text"].replace("\x00", "")
            title = text.split(" ")[0:8]
            docs.append(SourceDocument(
                external_id=f"ramdocs:{i}:{j}", title=" ".join(title), url=f"https://ramdocs.eval.invalid/{i}/{j}",
                content=text.encode(), media_type="text/plain", acl=(("public:tenant",),), source_version=1,
                container=f"q{i:03d}", metadata={"doc_type": d.get("type", "")},
            ))  # fmt: skip
    return docs


def run(limit: int | None = None, progress: bool = True, **_: Any) -> SuiteResult:

    started = datetime.now(UTC).isoformat(timespec="seconds")
    t0 = time.perf_counter()
    rows = load_ramdocs(limit)
    digest = hashlib.sha256(repr([r["question"] for r in rows]).encode()).hexdigest()[:10]
    et = ensure_eval_tenant(f"eval-ramdocs-{digest}", documents(rows), progress=progress)
    perm = et.perm()
    out: list[dict[str, Any]] = []
    for i, row in enumerate(tqdm(rows, desc="ramdocs", disable=not progress)):
        with tenant_context(et.tenant.pk):
            resp = answer_question(perm, row["question"], RequestFilters(containers=(f"q{i:03d}",)))
        text = answer_text(resp)
        abst = (resp.get("answer") or {}).get("abstention")
        gold_ok = all(contains(text, g) for g in row["gold_answers"]) if row["gold_answers"] else False
        wrong = [w for w in row.get("wrong_answers") or [] if contains(text, w)]
        cited = [e for e in resp.get("evidence", []) if e.get("cited")]
        out.append({"question": row["question"], "gold": row["gold_answers"], "wrong": row.get("wrong_answers"),
                    "answer": text[:600], "abstention": (abst or {}).get("reason") if abst else None,
                    "correct": bool(gold_ok and not wrong and not abst), "said_wrong": wrong,
                    "conflict": (resp.get("conflict") or {}).get("status"), "cited": len(cited)})  # fmt: skip
    n = len(out) or 1
    acc = sum(o["correct"] for o in out) / n
    abst_rate = sum(o["abstention"] is not None for o in out) / n
    wrong_rate = sum(bool(o["said_wrong"]) for o in out) / n
    conflict_flagged = sum(o["conflict"] not in (None, "none") for o in out) / n
    md = (
        f"RAMDocs dev, {len(out)} questions ({et.documents} documents in evaluation tenant `{et.tenant.slug}`), "
        "answered by `answers.engine.answer_question` restricted to each question's documents.\n\n"
        + table(
            ["metric", "value"],
            [
                ["accuracy (all gold, no wrong)", acc],
                ["abstention rate", abst_rate],
                ["answers stating a wrong answer", wrong_rate],
                ["conflict reported", conflict_flagged],
            ],
        )  # fmt: skip
        + "\nPublished accuracy: "
        + ", ".join(f"{k} {v:.3f}" for k, v in PUBLISHED.items())
        + "\n"
    )
    res = SuiteResult("conflicts", {"accuracy": acc, "abstention_rate": abst_rate, "wrong_answer_rate": wrong_rate,
                                    "conflict_reported_rate": conflict_flagged, "questions": len(out),
                                    "published": PUBLISHED},
                      {"items": out}, md, started_at=started)  # fmt: skip
    res.plots["summary"] = _plot(acc, abst_rate, wrong_rate)
    res.seconds = time.perf_counter() - t0
    return res


def _plot(acc: float, abst: float, wrong: float) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.5))
    names = ["Cairn accuracy", "Cairn abstention", "Cairn wrong answer", *PUBLISHED]
    vals = [acc, abst, wrong, *PUBLISHED.values()]
    ax.barh(names[::-1], vals[::-1], color=(["tab:gray"] * len(PUBLISHED) + ["tab:blue"] * 3))
    ax.set_xlim(0, 1)
    ax.set_title("RAMDocs (dev)")
    return fig
