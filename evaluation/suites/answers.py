"""Enterprise answers on the SEC 10-Q set (dev 97 questions over 20 PDFs).

The PDFs go through the ingestion pipeline as a SharePoint-like library (version label
"2023 Q3" etc., dates from the filing quarter) and every question is asked through
``answers.engine.answer_question``.  Measured:

* source-document recall: share of answered questions whose cited documents include one that
  matches the question's source glob (``*2023 Q3 AAPL*``);
* citation support precision: share of kept claims whose quoted passage supports them, judged by
  ``answers.support.support_label``.  Not a headline: for the extractive writer a claim *is* its
  quote, so it is 1.0 by construction; it stays in the JSON (``by_construction``) and a sample is listed
  for human review.  Whether answers are right is the ``correctness`` suite;
* abstention rate;
* "latest / most recent" questions: share answered from the company's latest filing.
"""

from __future__ import annotations

import fnmatch
import hashlib
import re
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tqdm import tqdm

from answers.engine import answer_question
from answers.planning import RequestFilters
from answers.support import support_label
from evaluation.datasets import load_sec10q
from evaluation.report import SuiteResult, table
from evaluation.tenancy import ensure_eval_tenant
from retrieval.contracts import SourceDocument
from retrieval.models import Document
from tenants.context import tenant_context

_Q_END = {"Q1": (3, 31), "Q2": (6, 30), "Q3": (9, 30), "Q4": (12, 31)}
LATEST = re.compile(r"\b(latest|most recent|newest|current)\b", re.I)


def _first_pages(path: Path, pages: int) -> bytes:
    """The filing cut to its first pages (still a PDF): smoke runs stay small."""
    import io

    from pypdf import PdfReader, PdfWriter

    reader, writer = PdfReader(str(path)), PdfWriter()
    for page in reader.pages[:pages]:
        writer.add_page(page)
    buf = io.BytesIO()
    writer.write(buf)
    return buf.getvalue()


def pdf_document(path: Path, max_pages: int | None = None) -> SourceDocument:
    year, quarter, ticker = path.stem.split(" ")[:3]
    month, day = _Q_END[quarter]
    when = datetime(int(year), month, day, tzinfo=UTC)
    return SourceDocument(
        external_id=f"sec10q:{path.name}", title=f"{ticker} Form 10-Q {year} {quarter}",
        url=f"https://library.eval.invalid/finance/{path.name.replace(' ', '%20')}",
        content=_first_pages(path, max_pages) if max_pages else path.read_bytes(),
        media_type="application/pdf", acl=(("public:tenant",),), source_version=1, container="finance",
        updated_at=when, created_at=when, version_label=f"{year} {quarter}",
        metadata={"file": path.name, "ticker": ticker},
    )  # fmt: skip


def _ticker(glob: str) -> str:
    m = re.search(r"(AAPL|AMZN|INTC|MSFT|NVDA)", glob)
    return m.group(1) if m else ""


def run(limit: int | None = None, progress: bool = True, **_: Any) -> SuiteResult:

    started = datetime.now(UTC).isoformat(timespec="seconds")
    t0 = time.perf_counter()
    rows, pdfs = load_sec10q(limit)
    if limit:
        # Smoke runs: only the filings the selected questions point at (at most two).
        wanted = [p for p in pdfs if any(fnmatch.fnmatch(p.name, r["Source Docs"]) for r in rows)]
        pdfs = sorted(wanted, key=lambda p: p.name, reverse=True)[:1]
        rows = [r for r in rows if any(fnmatch.fnmatch(p.name, r["Source Docs"]) for p in pdfs)] or rows[:1]
    names = "|".join(p.name for p in pdfs) + f"|{limit}"
    slug = "eval-sec10q-" + ("all" if not limit else hashlib.sha256(names.encode()).hexdigest()[:10])
    max_pages = 4 * limit if limit else None
    et = ensure_eval_tenant(slug, [pdf_document(p, max_pages) for p in pdfs], source_kind="sharepoint",
                            source_name="Finance library", authority_tier=0, progress=progress)  # fmt: skip
    perm = et.perm()
    with tenant_context(et.tenant.pk):
        files = {d: m.get("file", "") for d, m in Document.objects.values_list("id", "metadata")}
    latest_by_ticker: dict[str, str] = {}
    for p in sorted(pdfs, key=lambda p: p.name):
        latest_by_ticker[p.stem.split(" ")[2]] = p.name
    items: list[dict[str, Any]] = []
    review: list[dict[str, Any]] = []
    claims_total = claims_supported = 0
    for row in tqdm(rows, desc="10-Q questions", disable=not progress):
        q = row["Question"]
        with tenant_context(et.tenant.pk):
            resp = answer_question(perm, q, RequestFilters())
        ans = resp.get("answer") or {}
        abst = ans.get("abstention")
        ev = {e["id"]: e for e in resp.get("evidence", [])}
        cited_files = sorted({files.get(ev[c["evidence_id"]]["document_id"], "") for cl in ans.get("claims") or []
                              for c in cl.get("citations", []) if c.get("evidence_id") in ev})  # fmt: skip
        glob = row["Source Docs"]
        hit = any(fnmatch.fnmatch(f, glob) for f in cited_files)
        for cl in ans.get("claims") or []:
            for c in cl.get("citations", []):
                label, reasons = support_label(cl.get("text", ""), c.get("quote", ""))
                claims_total += 1
                claims_supported += label == "supported"
                if len(review) < 25:
                    review.append({"question": q, "claim": cl.get("text", ""), "quote": c.get("quote", ""),
                                   "label": label, "reasons": list(reasons)})  # fmt: skip
        is_latest = bool(LATEST.search(q))
        tick = _ticker(glob) or next((t for t in latest_by_ticker if t in q.upper()), "")
        from_latest = bool(cited_files) and latest_by_ticker.get(tick, "") in cited_files
        items.append({"question": q, "glob": glob, "type": row.get("Question Type", ""), "cited_files": cited_files,
                      "source_hit": hit, "abstention": (abst or {}).get("reason") if abst else None,
                      "latest_question": is_latest, "answered_from_latest": from_latest if is_latest else None})  # fmt: skip
    answered = [i for i in items if i["abstention"] is None]
    n = len(items) or 1
    latest_qs = [i for i in answered if i["latest_question"]]
    m = {
        "questions": len(items),
        "abstention_rate": 1 - len(answered) / n,
        "source_document_recall": (sum(i["source_hit"] for i in answered) / len(answered)) if answered else 0.0,
        "source_document_recall_all_questions": sum(i["source_hit"] for i in items) / n,
        "by_construction": {"citation_support_precision": claims_supported / claims_total if claims_total else 0.0,
                            "claims_checked": claims_total,
                            "why": "an extractive claim is its own quote; see the correctness suite"},
        "latest_questions_answered": len(latest_qs),
        "latest_answered_from_latest_filing": (sum(bool(i["answered_from_latest"]) for i in latest_qs) / len(latest_qs))
        if latest_qs else None,
        "filings": len(pdfs), "documents": et.documents, "chunks": et.chunks,
    }  # fmt: skip
    md = (
        f"SEC 10-Q dev: {len(items)} questions over {len(pdfs)} filings ({et.chunks} chunks), answered by "
        "`answers.engine.answer_question`.\n\n"
        + table(["metric", "value"], [[k, v if v is not None else "–"] for k, v in m.items() if k != "by_construction"])
        + f"\nCitation support precision {m['by_construction']['citation_support_precision']:.4f} over "
        f"{m['by_construction']['claims_checked']} claims is true by construction for the extractive writer (kept in "
        "the JSON, not a result); answer correctness is measured by `manage.py evaluate --suite correctness`.\n"
        + "\nCitation sample for human review (claim | quote | verifier label):\n\n"
        + "".join(f"- {r['claim'][:160]!r} | {r['quote'][:160]!r} | {r['label']}\n" for r in review[:15])
    )
    res = SuiteResult("answers", m, {"items": items, "review_sample": review}, md, started_at=started)
    res.plots["summary"] = _plot(m)
    res.seconds = time.perf_counter() - t0
    return res


def _plot(m: dict[str, Any]) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = ["abstention_rate", "source_document_recall", "latest_answered_from_latest_filing"]
    fig, ax = plt.subplots(figsize=(7, 3))
    ax.barh(keys[::-1], [m[k] or 0.0 for k in keys][::-1])
    ax.set_xlim(0, 1)
    ax.set_title("SEC 10-Q answers (dev)")
    return fig
