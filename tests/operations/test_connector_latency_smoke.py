"""Smoke test of benchmarks/connector_latency.py: one Slack sample end to end, report shape only.

No timing is asserted (speed belongs in the benchmark's JSON, not in tests).  The benchmark runs
as its own process against this session's services (DATABASE_URL / REDIS_URL from
``bin/cairn test``), with its own Celery worker and gunicorn.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository root (this file is tests/operations/...)


def test_it_measures_one_slack_event_and_revocation_and_writes_the_report(tmp_path: Path) -> None:
    out = tmp_path / "connector_latency.json"
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.connector_latency", "--events", "1", "--sources", "slack",
         "--no-plot", "--timeout", "60", "--out", str(out)],
        cwd=ROOT, env=dict(os.environ), capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads(out.read_text())
    assert {"date", "git_commit", "machine", "command", "summary", "samples_s", "errors"} <= set(report)
    assert report["errors"] == {}
    samples = report["samples_s"]["slack"]
    for kind in ("event_to_searchable", "revocation_to_enforced", "grant"):
        assert len(samples[kind]) == 1 and samples[kind][0] > 0
        assert set(report["summary"]["slack"][kind]) == {"n", "p50_s", "p95_s", "min_s", "max_s"}
