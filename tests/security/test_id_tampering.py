"""ID tampering: tenant A's ids used by mallory (an admin of tenant B) in paths, bodies, filters and
cursors. Every attempt is refused or answered as if the id did not exist; nothing of tenant A leaks
and nothing in tenant A changes.  (The authorisation matrix covers every URL x principal; this module
covers ids smuggled into request bodies, query filters and pagination cursors.)"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from tenants.auth import SESSION_MEMBERSHIP_KEY
from tenants.context import tenant_context
from tenants.models import AuditEvent, Feedback, Membership
from tests.support import client_for, enqueue, ingest_inline, make_doc, source_for

MARKER = "QTAMPERMARK"


@pytest.fixture
def world(cast) -> dict[str, Any]:
    src = source_for(cast.tenant_a, "wiki")
    enqueue(cast.tenant_a, src, make_doc("plan", f"The {MARKER} rollout plan starts in March with the pilot team.",
                                         [["public:tenant"]], title=f"Rollout {MARKER}"))  # fmt: skip
    ingest_inline(cast.tenant_a.pk)
    alice = client_for(cast.tokens["alice"])
    answer = alice.post("/api/v1/answers", {"question": f"When does the {MARKER} rollout start?"}, format="json")
    assert answer.status_code == 200, answer.content
    body = answer.json()
    audit = alice.get("/api/v1/audit?limit=1").json()
    with tenant_context(cast.tenant_a.pk):
        from retrieval.models import Document

        doc_id = Document.objects.get(external_id="plan").pk
        audit_rows = AuditEvent.objects.count()
    return {
        "cast": cast, "source_id": src.pk, "doc_id": doc_id, "trace_id": body["trace"]["id"],
        "conversation_id": body.get("conversation_id"), "audit_seq": audit["events"][0]["seq"],
        "audit_rows": audit_rows, "alice_id": cast.alice.pk, "answer": body,
    }  # fmt: skip


def _no_leak(response: Any) -> None:
    body = b"".join(response.streaming_content) if getattr(response, "streaming", False) else response.content
    assert MARKER.encode() not in body and MARKER.lower().encode() not in body, body[:500]


def _tenant_a_unchanged(world: dict[str, Any]) -> None:
    with tenant_context(world["cast"].tenant_a.pk):
        assert Feedback.objects.count() == 0
        assert AuditEvent.objects.count() == world["audit_rows"]


def test_it_refuses_feedback_on_another_tenants_answer(world) -> None:
    mallory = client_for(world["cast"].tokens["mallory"])
    claim = (world["answer"]["answer"]["claims"] or [{"id": "c1", "text": "x"}])[0]
    for body in (
        {"trace_id": world["trace_id"], "target": "source", "verdict": "wrong", "document_id": world["doc_id"]},
        {"trace_id": world["trace_id"], "target": "claim", "verdict": "unsupported", "claim_id": claim["id"],
         "claim_text": claim["text"]},
    ):  # fmt: skip
        r = mallory.post("/api/v1/feedback", body, format="json")
        assert r.status_code == 404 and r.json()["error"]["code"] == "unknown_answer"
        _no_leak(r)
    _tenant_a_unchanged(world)
    # The same body from the user who got the answer is accepted: the trace id is real.
    own = client_for(world["cast"].tokens["alice"]).post("/api/v1/feedback", {
        "trace_id": world["trace_id"], "target": "source", "verdict": "wrong", "document_id": world["doc_id"]},
        format="json")  # fmt: skip
    assert own.status_code == 201, own.content


def test_it_never_resumes_another_tenants_conversation(world) -> None:
    assert world["conversation_id"]
    mallory = client_for(world["cast"].tokens["mallory"])
    r = mallory.post("/api/v1/answers", {"question": "and when does it end?",
                                         "conversation_id": world["conversation_id"]}, format="json")  # fmt: skip
    assert r.status_code in (200, 404), r.content
    _no_leak(r)
    if r.status_code == 200:
        body = r.json()
        assert body["evidence"] == [] or all(MARKER not in json.dumps(e) for e in body["evidence"])
        assert body.get("conversation_id") != world["conversation_id"]


def test_it_refuses_to_assign_authority_to_another_tenants_source(world) -> None:
    mallory = client_for(world["cast"].tokens["mallory"])
    r = mallory.post("/api/v1/admin/authority/assignments", {"source_id": world["source_id"], "tier_rank": 1,
                                                             "container": ""}, format="json")  # fmt: skip
    assert r.status_code == 404 and r.json()["error"]["code"] == "unknown_source"
    _no_leak(r)
    with tenant_context(world["cast"].tenant_a.pk):
        from answers.models import AuthorityAssignment

        assert AuthorityAssignment.objects.count() == 0


def test_audit_filters_and_cursors_with_another_tenants_ids_return_nothing_of_it(world) -> None:
    mallory = client_for(world["cast"].tokens["mallory"])
    for query in (f"actor_user_id={world['alice_id']}", f"before_seq={world['audit_seq'] + 1}",
                  f"actor_user_id={world['alice_id']}&before_seq={world['audit_seq'] + 1}&kind=answer"):  # fmt: skip
        r = mallory.get(f"/api/v1/audit?{query}")
        assert r.status_code == 200
        assert all(e["actor_user_id"] != world["alice_id"] for e in r.json()["events"])
        _no_leak(r)
        export = mallory.get(f"/api/v1/audit/export?output=jsonl&{query}")
        assert export.status_code == 200
        _no_leak(export)


def test_search_filters_naming_another_tenants_container_or_document_find_nothing(world) -> None:
    mallory = client_for(world["cast"].tokens["mallory"])
    # The queries carry no marker themselves (the response echoes the query); tenant A's title would.
    for q in ("rollout plan pilot", "rollout space:ENG", "rollout source:confluence", '"pilot team"'):
        r = mallory.get("/api/v1/search", {"q": q, "container": "ENG"})
        assert r.status_code in (200, 400)
        _no_leak(r)
        if r.status_code == 200:
            assert r.json()["results"] == []
    # The same query finds the document for alice: the ids and filters are live, not just wrong.
    own = client_for(world["cast"].tokens["alice"]).get("/api/v1/search", {"q": "rollout plan pilot"})
    assert MARKER.encode() in own.content


def _console(user: Any) -> Client:
    c = Client()
    c.force_login(user)
    session = c.session
    session[SESSION_MEMBERSHIP_KEY] = Membership.objects.filter(user=user).first().pk
    session.save()
    return c


def test_console_view_as_and_people_ignore_another_tenants_user_ids(world) -> None:
    mallory = _console(world["cast"].mallory)
    r = mallory.get("/console/view-as/", {"user": world["alice_id"], "doc": "rollout"})
    assert r.status_code == 200
    _no_leak(r)
    assert world["cast"].alice.username.encode() not in r.content
    r = mallory.get(f"/console/audit/?actor={world['cast'].alice.username}")
    assert r.status_code == 200
    _no_leak(r)
    _tenant_a_unchanged(world)


def test_a_session_pinned_to_another_tenants_membership_is_refused(world) -> None:
    """A cookie session whose membership id was swapped for one of tenant A's."""
    c = Client()
    c.force_login(world["cast"].mallory)
    session = c.session
    session[SESSION_MEMBERSHIP_KEY] = Membership.objects.get(user=world["cast"].alice).pk
    session.save()
    for path in ("/", "/console/", "/console/audit/", f"/?q={MARKER}+rollout&mode=results"):
        r = c.get(path)
        assert r.status_code in (302, 403, 404), (path, r.status_code)
        _no_leak(r)
    _tenant_a_unchanged(world)
