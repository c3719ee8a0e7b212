"""Operations: ingest throughput, search / verified-answer latency (p50/p95/p99), time to first
claim over the SSE stream, event -> searchable and revocation -> enforced lag, peak RSS.

Data: the 18F handbook pages (the demo wiki), ingested into a fresh evaluation tenant through the
pipeline (in-process, the worker's code).  Questions are built from page titles; every question is
asked once, so answers are cache misses.  Latencies are wall-clock in this process on this machine
(measured, never asserted).
"""

from __future__ import annotations

import json
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.test.utils import override_settings
from tqdm import tqdm

from answers.engine import answer_question, run_search
from answers.planning import RequestFilters
from connectors.demo.loader import handbook_pages, page_document
from evaluation.metrics import percentile
from evaluation.report import SuiteResult, table
from evaluation.rss import PeakRss
from evaluation.tenancy import ensure_eval_tenant
from retrieval.actions import do_enqueue_acl_update, do_enqueue_document
from retrieval.backends.base import SearchFilters
from retrieval.contracts import SourceDocument
from retrieval.models import Source
from retrieval.permissions import permission_context
from retrieval.search import hybrid_search
from retrieval.tasks import process_pending_inline
from tenants.actions import do_create_api_token
from tenants.context import tenant_context
from tenants.models import Membership


def _rss_mb_of(pred: Any) -> float:
    total = 0
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            comm = (proc / "comm").read_text().strip()
            if not pred(comm):
                continue
            for line in (proc / "status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return round(total / 1024, 1)


def _dist(values: list[float]) -> dict[str, float]:
    return {"p50": percentile(values, 50), "p95": percentile(values, 95), "p99": percentile(values, 99),
            "n": float(len(values))}  # fmt: skip


def run(limit: int | None = None, progress: bool = True, **_: Any) -> SuiteResult:
    from rest_framework.test import APIClient

    started = datetime.now(UTC).isoformat(timespec="seconds")
    t0 = time.perf_counter()
    rss = PeakRss().start()
    pages = handbook_pages()
    pages = sorted(pages, key=lambda p: p["id"])[: (limit or len(pages))]
    slug = f"eval-ops-{uuid.uuid4().hex[:8]}"  # fresh: throughput is measured on a cold tenant
    docs = [page_document(p, [["public:tenant"]]) for p in pages]
    et = ensure_eval_tenant(slug, docs, source_kind="confluence", source_name="Handbook", progress=progress)
    ingest = {"documents": et.documents, "chunks": et.chunks, "seconds": round(et.ingest_seconds, 2),
              "documents_per_s": et.documents / et.ingest_seconds if et.ingest_seconds else 0.0,
              "chunks_per_s": et.chunks / et.ingest_seconds if et.ingest_seconds else 0.0}  # fmt: skip
    perm = et.perm()
    questions = [f"how does {p['title'].lower()} work?" for p in pages]
    n_q = min(len(questions), limit or 100)
    search_ms: list[float] = []
    answer_ms: list[float] = []
    first_claim_ms: list[float] = []
    for q in tqdm(questions[:n_q], desc="latency", disable=not progress):
        with tenant_context(et.tenant.pk):
            t = time.perf_counter()
            run_search(perm, q, RequestFilters())
            search_ms.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            answer_question(perm, q + " (latency)", RequestFilters())
            answer_ms.append((time.perf_counter() - t) * 1000)
    # Time to first verified claim over the SSE endpoint, as a client sees it.
    membership = Membership.objects.get(tenant=et.tenant, user=et.user)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {do_create_api_token(membership, 'ops-eval')}")
    sse_available = True
    with override_settings(ALLOWED_HOSTS=["testserver", "localhost"]):
        for q in questions[: max(3, n_q // 5)]:
            t = time.perf_counter()
            r = client.get("/api/v1/answers/stream", {"q": q + " (stream)"})
            if r.status_code == 404 or not getattr(r, "streaming", False):
                sse_available = False
                break
            for piece in r.streaming_content:
                if b"event: claim" in piece:
                    first_claim_ms.append((time.perf_counter() - t) * 1000)
                    break
            for _ in r.streaming_content:
                pass
    # Event -> searchable, and revocation -> enforced, measured end to end in-process.
    token = "OPSLAG" + uuid.uuid4().hex[:10].upper()
    with tenant_context(et.tenant.pk):
        src = Source.objects.get(name="Handbook")
        t = time.perf_counter()
        do_enqueue_document(src, SourceDocument(external_id=f"lag-{token}", title="Lag probe", url="", media_type="text/plain",
                                                content=f"The probe code is {token}.".encode(), acl=(("public:tenant",),),
                                                source_version=1))  # fmt: skip
    process_pending_inline(et.tenant.pk)
    with tenant_context(et.tenant.pk):
        found = any(
            token in c.text for c in hybrid_search(permission_context(et.user), [token], SearchFilters(), k=5).chunks
        )
    searchable_ms = (time.perf_counter() - t) * 1000
    with tenant_context(et.tenant.pk):
        t = time.perf_counter()
        do_enqueue_acl_update(src, f"lag-{token}", (("confluence:group:nobody",),), source_version=1)
    process_pending_inline(et.tenant.pk)
    with tenant_context(et.tenant.pk):
        still = any(
            token in c.text for c in hybrid_search(permission_context(et.user), [token], SearchFilters(), k=5).chunks
        )
    revoked_ms = (time.perf_counter() - t) * 1000
    import resource

    stack_rss = rss.stop()
    m: dict[str, Any] = {
        "ingest": ingest,
        "search_ms": _dist(search_ms),
        "answer_ms": _dist(answer_ms),
        "time_to_first_claim_ms": _dist(first_claim_ms) if first_claim_ms else None,
        "sse_available": sse_available,
        "event_to_searchable_ms": round(searchable_ms, 1) if found else None,
        "revocation_to_enforced_ms": round(revoked_ms, 1) if not still else None,
        "peak_rss_mb": {"evaluation_process (web+worker code in one)": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                        "postgres_now": _rss_mb_of(lambda c: c.startswith("postgres")),
                        "redis_now": _rss_mb_of(lambda c: c.startswith("redis"))},
        # Per process group of the stack this run is connected to (evaluation/rss.py);
        # None: no such process in the run (the suite runs the web and worker code in-process).
        "stack_peak_rss": stack_rss,
        "note": "in-process (no broker hop); the Celery path adds the queue round-trip (~5 ms, PROBES.md)",
    }  # fmt: skip
    rows = [["ingest", f"{ingest['documents']} docs / {ingest['chunks']} chunks in {ingest['seconds']} s "
             f"({ingest['documents_per_s']:.2f} docs/s, {ingest['chunks_per_s']:.2f} chunks/s)"]]  # fmt: skip
    for k in ("search_ms", "answer_ms", "time_to_first_claim_ms"):
        d = m[k]
        rows.append(
            [k, "–" if not d else f"p50 {d['p50']:.0f} / p95 {d['p95']:.0f} / p99 {d['p99']:.0f} (n={int(d['n'])})"]
        )
    rows += [["event -> searchable ms", m["event_to_searchable_ms"]], ["revocation -> enforced ms", m["revocation_to_enforced_ms"]],
             ["peak RSS MB", json.dumps(m["peak_rss_mb"])]]  # fmt: skip
    rss_rows = [[k, "not running in this run"] if v is None else
                [k, v["processes"], *(f"{v[f]:.1f}" for f in ("peak_rss_sampled_mb", "sum_vmhwm_mb", "max_process_vmhwm_mb"))]
                for k, v in stack_rss.items()]  # fmt: skip
    md = (f"18F handbook, {len(pages)} pages, evaluation tenant `{slug}`.\n\n" + table(["measure", "value"], rows)
          + "\nPeak RSS of the embedded stack during the suite (MB; sampled = highest simultaneous sum of VmRSS, "
          "VmHWM = each process's own peak, summed — an upper bound, shared buffers counted per process):\n\n"
          + table(["process group", "processes", "peak RSS sampled", "sum VmHWM", "max process VmHWM"],
                  [r if len(r) == 5 else [r[0], r[1], "", "", ""] for r in rss_rows]))  # fmt: skip
    res = SuiteResult("operations", m, {}, md, started_at=started)
    res.plots["latency"] = _plot(search_ms, answer_ms)
    res.plots["rss"] = _plot_rss(stack_rss)
    res.seconds = time.perf_counter() - t0
    return res


def _plot(search_ms: list[float], answer_ms: list[float]) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.hist([search_ms, answer_ms], bins=20, label=["search", "verified answer"])
    ax.set_xlabel("ms")
    ax.legend()
    ax.set_title("Latency distribution")
    return fig


def _plot_rss(stack_rss: dict[str, Any]) -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    present = {k: v for k, v in stack_rss.items() if v}
    fig, ax = plt.subplots(figsize=(6, 3.5))
    xs = range(len(present))
    ax.bar([x - 0.2 for x in xs], [v["peak_rss_sampled_mb"] for v in present.values()], 0.4, label="peak RSS (sampled)")
    ax.bar([x + 0.2 for x in xs], [v["sum_vmhwm_mb"] for v in present.values()], 0.4, label="sum of VmHWM")
    ax.set_xticks(list(xs), list(present), rotation=15)
    ax.set_ylabel("MB")
    ax.legend()
    ax.set_title("Peak RSS of the embedded stack")
    return fig
