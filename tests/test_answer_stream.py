"""Streaming answers (server-sent events) and follow-up questions, through the real pipeline."""

from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.test import APIClient

from retrieval.actions import do_set_group_members
from tenants.auth import SESSION_MEMBERSHIP_KEY
from tenants.context import tenant_context
from tenants.models import AuditEvent, Membership
from tests.conftest import ingest_inline
from tests.factories import client_for, enqueue, grant_groups, make_doc, source_for
from tests.sse import parse_sse

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
    assert done["claims"] == len(claims) and done["abstention"] is None and done["as_of"]["content"]
    assert isinstance(done["dropped_claims"], int) and done["conversation_id"] == plan["conversation_id"]
    with tenant_context(corpus.tenant_a.pk):
        row = AuditEvent.objects.get(trace_id=done["trace_id"])
    assert row.actor_user_id == corpus.bob.pk and row.details["channel"] == "api-stream"


def test_a_stream_never_carries_text_the_reader_may_not_see(corpus) -> None:
    events = stream(client_for(corpus.tokens["bob"]), "Which protocol does the VPN use?")
    assert "WireGuard" not in repr(events)
    assert [n for n, _ in events if n == "claim"] == []
    assert events[-1][1]["abstention"]["reason"] in {"no_evidence", "weak_evidence", "all_claims_unsupported"}
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


def test_a_followup_streams_too(corpus) -> None:
    c = client_for(corpus.tokens["bob"])
    first = stream(c, "What must webhook senders do for publishers?")
    cid = first[0][1]["conversation_id"]
    events = stream(c, "and for subscribers?", conversation_id=cid)
    assert events[0][1]["followup"]["resolved_question"] == "What must webhook senders do for subscribers?"
    assert "acknowledge each delivery" in repr([d for n, d in events if n == "claim"])
