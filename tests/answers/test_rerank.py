"""The reranking stage: default MiniLM fusion, policy signals, cross-encoder plug-ins.

The HTTP cross-encoder is tested against a local server speaking the Cohere/Jina and TEI rerank
wire formats; the ONNX directory variant against a tiny ONNX graph written in the test.
"""

from __future__ import annotations

import json
import threading
from dataclasses import replace
from datetime import UTC, date, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from answers.contracts import ParsedQuery, QueryPlan, TimeScope
from answers.rerank import (
    HttpCrossEncoderReranker,
    MiniLMFusionReranker,
    NoopReranker,
    OnnxCrossEncoderReranker,
    RerankOutcome,
    policy_adjustments,
)
from retrieval.search import RankedChunk


def chunk(cid: int, text: str, *, title: str = "", heading: str = "", tier: int = 1, updated: datetime | None = None,
          version: str = "") -> RankedChunk:  # fmt: skip
    return RankedChunk(chunk_id=cid, document_id=cid, rrf=0.0, ranks={}, text=text, heading=heading, char_start=0,
                       char_end=len(text), title=title, url="", canonical_url="", source_system="upload", container="",
                       updated_at=updated, created_at=updated, version_label=version, authority_tier=tier,
                       snapshot_sha256="", fingerprint="", simhash=0)  # fmt: skip


def plan(text: str, *, time: TimeScope | None = None, latest: bool = False, version: str = "") -> QueryPlan:
    # ``time``: the updated-date window the user asked for (filters, ``after:``), the only one that gates.
    return QueryPlan(parsed=ParsedQuery(original=text, text=text, time_filter=time, wants_latest=latest),
                     as_of=datetime(2025, 6, 1, tzinfo=UTC), retrieval_queries=(text,), version_scope=version)  # fmt: skip


CANDIDATES = [
    chunk(1, "The cafeteria opens at eight. Lunch is served until two.", title="Cafeteria"),
    chunk(2, "Our office is in Berlin. Parking is available in the garage."),
    chunk(
        3,
        "Annual plans can be refunded within 14 days of purchase. Monthly plans are not refundable.",
        title="Refund policy",
    ),
]


def test_it_moves_the_passage_that_answers_the_question_to_the_top() -> None:
    out = MiniLMFusionReranker(depth=10).rerank("how many days do I have to get a refund?", None, list(CANDIDATES))
    assert isinstance(out, RerankOutcome) and out.name == "minilm-fusion"
    assert [c.chunk_id for c in out.chunks][0] == 3
    sig = out.signals[3]
    # Every signal's contribution is recorded for the trace.
    assert {"dense", "sentence_max", "proximity", "title", "retrieval", "authority", "text", "final"} <= set(sig)
    assert sig["output_rank"] == 1.0 and sig["input_rank"] == 3.0
    assert sig["title"] > 0 and out.signals[2]["title"] == 0


def test_it_keeps_chunks_past_the_depth_in_retrieval_order() -> None:
    extra = [chunk(10 + i, f"unrelated note number {i}") for i in range(3)]
    out = MiniLMFusionReranker(depth=3).rerank("refund within 14 days", None, list(CANDIDATES) + extra)
    assert [c.chunk_id for c in out.chunks][3:] == [10, 11, 12]
    assert set(out.signals) == {1, 2, 3}


def test_it_gates_chunks_outside_the_plans_time_scope_and_never_boosts_recency_without_one() -> None:
    old = chunk(1, "policy text", updated=datetime(2019, 1, 1, tzinfo=UTC))
    new = chunk(2, "policy text", updated=datetime(2024, 1, 1, tzinfo=UTC))
    unscoped = policy_adjustments(plan("policy"), [old, new])
    assert "recency" not in unscoped[0] and "recency" not in unscoped[1]
    scoped = policy_adjustments(plan("policy", time=TimeScope(after=date(2023, 1, 1))), [old, new])
    assert scoped[0]["time_scope_gate"] < 0 and "time_scope_gate" not in scoped[1]
    latest = policy_adjustments(plan("latest policy", latest=True), [old, new])
    assert latest[1]["recency"] > latest[0]["recency"]


def test_it_prefers_the_plans_version_and_the_more_authoritative_source() -> None:
    a = chunk(1, "limits", version="2023 Q2", tier=2)
    b = chunk(2, "limits", version="2023 Q3", tier=0)
    adj = policy_adjustments(plan("limits", version="2023 Q3"), [a, b])
    assert adj[1]["version"] > 0 > adj[0]["version"]
    assert adj[1]["authority"] > adj[0]["authority"]
    out = NoopReranker().rerank("limits", plan("limits", version="2023 Q3"), [a, b])
    assert [c.chunk_id for c in out.chunks] == [2, 1]


class _RerankServer:
    def __init__(self, fmt: str, *, broken: bool = False) -> None:
        self.requests: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server API
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append({"body": body, "auth": self.headers.get("Authorization"), "path": self.path})
                docs = body["documents"] if fmt == "cohere" else body["texts"]
                # Relevance: how often the query's first word occurs (a stand-in for a real model).
                word = body["query"].split()[0].lower()
                scored = [(i, float(d.lower().count(word))) for i, d in enumerate(docs)]
                if broken:
                    scored = scored[:-1]
                if fmt == "cohere":
                    payload: Any = {"results": [{"index": i, "relevance_score": s} for i, s in
                                                sorted(scored, key=lambda t: -t[1])]}  # fmt: skip
                else:
                    payload = [{"index": i, "score": s} for i, s in scored]
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize("fmt,path", [("cohere", "/v1/rerank"), ("tei", "/rerank")])
def test_it_reranks_through_an_http_rerank_endpoint(fmt: str, path: str) -> None:
    srv = _RerankServer(fmt)
    try:
        rr = HttpCrossEncoderReranker(f"http://127.0.0.1:{srv.port}{path}", api_key="sk-test", model="rerank-x",
                                      fmt=fmt, depth=10)  # fmt: skip
        out = rr.rerank("refund refund policy", None, list(CANDIDATES))
        assert out.chunks[0].chunk_id == 3
        assert out.signals[3]["cross_encoder"] > out.signals[1]["cross_encoder"]
        req = srv.requests[0]
        assert req["path"] == path and req["auth"] == "Bearer sk-test"
        assert len(req["body"]["documents" if fmt == "cohere" else "texts"]) == 3
        assert "Refund policy" in json.dumps(req["body"])  # title travels with the passage
    finally:
        srv.close()


def test_it_refuses_an_endpoint_answer_that_does_not_score_every_passage() -> None:
    srv = _RerankServer("tei", broken=True)
    try:
        rr = HttpCrossEncoderReranker(f"http://127.0.0.1:{srv.port}/rerank", fmt="tei", depth=10)
        with pytest.raises(ValueError, match="every passage"):
            rr.rerank("refund", None, list(CANDIDATES))
    finally:
        srv.close()


def test_it_loads_a_cross_encoder_from_an_operator_directory(tmp_path: Path) -> None:
    from retrieval.embedder import _model_files
    from tests.evaluation.tiny_onnx import write_length_scorer

    write_length_scorer(tmp_path / "model.onnx")
    (tmp_path / "tokenizer.json").write_bytes(_model_files()[1].read_bytes())
    rr = OnnxCrossEncoderReranker(str(tmp_path), depth=10)
    long_one = chunk(4, "refund " * 40)
    out = rr.rerank("refund", None, [*CANDIDATES, long_one])
    # The tiny graph scores a pair by its token count: the longest passage wins.
    assert out.chunks[0].chunk_id == 4 and len(rr.version) == 16
    with pytest.raises(FileNotFoundError):
        OnnxCrossEncoderReranker(str(tmp_path / "missing"), depth=5).rerank("x", None, list(CANDIDATES))


def test_a_how_much_question_about_a_company_prefers_the_statement_row_that_names_its_measure() -> None:
    from answers.planning import plan_question

    asked = plan_question("What gross margin in dollars did Intel report for the quarter ended October 1, 2022?",
                          datetime(2026, 1, 1, tzinfo=UTC))  # fmt: skip
    prose = chunk(
        1, "Our overall gross margin dollars in Q3 2022 decreased by $4.2 billion, or 39% compared to Q3 2021."
    )
    row = chunk(2, "Revenue: $15,338 million, three months ended October 1, 2022.\n\n"
                   "Gross margin: $6,535 million, three months ended October 1, 2022; $10,746 million, three months "
                   "ended September 25, 2021.")  # fmt: skip
    other = chunk(3, "Net revenue (Client Computing): $8,124 million, three months ended October 1, 2022.")
    adj = policy_adjustments(asked, [prose, row, other])
    assert adj[1]["statement_row"] > 0
    # Once the quarter is resolved (2022-10-01), the row that holds its cell is the answer itself.
    resolved = policy_adjustments(replace(asked, period_scope=("2022-10-01",)), [row])
    assert resolved[0]["statement_row"] > 2 * adj[1]["statement_row"]
    assert "statement_row" not in adj[0] and "statement_row" not in adj[2]
    # "net income" is not answered by a row that shares only "net" with it, and a question that is not
    # about a figure of a named company or period gets no row preference at all.
    income = plan_question("What was NVIDIA's net income in Q2 of fiscal 2024?", datetime(2026, 1, 1, tzinfo=UTC))
    assert "statement_row" not in policy_adjustments(income, [other])[0]
    unbound = plan_question("What is a gross margin?", datetime(2026, 1, 1, tzinfo=UTC))
    assert "statement_row" not in policy_adjustments(unbound, [row])[0]


def test_of_two_rows_that_name_the_measure_the_one_without_other_words_is_preferred() -> None:
    from answers.rerank import statement_row_cover

    asked = frozenset({"revenu"})
    cells = ["months ended April 1, 2023"]
    segment = "Other (Client Computing, net revenue): $481 million, three months ended April 1, 2023."
    total = "Total net revenue: $11,715 million, three months ended April 1, 2023."
    assert statement_row_cover(asked, total, cells) > statement_row_cover(asked, segment, cells)
    assert (
        statement_row_cover(asked, total, cells)[1] and not statement_row_cover(asked, total, ["months ended May 1"])[1]
    )
