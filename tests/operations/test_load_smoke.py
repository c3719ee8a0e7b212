"""Smoke test of benchmarks/load_soak.py: a 6 s sweep and a 4 s soak at concurrency 4, zero errors.

No speed is asserted (speed belongs in the benchmark's JSON).  The generator runs as its own process
against this session's services (DATABASE_URL / REDIS_URL from ``bin/cairn test``) with its own Celery
worker and gunicorn (2 workers x 8 threads, as ``bin/cairn run``), seeds three tenants through the
real pipeline, and checks every result URL against the requesting user.  This test then checks the
documents the users were served independently, in the database: each one is in the user's own tenant
(read under that tenant's RLS) and its stored CNF is satisfied by the principals the user was given.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from retrieval.models import Document
from tenants.context import tenant_context

ROOT = Path(__file__).resolve().parents[2]  # the repository root (this file is tests/operations/...)
# The principals each seeded role holds (besides its own user principal), as the benchmark grants them.
PRINCIPALS = {
    "admin": {"public:tenant", "confluence:group:staff", "confluence:group:secret"},
    "member": {"public:tenant", "confluence:group:staff"},
    "guest": {"public:tenant"},
}


def test_it_serves_mixed_traffic_from_three_tenants_without_errors_or_foreign_results(tmp_path: Path) -> None:
    out = tmp_path / "load_soak.json"
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.load_soak", "--concurrency", "4", "--phase-seconds", "6",
         "--warmup-requests-seconds", "0", "--soak-seconds", "4", "--soak-concurrency", "4",
         "--sample-seconds", "1", "--warmup-seconds", "0", "--docs-per-tenant", "10", "--pool-size", "60",
         "--no-plot", "--out", str(out)],
        cwd=ROOT, env=dict(os.environ), capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["failure"] is None
    assert {"date", "git_commit", "machine", "command", "config", "seed", "users", "ingestion", "sweep", "soak",
            "errors_total", "leak_check"} <= set(report)  # fmt: skip
    assert report["errors_total"] == 0
    (phase,) = report["sweep"]
    assert phase["concurrency"] == 4 and phase["errors"] == 0 and phase["error_kinds"] == []
    assert set(phase["requests_by_tenant"]) == {"handbook", "sci-a", "sci-b"}
    assert phase["server"]["cpu_s"]["gunicorn"] > 0  # the server's CPU per request is measured, not assumed
    for endpoint in ("search", "answers"):
        stats = phase["endpoints"][endpoint]
        assert stats["requests"] > 0 and stats["errors"] == 0
        assert set(stats["latency_s"]) == {"p50", "p95", "p99", "mean", "max"}
        assert stats["latency_s"]["p50"] <= stats["latency_s"]["p95"] <= stats["latency_s"]["p99"]
        assert 0 <= stats["cache_hit_ratio"] <= 1
    soak = report["soak"]
    assert soak["errors"] == 0 and soak["memory_samples"]
    for name in ("gunicorn worker 1", "gunicorn worker 2", "celery worker (main)", "postgres (all processes)",
                 "redis"):  # fmt: skip
        assert soak["memory"][name]["end_mb"] > 0, name

    leak = report["leak_check"]
    assert leak["violation_count"] == 0, leak["violations"]
    assert leak["results_checked"] > 0
    served = {k: ids for k, ids in leak["returned_document_ids"].items() if ids}
    assert len({report["users"][k]["tenant"] for k in served}) == 3
    for key, ids in served.items():
        user = report["users"][key]
        held = PRINCIPALS[user["role"]]
        with tenant_context(user["tenant_id"]):
            docs = list(Document.objects.filter(pk__in=ids).select_related("acl_set"))
        assert len(docs) == len(ids), f"{key} was served documents outside its tenant"
        for doc in docs:
            clauses = doc.acl_set.clauses
            assert clauses and all(set(clause) & held for clause in clauses), (key, doc.url, clauses)
