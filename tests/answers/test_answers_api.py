"""The answer and search API, end to end through the real pipeline."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from tests.support import client_for, enqueue, grant_groups, ingest_inline, make_doc, source_for

HANDBOOK = (
    "Expense reports are due within 30 days of travel. Submit each report in the travel system with "
    "itemised receipts. Meals are reimbursed at the federal per diem rate for the destination city."
)
VPN = (
    "The corporate VPN uses WireGuard. New laptops get a VPN profile from the IT portal on the first day. "
    "If the VPN disconnects repeatedly, restart the client and renew the certificate."
)


@pytest.fixture
def corpus(cast):
    src = source_for(cast.tenant_a)
    enqueue(cast.tenant_a, src, make_doc("travel", HANDBOOK, [["public:tenant"]], title="Travel expenses"))
    enqueue(cast.tenant_a, src, make_doc("vpn", VPN, [["confluence:group:it"]], title="VPN setup"))
    grant_groups(cast.tenant_a, {"confluence:group:it": [cast.alice]})
    ingest_inline(cast.tenant_a.pk)
    return cast


def test_it_answers_with_claims_that_quote_their_evidence_verbatim(corpus) -> None:
    r = client_for(corpus.tokens["bob"]).post("/api/v1/answers", {"question": "When are expense reports due?"},
                                               format="json")  # fmt: skip
    assert r.status_code == 200, r.content
    body = r.json()
    claims = body["answer"]["claims"]
    assert claims, body
    evidence = {e["id"]: e for e in body["evidence"]}
    for claim in claims:
        for cit in claim["citations"]:
            assert cit["quote"] in evidence[cit["evidence_id"]]["text"]
    assert any("30 days" in c["text"] for c in claims)
    assert body["answer"]["abstention"] is None
    assert body["plan"]["original"] == "When are expense reports due?"
    assert body["as_of"]["content"] is not None


def test_it_abstains_with_a_reason_and_a_result_list_when_nothing_readable_matches(corpus) -> None:
    r = client_for(corpus.tokens["bob"]).post("/api/v1/answers", {"question": "How do I renew the VPN certificate?"},
                                               format="json")  # fmt: skip
    body = r.json()
    assert r.status_code == 200
    assert body["answer"]["claims"] == []
    assert body["answer"]["abstention"]["reason"] in {"no_evidence", "weak_evidence", "unknown_entity"}
    assert "WireGuard" not in r.content.decode()
    assert isinstance(body["results"], list)


def test_a_member_of_the_group_gets_the_restricted_answer(corpus) -> None:
    r = client_for(corpus.tokens["alice"]).post("/api/v1/answers", {"question": "Which protocol does the VPN use?"},
                                                 format="json")  # fmt: skip
    assert "WireGuard" in r.content.decode()


def test_search_returns_ranked_results_with_snippets(corpus) -> None:
    r = client_for(corpus.tokens["alice"]).get("/api/v1/search", {"q": "VPN laptop profile"})
    assert r.status_code == 200
    results = r.json()["results"]
    assert results[0]["title"] == "VPN setup"
    assert "VPN" in results[0]["snippet"]


def test_quoted_phrases_and_exclusions_filter_inside_retrieval(corpus) -> None:
    c = client_for(corpus.tokens["alice"])
    titles = [r["title"] for r in c.get("/api/v1/search", {"q": "reports -VPN"}).json()["results"]]
    assert "VPN setup" not in titles
    titles = [r["title"] for r in c.get("/api/v1/search", {"q": '"per diem rate"'}).json()["results"]]
    assert titles == ["Travel expenses"]


def test_the_tenant_cannot_be_chosen_by_header_or_parameter(corpus) -> None:
    c = client_for(corpus.tokens["mallory"])
    r = c.get("/api/v1/search", {"q": "expense reports", "tenant": corpus.tenant_a.slug},
              HTTP_X_TENANT=str(corpus.tenant_a.pk))  # fmt: skip
    assert r.status_code == 200
    assert r.json()["results"] == []
    assert "Expense" not in r.content.decode()


@pytest.mark.parametrize(
    "body,code",
    [
        ({}, "invalid_request"),
        ({"question": ""}, "invalid_request"),
        ({"question": "x" * 1001}, "invalid_request"),
        ({"question": "ok", "filters": {"sources": ["nope"]}}, "invalid_request"),
        ({"question": "ok", "filters": {"after": "2024-05-01", "before": "2024-01-01"}}, "invalid_request"),
        ({"question": "reports after:2024-13-45"}, "invalid_date"),
        ({"question": "reports source:dropbox"}, "unknown_source"),
        (["not", "an", "object"], "invalid_request"),
    ],
)
def test_bad_input_gets_a_400_with_a_machine_readable_code(corpus, body, code) -> None:
    r = client_for(corpus.tokens["alice"]).post("/api/v1/answers", body, format="json")
    assert r.status_code == 400, r.content
    assert r.json()["error"]["code"] == code


@pytest.mark.parametrize("fmt", ["multipart", "form"])
def test_a_body_that_is_not_json_gets_a_coded_415_and_no_answer(corpus, fmt) -> None:
    client = client_for(corpus.tokens["alice"])
    if fmt == "multipart":
        r = client.post("/api/v1/answers", {"question": "When are expense reports due?"}, format="multipart")
    else:
        r = client.post("/api/v1/answers", "question=When+are+expense+reports+due%3F",
                        content_type="application/x-www-form-urlencoded")  # fmt: skip
    assert r.status_code == 415, r.content
    assert r.json()["error"]["code"] == "unsupported_media_type"


def test_requests_without_a_valid_token_are_refused(corpus) -> None:
    assert APIClient().post("/api/v1/answers", {"question": "x"}, format="json").status_code == 401
    r = client_for("cairn_deadbeef_nope").get("/api/v1/search", {"q": "expense"})
    assert r.status_code == 401
    assert r.json()["error"]["code"] == "authentication_failed"


def test_the_openapi_schema_is_served(corpus) -> None:
    r = client_for(corpus.tokens["alice"]).get("/api/v1/schema", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert r.status_code == 200
    assert "/api/v1/answers" in r.content.decode()
