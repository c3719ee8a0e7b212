"""Smoke versions of every evaluation suite: few queries, small data, real stack.

They prove the harness works end to end (data -> evaluation tenant through the ingestion
pipeline -> metrics -> JSON + PNG + Markdown with the release identity).  They assert what must
hold on any machine, never a speed.  The full runs are `manage.py evaluate --suite …`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command


def _run(suite: str, tmp_path: Path, **opts: Any) -> dict[str, Any]:
    call_command("evaluate", suite=suite, out=str(tmp_path), no_progress=True, **opts)
    latest = tmp_path / "latest"
    data = json.loads((latest / f"{suite}.json").read_text())
    assert data["suite"] == suite
    assert data["release"]["embedder"]["name"] and data["release"]["reranker"]["name"]
    assert "RERANKER_API_KEY" not in data["release"]["settings"]
    assert data["command"].startswith("manage.py evaluate")
    assert (latest / f"{suite}.md").read_text().startswith(f"# Evaluation: {suite}")
    pngs = list(latest.glob(f"{suite}_*.png"))
    assert pngs and all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
    assert list((tmp_path / suite).glob("*/" + f"{suite}.json")), "the timestamped copy is kept too"
    return data


def test_it_runs_the_retrieval_suite_on_a_scifact_slice(tmp_path: Path) -> None:
    data = _run("retrieval", tmp_path, limit=2)
    systems = data["metrics"]["systems"]
    assert set(systems) >= {"lexical", "vector", "hybrid_rrf", "hybrid_rerank", "reference_bm25s"}
    # ~40 documents: every system must find the judged documents somewhere in its top 100.
    for name in ("hybrid_rrf", "hybrid_rerank", "reference_bm25s"):
        assert systems[name]["recall@100"] == 1.0, name
        assert 0.0 < systems[name]["ndcg@10"] <= 1.0
    assert data["metrics"]["corpus"]["chunks"] >= data["metrics"]["corpus"]["documents"] > 15


def test_it_runs_the_reranker_suite_on_one_dl19_query(tmp_path: Path) -> None:
    data = _run("reranker", tmp_path, limit=1, depth=12)
    systems = data["metrics"]["systems"]
    assert "BM25 (input order)" in systems and "minilm-fusion (default)" in systems
    assert all(0.0 <= s["ndcg@10"] <= 1.0 for s in systems.values())
    assert data["metrics"]["not_configured"] == ["onnx cross-encoder", "http cross-encoder"]


def test_it_runs_the_verifier_suite_on_every_label(tmp_path: Path) -> None:
    data = _run("verifier", tmp_path, limit=9)
    per = data["metrics"]["per_label"]
    assert {k: int(v["support"]) for k, v in per.items()} == {"SUPPORT": 3, "CONTRADICT": 3, "NEI": 3}
    assert 0.0 <= data["metrics"]["accuracy"] <= 1.0


def test_it_runs_the_conflicts_suite_on_ramdocs(tmp_path: Path) -> None:
    data = _run("conflicts", tmp_path, limit=2)
    assert data["metrics"]["questions"] == 2
    assert 0.0 <= data["metrics"]["abstention_rate"] <= 1.0
    assert len(data["details"]["items"]) == 2


@pytest.mark.slow
def test_it_runs_the_enterprise_answers_suite_on_a_filing(tmp_path: Path) -> None:
    data = _run("answers", tmp_path, limit=1)
    m = data["metrics"]
    assert m["questions"] >= 1 and m["filings"] == 1 and m["chunks"] > 3
    assert 0.0 <= m["abstention_rate"] <= 1.0


def test_it_finds_no_leaks_and_proves_readers_find_their_canaries(tmp_path: Path) -> None:
    data = _run("leaks", tmp_path, limit=72)
    m = data["metrics"]
    assert m["queries"] == 72
    assert m["leaks"] == 0, data["details"]["leaks"]
    assert set(m["per_channel"]) >= {"slack_private", "slack_channel", "portal_results", "portal_stream"}
    assert sum(m["per_channel"].values()) == 72 and min(m["per_channel"].values()) > 0
    assert set(m["leaks_per_channel"].values()) == {0}
    # Every path really answered (a 403 or a failed job would make "no leaks" meaningless).
    assert set(m["non_200_per_channel"].values()) == {0}, m["non_200_per_channel"]
    assert m["slack_outcomes"].get("slack_private:answered"), m["slack_outcomes"]
    assert any(k.startswith("slack_channel:") for k in m["slack_outcomes"])
    paths = ("slack_private", "slack_channel", "portal_results", "portal_stream")
    assert all(m["responses_with_own_canary"][p] > 0 for p in paths), m["responses_with_own_canary"]
    found = m["reader_found_own_canaries"]
    assert found["alice"] and found["alice"] > 0, "the suite would be vacuous"


def test_it_measures_operations(tmp_path: Path) -> None:
    data = _run("operations", tmp_path, limit=2)
    m = data["metrics"]
    assert m["ingest"]["documents"] == 2 and m["ingest"]["chunks_per_s"] > 0
    assert m["search_ms"]["n"] == 2 and m["search_ms"]["p50"] > 0
    assert m["event_to_searchable_ms"] is not None and m["revocation_to_enforced_ms"] is not None
    rss = m["stack_peak_rss"]
    assert set(rss) >= {"postgres", "redis", "celery_worker", "web", "evaluation_process"}
    # The test stack's own Postgres and Redis are found from the live connections.
    for group in ("postgres", "redis", "evaluation_process"):
        assert rss[group]["processes"] >= 1 and rss[group]["sum_vmhwm_mb"] > 0, group
        assert rss[group]["max_process_vmhwm_mb"] <= rss[group]["sum_vmhwm_mb"]
    assert rss["postgres"]["processes"] >= 2, "the postmaster and its backends"
