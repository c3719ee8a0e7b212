"""Streaming answers (server-sent events) and follow-up questions, through the real pipeline."""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.db import connection, connections
from django.test import Client
from rest_framework.test import APIClient

from retrieval.actions import do_create_source, do_set_group_members
from tenants.auth import SESSION_MEMBERSHIP_KEY
from tenants.context import tenant_context
from tenants.models import AuditEvent, Membership
from tests.answers.sse import parse_sse
from tests.support import (
    approve_private_endpoint,
    client_for,
    enqueue,
    grant_groups,
    ingest_inline,
    make_doc,
    source_for,
)

TRAVEL = (
    "Expense reports are due within 30 days of travel. Submit each report in the travel system with "
    "itemised receipts. Meals are reimbursed at the federal per diem rate for the destination city."
)
VPN = (
    "The corporate VPN uses WireGuard. If the VPN disconnects repeatedly, restart the client and renew the certificate."
)
PUBLISHERS = "Webhook publishers must sign every delivery and rotate the signing secret every 90 days."
SUBSCRIBERS = "Webhook subscribers must acknowledge each delivery within 5 seconds and retry on failure."


@pytest.fixture
def corpus(cast):
    src = source_for(cast.tenant_a)
    for ext, text, acl, title in [("travel", TRAVEL, [["public:tenant"]], "Travel expenses"),
                                  ("vpn", VPN, [["confluence:group:it"]], "VPN setup"),
                                  ("pub", PUBLISHERS, [["public:tenant"]], "Webhooks for publishers"),
                                  ("sub", SUBSCRIBERS, [["public:tenant"]], "Webhooks for subscribers")]:  # fmt: skip
        enqueue(cast.tenant_a, src, make_doc(ext, text, acl, title=title))
    grant_groups(cast.tenant_a, {"confluence:group:it": [cast.alice]})
    ingest_inline(cast.tenant_a.pk)
    return cast


def stream(client: APIClient | Client, question: str, **extra: object) -> list[tuple[str, dict]]:
    r = client.post("/api/v1/answers/stream", {"question": question, **extra}, format="json",
                    HTTP_ACCEPT="text/event-stream")  # fmt: skip
    assert r.status_code == 200, r.content
    assert r["Content-Type"].startswith("text/event-stream") and r.streaming
    return parse_sse(r.streaming_content)


def test_it_streams_plan_and_sources_first_then_each_verified_claim_then_done(corpus) -> None:
    events = stream(client_for(corpus.tokens["bob"]), "When are expense reports due?")
    names = [n for n, _ in events]
    assert names[:2] == ["plan", "sources"] and names[-1] == "done"
    assert set(names[2:-1]) == {"claim"} and len(names) >= 4
    plan, sources, done = events[0][1], events[1][1], events[-1][1]
    assert plan["plan"]["original"] == "When are expense reports due?" and plan["conversation_id"]
    evidence = {e["id"]: e for e in sources["evidence"]}
    claims = [d["claim"] for n, d in events if n == "claim"]
    assert [d["index"] for n, d in events if n == "claim"] == list(range(len(claims)))
    for claim in claims:
        assert claim["verification"]["kept"] is True
        for cit in claim["citations"]:
            assert cit["quote"] in evidence[cit["evidence_id"]]["text"]
    assert any("30 days" in c["text"] for c in claims)
    assert done["answer"]["claims"] == claims and done["answer"]["abstention"] is None and done["as_of"]["content"]
    assert isinstance(done["answer"]["dropped_claims"], int) and done["conversation_id"] == plan["conversation_id"]
    assert done["trace"]["id"] == plan["trace_id"] and done["evidence"] and done["results"]
    with tenant_context(corpus.tenant_a.pk):
        row = AuditEvent.objects.get(trace_id=done["trace"]["id"])
    assert row.actor_user_id == corpus.bob.pk and row.details["channel"] == "api-stream"


def test_a_stream_never_carries_text_the_reader_may_not_see(corpus) -> None:
    events = stream(client_for(corpus.tokens["bob"]), "Which protocol does the VPN use?")
    assert "WireGuard" not in repr(events)
    assert [n for n, _ in events if n == "claim"] == []
    # "unknown_entity": no source bob may read mentions "VPN" at all.
    assert events[-1][1]["answer"]["abstention"]["reason"] in {"no_evidence", "weak_evidence",
                                                                "all_claims_unsupported", "unknown_entity"}  # fmt: skip
    assert "WireGuard" in repr(stream(client_for(corpus.tokens["alice"]), "Which protocol does the VPN use?"))


def test_bad_input_is_a_4xx_before_the_stream_starts(corpus) -> None:
    c = client_for(corpus.tokens["bob"])
    r = c.post("/api/v1/answers/stream", {"question": "reports after:2024-13-45"}, format="json")
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_date"
    r = c.post("/api/v1/answers/stream", {"question": ""}, format="json", HTTP_ACCEPT="text/event-stream")
    assert r.status_code == 400 and b"event: error" in r.content
    assert APIClient().post("/api/v1/answers/stream", {"question": "x"}, format="json").status_code in (401, 403)


def test_the_portal_streams_with_its_session_over_get_and_cross_site_requests_are_refused(corpus) -> None:
    c = Client()
    c.force_login(corpus.carol)
    session = c.session
    session[SESSION_MEMBERSHIP_KEY] = Membership.objects.get(user=corpus.carol, tenant=corpus.tenant_a).pk
    session.save()
    r = c.get("/api/v1/answers/stream", {"q": "When are expense reports due?"}, HTTP_ACCEPT="text/event-stream",
              HTTP_SEC_FETCH_SITE="same-origin")  # fmt: skip
    assert r.status_code == 200
    events = parse_sse(r.streaming_content)
    assert events[0][0] == "plan" and any(n == "claim" for n, _ in events)
    r = c.get("/api/v1/answers/stream", {"q": "When are expense reports due?"}, HTTP_SEC_FETCH_SITE="cross-site")
    assert r.status_code == 403 and r.json()["error"]["code"] == "cross_site_request"
    # The session POST variant is CSRF-checked like every other unsafe API call.
    csrf_client = Client(enforce_csrf_checks=True)
    csrf_client.force_login(corpus.carol)
    s = csrf_client.session
    s[SESSION_MEMBERSHIP_KEY] = session[SESSION_MEMBERSHIP_KEY]
    s.save()
    r = csrf_client.post("/api/v1/answers/stream", {"question": "expense reports"}, content_type="application/json")
    assert r.status_code == 403


def test_a_followup_is_resolved_against_the_previous_plan_and_retrieves_again_for_a_new_scope(corpus) -> None:
    c = client_for(corpus.tokens["bob"])
    first = c.post("/api/v1/answers", {"question": "What must webhook senders do for publishers?"},
                   format="json").json()  # fmt: skip
    assert "rotate the signing secret" in str(first["answer"]["claims"]), first["answer"]
    cid = first["conversation_id"]
    second = c.post("/api/v1/answers", {"question": "and for subscribers?", "conversation_id": cid},
                    format="json").json()  # fmt: skip
    fu = second["trace"]["followup"]
    assert fu["is_followup"] and fu["resolution"] == "scope_swap"
    assert fu["resolved_question"] == "What must webhook senders do for subscribers?"
    assert fu["evidence"] == "retrieved" and "subscrib" in fu["decision_reason"]
    assert second["plan"]["original"] == fu["resolved_question"] and second["conversation_id"] == cid
    assert "acknowledge each delivery" in str(second["answer"]["claims"])
    # A follow-up that adds nothing new answers from the earlier evidence (re-checked against the ACL).
    third = c.post("/api/v1/answers", {"question": "why is that?", "conversation_id": cid}, format="json").json()
    assert third["trace"]["followup"]["evidence"] == "reused", third["trace"]["followup"]["decision_reason"]
    assert {e["id"] for e in third["evidence"]} <= {e["id"] for e in second["evidence"]}
    assert third["answer"]["claims"]


def test_a_conversation_belongs_to_one_user_of_one_tenant(corpus) -> None:
    cid = client_for(corpus.tokens["alice"]).post("/api/v1/answers", {"question": "Which protocol does the VPN use?"},
                                                   format="json").json()["conversation_id"]  # fmt: skip
    for name in ("bob", "mallory"):
        r = client_for(corpus.tokens[name]).post("/api/v1/answers", {"question": "why is that?",
                                                                      "conversation_id": cid}, format="json")  # fmt: skip
        assert r.status_code == 404 and r.json()["error"]["code"] == "unknown_conversation"
        assert "WireGuard" not in r.content.decode()


def test_earlier_evidence_is_never_reused_after_a_permission_change(corpus) -> None:
    c = client_for(corpus.tokens["alice"])
    first = c.post("/api/v1/answers", {"question": "Which protocol does the VPN use?"}, format="json").json()
    assert "WireGuard" in str(first["answer"]["claims"])
    with tenant_context(corpus.tenant_a.pk):
        do_set_group_members("confluence:group:it", [])
    again = c.post("/api/v1/answers", {"question": "why is that?", "conversation_id": first["conversation_id"]},
                   format="json")  # fmt: skip
    fu = again.json()["trace"]["followup"]
    assert fu["evidence"] == "retrieved" and "permissions changed" in fu["decision_reason"]
    assert "WireGuard" not in again.content.decode()


def test_a_name_from_the_last_answer_is_not_carried_into_the_next_question_after_a_permission_change(corpus) -> None:
    c = client_for(corpus.tokens["alice"])
    first = c.post("/api/v1/answers", {"question": "Which protocol does the VPN use?"}, format="json").json()
    assert "WireGuard" in str(first["answer"]["claims"])
    with tenant_context(corpus.tenant_a.pk):
        do_set_group_members("confluence:group:it", [])
    again = c.post("/api/v1/answers", {"question": "Who maintains it?", "conversation_id": first["conversation_id"]},
                   format="json")  # fmt: skip
    assert again.status_code == 200
    assert again.json()["trace"]["followup"]["is_followup"]
    assert "WireGuard" not in again.content.decode()


def test_a_followup_streams_too(corpus) -> None:
    c = client_for(corpus.tokens["bob"])
    first = stream(c, "What must webhook senders do for publishers?")
    cid = first[0][1]["conversation_id"]
    events = stream(c, "and for subscribers?", conversation_id=cid)
    assert events[0][1]["followup"]["resolved_question"] == "What must webhook senders do for subscribers?"
    assert "acknowledge each delivery" in repr([d for n, d in events if n == "claim"])


# --------------------------------------------------------------------------- incremental delivery
#
# The tenant's writer is the OpenAI-compatible writer pointed at a local HTTP server whose
# /v1/chat/completions handler blocks until the test releases it: whatever the reader holds
# while the model has not answered was sent before the model answered.

FABRICATED = "Expense reports are approved by the chief financial officer."
SUBMIT = "Submit each report in the travel system with itemised receipts."
DUE = "Expense reports are due within 30 days of travel."


class GatedModel:
    """An OpenAI-compatible chat-completions endpoint that answers only after ``gate`` is set.

    ``claims(passages)`` builds the model's claims from the passages it was sent (the
    evidence ids are the engine's), so the reply is what a model would cite.
    """

    def __init__(self, claims: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]) -> None:
        self.gate = threading.Event()
        self.arrived = threading.Event()
        self.requests: list[dict[str, Any]] = []
        model = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                model.requests.append(body)
                model.arrived.set()
                model.gate.wait(60)
                user = body["messages"][1]["content"]
                passages = json.loads(user.split("<<<DATA\n")[1].split("\nDATA>>>")[0])["passages"]
                content = json.dumps({"answerable": True, "claims": claims(passages)})
                payload = json.dumps({"choices": [{"index": 0, "message": {"role": "assistant",
                                                                           "content": content}}]}).encode()  # fmt: skip
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *a: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def use_for(self, admin_token: str, settings: Any) -> None:
        approve_private_endpoint(settings, self.url)  # the operator's call, never the tenant admin's
        r = client_for(admin_token).put("/api/v1/admin/answer-settings", {
            "writer": "openai_compatible", "endpoint_url": self.url, "model": "local-model"}, format="json")  # fmt: skip
        assert r.status_code == 200, r.content


def _cite(passages: list[dict[str, Any]], sentence: str, *, quote: str | None = None) -> dict[str, Any]:
    """A claim citing the passage that contains ``sentence`` (quoting ``quote``, by default the sentence)."""
    ev = next(p for p in passages if sentence in p["text"])
    return {"text": sentence, "citations": [{"evidence_id": ev["evidence_id"], "quote": quote or sentence}]}


def _travel_claims(passages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # The middle claim quotes a sentence its passage does not contain: the quote check must drop it.
    fabricated = _cite(passages, DUE, quote=FABRICATED) | {"text": FABRICATED}
    return [_cite(passages, DUE), fabricated, _cite(passages, SUBMIT)]


class Reader:
    """Reads a stream on its own thread (the engine runs there, as it would under a WSGI server),
    so the test can look at what has arrived while the model is still blocked."""

    def __init__(self, response: Any) -> None:
        self.events: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.thread = threading.Thread(target=self._run, args=(response,), daemon=True)
        self.thread.start()

    def _run(self, response: Any) -> None:
        try:
            for chunk in response.streaming_content:  # one chunk is one event
                for event in parse_sse([chunk]):
                    self.events.put(event)
        finally:
            connections.close_all()  # this thread's connection

    def so_far(self) -> list[tuple[str, Any]]:
        out = []
        while not self.events.empty():
            out.append(self.events.get_nowait())
        return out

    def rest(self) -> list[tuple[str, Any]]:
        self.thread.join(60)
        assert not self.thread.is_alive()
        return self.so_far()


def _open(client: APIClient, question: str, **extra: object) -> Any:
    r = client.post("/api/v1/answers/stream", {"question": question, **extra}, format="json",
                    HTTP_ACCEPT="text/event-stream")  # fmt: skip
    assert r.status_code == 200 and r.streaming, r.content
    return r


def _apply(events: list[tuple[str, Any]]) -> list[dict[str, Any]]:
    """What a client that applies claim / retract / annotate in order is left showing."""
    shown: dict[int, dict[str, Any]] = {}
    for name, data in events:
        if name == "claim":
            assert data["index"] not in shown
            shown[data["index"]] = dict(data["claim"])
        elif name == "retract":
            del shown[data["index"]]
        elif name == "annotate":
            shown[data["index"]]["view"] = data["view"]
    return [shown[i] for i in sorted(shown)]


def _same_answer(streamed: dict[str, Any], answered: dict[str, Any]) -> None:
    """Equal except the ids each delivery gets and the cache flag (the second one is a hit)."""
    a, b = json.loads(json.dumps(streamed)), json.loads(json.dumps(answered))
    for body in (a, b):
        body.pop("conversation_id")
        body["trace"].pop("id")
        body["trace"].pop("cache")
    assert a == b


@pytest.fixture
def travel(cast):
    src = source_for(cast.tenant_a)
    enqueue(cast.tenant_a, src, make_doc("travel", TRAVEL, [["public:tenant"]], title="Travel expenses"))
    enqueue(cast.tenant_a, src, make_doc("vpn", VPN, [["public:tenant"]], title="VPN setup"))
    ingest_inline(cast.tenant_a.pk)
    return cast


def test_plan_and_sources_arrive_while_the_model_is_still_blocked_then_claims_one_by_one(travel, settings) -> None:
    model = GatedModel(_travel_claims)
    try:
        model.use_for(travel.tokens["alice"], settings)
        bob = client_for(travel.tokens["bob"])
        reader = Reader(_open(bob, "When are expense reports due?"))
        assert model.arrived.wait(60), "the writer was never called"
        before = reader.so_far()
        # The model has been asked and has not answered: the plan and the sources panel are already here.
        assert [n for n, _ in before] == ["plan", "sources"], before
        plan, sources = before[0][1], before[1][1]
        assert plan["plan"]["original"] == "When are expense reports due?" and plan["cache"] == "miss"
        assert plan["release"]["writer"].startswith("openai-compatible")
        assert any(e["title"] == "Travel expenses" and DUE in e["text"] for e in sources["evidence"])
        travel_result = next(r for r in sources["results"] if r["title"] == "Travel expenses")
        assert travel_result["url"] == "https://wiki.example.com/travel" and "updated_at" in travel_result
        model.gate.set()
        after = reader.rest()
    finally:
        model.gate.set()
        model.httpd.shutdown()
    names = [n for n, _ in after]
    assert names == ["claim", "claim", "done"], names
    claims = [d for n, d in after if n == "claim"]
    assert [c["index"] for c in claims] == [0, 1]
    assert [c["claim"]["text"] for c in claims] == [DUE, SUBMIT]  # the model's order, the dropped one left out
    for c in claims:
        v = c["claim"]["verification"]
        assert v["kept"] is True and v["quote_ok"] is True
    assert FABRICATED not in json.dumps(claims)
    done = after[-1][1]
    assert done["answer"]["claims"] == [c["claim"] for c in claims] and done["answer"]["dropped_claims"] == 1
    assert done["trace"]["cache"] == "miss" and done["trace"]["id"] == plan["trace_id"]
    assert [v["quote_ok"] for v in done["trace"]["verification"]] == [True, False, True]
    with tenant_context(travel.tenant_a.pk):
        rows = list(AuditEvent.objects.filter(trace_id=done["trace"]["id"]))
    assert len(rows) == 1 and rows[0].details["channel"] == "api-stream"
    assert len(rows[0].details["claims"]) == 2

    # The JSON API answers the same question with the same payload (from the cache the stream filled).
    answered = bob.post("/api/v1/answers", {"question": "When are expense reports due?"}, format="json").json()
    assert answered["trace"]["cache"] == "hit"
    _same_answer(done, answered)
    assert len(model.requests) == 1


def test_a_cache_hit_streams_plan_sources_claims_and_done_from_the_cache(travel, settings) -> None:
    model = GatedModel(_travel_claims)
    model.gate.set()
    try:
        model.use_for(travel.tokens["alice"], settings)
        carol = client_for(travel.tokens["carol"])
        first = parse_sse(_open(carol, "When are expense reports due?").streaming_content)
        again = parse_sse(_open(carol, "When are expense reports due?").streaming_content)
    finally:
        model.httpd.shutdown()
    assert len(model.requests) == 1  # the second stream never reached the writer
    assert [n for n, _ in again] == ["plan", "sources", "claim", "claim", "done"]
    assert again[0][1]["cache"] == "hit" and again[-1][1]["trace"]["cache"] == "hit"
    assert [d for n, d in again if n == "claim"] == [d for n, d in first if n == "claim"]
    assert again[1][1]["evidence"] == first[1][1]["evidence"]
    _same_answer(first[-1][1], again[-1][1])
    with tenant_context(travel.tenant_a.pk):
        row = AuditEvent.objects.get(trace_id=again[-1][1]["trace"]["id"])
    assert row.details["cache"] == "hit" and row.details["channel"] == "api-stream"


def test_the_streamed_answer_equals_the_json_answer_when_neither_comes_from_the_cache(travel, settings) -> None:
    settings.CAIRN = {**settings.CAIRN, "ANSWER_CACHE_SECONDS": 0}
    bob = client_for(travel.tokens["bob"])
    events = parse_sse(_open(bob, "When are expense reports due?").streaming_content)
    answered = bob.post("/api/v1/answers", {"question": "When are expense reports due?"}, format="json").json()
    done = events[-1][1]
    assert done["trace"]["cache"] == answered["trace"]["cache"] == "miss"
    assert _apply(events) == done["answer"]["claims"] and done["answer"]["claims"]

    def stable(body: dict[str, Any]) -> dict[str, Any]:
        # Only what differs between two runs: ids, the clock, and timings (asserted in benchmarks, not here).
        body = json.loads(json.dumps(body))
        body.pop("conversation_id")
        body["plan"].pop("as_of")
        body["trace"].pop("id")
        body["trace"].pop("timings_ms")
        body["trace"]["retrieval"].pop("timings_ms")
        for legs in (body["trace"]["legs"], body["trace"]["retrieval"]["legs"]):
            for leg in legs.values():  # each leg's strategy and hit count stay; its milliseconds go
                for k in [k for k, v in leg.items() if isinstance(v, float)]:
                    leg.pop(k)
        body["trace"]["retrieval"].get("rerank", {}).pop("ms", None)
        return body

    assert stable(done) == stable(answered)


def test_a_claim_a_conflict_withdraws_after_it_streamed_is_retracted_with_the_reason(cast, settings) -> None:
    with tenant_context(cast.tenant_a.pk):
        policy = do_create_source("confluence", "policy system", authority_tier=0)
        chat = do_create_source("slack", "chat", authority_tier=3)
    enqueue(cast.tenant_a, policy, make_doc("policy", DUE, [["public:tenant"]], title="Expense policy"))
    chat_says = "Expense reports are due within 60 days of travel."
    enqueue(cast.tenant_a, chat, make_doc("chat-1", chat_says, [["public:tenant"]], title="#finance chat"))
    ingest_inline(cast.tenant_a.pk)
    model = GatedModel(lambda passages: [_cite(passages, chat_says)])  # the model trusts the chat
    model.gate.set()
    try:
        model.use_for(cast.tokens["alice"], settings)
        events = parse_sse(_open(client_for(cast.tokens["bob"]), "When are expense reports due?").streaming_content)
    finally:
        model.httpd.shutdown()
    names = [n for n, _ in events]
    assert names == ["plan", "sources", "claim", "retract", "claim", "done"], names
    (_, first), (_, retract), (_, second), (_, done) = events[2:]
    assert first == {"index": 0, "claim": first["claim"]} and first["claim"]["text"] == chat_says
    assert retract["index"] == 0 and retract["reason"] == "conflict" and "Expense policy" in retract["message"]
    assert second["index"] == 1 and second["claim"]["text"] == DUE
    assert done["conflict"]["status"] == "resolved"
    assert _apply(events) == done["answer"]["claims"] == [second["claim"]]


def test_sources_of_equal_rank_that_disagree_annotate_the_streamed_claim_and_add_the_other_view(cast, settings) -> None:
    with tenant_context(cast.tenant_a.pk):
        handbook = do_create_source("confluence", "handbook", authority_tier=1)
        manual = do_create_source("sharepoint", "manual", authority_tier=1)
    other = "Expense reports are due within 60 days of travel."
    enqueue(cast.tenant_a, handbook, make_doc("handbook", DUE, [["public:tenant"]], title="Handbook"))
    enqueue(cast.tenant_a, manual, make_doc("manual", other, [["public:tenant"]], title="Manual"))
    ingest_inline(cast.tenant_a.pk)
    model = GatedModel(lambda passages: [_cite(passages, DUE)])
    model.gate.set()
    try:
        model.use_for(cast.tokens["alice"], settings)
        events = parse_sse(_open(client_for(cast.tokens["bob"]), "When are expense reports due?").streaming_content)
    finally:
        model.httpd.shutdown()
    assert [n for n, _ in events] == ["plan", "sources", "claim", "annotate", "claim", "done"], events
    (_, first), (_, note), (_, added), (_, done) = events[2:]
    assert first["claim"]["text"] == DUE and "view" not in first["claim"]
    assert note["index"] == 0 and note["claim_id"] == first["claim"]["id"] and "dated" in note["view"]
    assert added["index"] == 1 and added["claim"]["text"] == other and "dated" in added["claim"]["view"]
    assert done["conflict"]["status"] == "both_views"
    assert _apply(events) == done["answer"]["claims"] and len(done["answer"]["claims"]) == 2


def test_a_followup_that_reuses_the_evidence_streams_too(corpus) -> None:
    c = client_for(corpus.tokens["bob"])
    first = stream(c, "What must webhook senders do for publishers?")
    events = stream(c, "why is that?", conversation_id=first[0][1]["conversation_id"])
    plan, done = events[0][1], events[-1][1]
    assert plan["followup"]["evidence"] == "reused" and plan["cache"] == "bypass"
    assert plan["conversation_id"] == done["conversation_id"] == first[0][1]["conversation_id"]
    assert [n for n, _ in events][:2] == ["plan", "sources"] and done["trace"]["followup"]["turn"] == 2
    assert _apply(events) == done["answer"]["claims"] and done["answer"]["claims"]
    assert {e["id"] for e in events[1][1]["evidence"]} <= {e["id"] for e in first[1][1]["evidence"]}


# --------------------------------------------------------------------------- errors and early ends


def test_an_unknown_conversation_is_an_error_event_with_a_code(corpus) -> None:
    events = stream(client_for(corpus.tokens["bob"]), "and for subscribers?", conversation_id="not-a-conversation")
    assert events == [("error", {"code": "unknown_conversation",
                                 "message": "This conversation does not exist or has expired."})]  # fmt: skip


def test_a_database_failure_mid_stream_is_an_error_event_and_what_was_sent_is_audited(corpus) -> None:
    r = _open(client_for(corpus.tokens["bob"]), "When are expense reports due?")
    chunks = iter(r.streaming_content)  # the engine runs in this thread, on this thread's connection
    seen: list[tuple[str, Any]] = []
    while [n for n, _ in seen] != ["plan", "sources"]:
        seen += parse_sse([next(chunks)])
    with connection.cursor() as cur:
        cur.execute("SELECT pg_backend_pid()")
        pid = cur.fetchone()[0]
    killer = connections.create_connection("default")
    try:
        with killer.cursor() as cur:
            cur.execute("SELECT pg_terminate_backend(%s)", [pid])
    finally:
        killer.close()
    rest = b"".join(chunks)
    assert b"Traceback" not in rest and b"psycopg" not in rest and b".py" not in rest
    events = parse_sse([rest])
    assert [n for n, _ in events] == ["error"] and events[0][1]["code"] == "database_unavailable"
    connection.close()
    trace_id = seen[0][1]["trace_id"]
    with tenant_context(corpus.tenant_a.pk):
        rows = list(AuditEvent.objects.filter(trace_id=trace_id))
    assert len(rows) == 1 and rows[0].details["channel"] == "api-stream-incomplete"
    assert rows[0].details["evidence_ids"] == [e["id"] for e in seen[1][1]["evidence"]]
    assert rows[0].details["claims"] == [] and rows[0].actor_user_id == corpus.bob.pk


def test_a_reader_who_hangs_up_after_the_sources_is_audited_once_with_what_was_sent(corpus) -> None:
    r = _open(client_for(corpus.tokens["bob"]), "When are expense reports due?")
    chunks = iter(r.streaming_content)
    seen: list[tuple[str, Any]] = []
    while [n for n, _ in seen] != ["plan", "sources"]:
        seen += parse_sse([next(chunks)])
    r.close()  # what a WSGI server does when the client went away
    with tenant_context(corpus.tenant_a.pk):
        rows = list(AuditEvent.objects.filter(trace_id=seen[0][1]["trace_id"]))
    assert len(rows) == 1 and rows[0].details["channel"] == "api-stream-incomplete"
    assert rows[0].details["evidence_ids"] == [e["id"] for e in seen[1][1]["evidence"]]
    assert rows[0].details["claims"] == [] and rows[0].details["question"] == "When are expense reports due?"
