"""Entities and periods bind, end to end through ingestion and the answers API (issue 14).

One tenant holds three quarters of Apple filings, one NVIDIA filing (all plain-text 10-Q cover
pages plus an MD&A sentence, ingested through the real pipeline so ``Document.about`` comes from
the cover page) and three handbook pages.  Every document was *updated* in 2026, so any answer
that depends on a 2023 period can only come from the period the content describes.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from retrieval.actions import do_create_source, do_enqueue_document
from retrieval.contracts import SourceDocument
from retrieval.models import Document
from tenants.context import tenant_context
from tests.support import client_for, ingest_inline, unique

PUBLIC = (("public:tenant",),)
UPDATED = datetime(2026, 3, 2, tzinfo=UTC)


def cover(registrant: str, ticker: str, period: str, body: str) -> str:
    return (
        "UNITED STATES SECURITIES AND EXCHANGE COMMISSION\nFORM 10-Q\n"
        f"QUARTERLY REPORT PURSUANT TO SECTION 13 OR 15(d)\nFor the quarterly period ended {period}\n"
        f"{registrant}\n(Exact name of Registrant as specified in its charter)\n"
        f"Common Stock {ticker} The Nasdaq Stock Market LLC\n\n"
        "This Quarterly Report on Form 10-Q contains forward-looking statements about revenue.\n\n"
        f"{body}\n"
    )


FILINGS = {
    "2023 Q1 AAPL": cover("Apple Inc.", "AAPL", "December 31, 2022",
                          "Total net sales were $117,154 million during the first quarter of 2023."),
    "2023 Q2 AAPL": cover("Apple Inc.", "AAPL", "April 1, 2023",
                          "Total net sales were $94,836 million during the second quarter of 2023."),
    "2023 Q3 AAPL": cover("Apple Inc.", "AAPL", "July 1, 2023",
                          "Total net sales were $81,797 million during the third quarter of 2023. "
                          "iPhone net sales were $39,669 million during the third quarter of 2023."),
    "2023 Q3 NVDA": cover("NVIDIA CORPORATION", "NVDA", "October 29, 2023",
                          "Revenue for the third quarter of fiscal year 2024 was $18,120 million, up 206% from a "
                          "year ago. Sales to one customer represented 13% of total revenue."),
    # A long filing whose statement row sits after pages of prose that repeat the question's words.
    "2023 Q2 AMZN": cover("AMAZON.COM, INC.", "AMZN", "June 30, 2023", "\n\n".join(
        [f"Amazon discusses revenue recognition policy number {i} for the quarter in general terms here." for i in range(60)]
        + ["Total net sales: $121,234 million, three months ended June 30, 2022; $134,383 million, three months "
           "ended June 30, 2023; $237,684 million, six months ended June 30, 2022; $261,741 million, six months "
           "ended June 30, 2023."]
    )),
    # Two tables of the same measure: products and services (the one the question ranks), then segments.
    "2023 Q1 AMZN": cover("AMAZON.COM, INC.", "AMZN", "March 31, 2023", "\n\n".join(
        [f"Amazon describes its revenue recognition for arrangement type {i} in general terms here." for i in range(30)]
        + ["Net sales by groups of similar products and services is as follows (in millions):"]
        + [f"{label} (Net Sales): ${a:,} million, three months ended March 31, 2022; ${b:,} million, three months "
           "ended March 31, 2023."
           for label, a, b in (("Online stores", 51_129, 51_096), ("Physical stores", 4_591, 4_895),
                               ("Third-party seller services", 25_335, 29_820), ("AWS", 18_441, 21_354),
                               ("Consolidated", 116_444, 127_358))]
        + [f"Segment results are reviewed by the chief operating decision maker, note {i}." for i in range(30)]
        + [f"{label} (Net Sales): ${a:,} million, three months ended March 31, 2022; ${b:,} million, three months "
           "ended March 31, 2023."
           for label, a, b in (("North America", 69_244, 76_881), ("International", 28_759, 29_123))]
    )),
}  # fmt: skip
HANDBOOK = {
    "equipment": ("Equipment", "All TTS employees are issued an Apple iPhone. Laptops are issued by IT."),
    "paid-parental-leave": (
        "Paid parental leave",
        "Paid parental leave (PPL) is available after the birth or placement of a child. "
        "You are entitled to 12 weeks of paid time off for each qualifying event.",
    ),
    "breaks": ("Breaks and leave basics", "You get two 15-minute breaks per day. Leave basics are described here."),
}


@pytest.fixture(scope="module")
def acme(django_db_setup: None, django_db_blocker: Any) -> dict[str, Any]:
    with django_db_blocker.unblock():
        return _load_acme()


def _load_acme() -> dict[str, Any]:
    return _load_tenant("acme", FILINGS, HANDBOOK)


def _load_tenant(slug: str, filings_by_id: dict[str, str], handbook: dict[str, tuple[str, str]]) -> dict[str, Any]:
    from tenants.actions import do_add_member, do_create_api_token, do_create_tenant, do_create_user

    tenant = do_create_tenant(unique(slug), slug.title())
    name = unique("alice")
    alice = do_create_user(name, f"{name}@example.com", "pw-" + name, email_verified=True)
    token = do_create_api_token(do_add_member(tenant, alice, role="admin"))
    with tenant_context(tenant.pk):
        filings = do_create_source("sharepoint", "10-Q library", authority_tier=0)
        wiki = do_create_source("confluence", "Handbook", authority_tier=2)
        for ext, text in filings_by_id.items():
            do_enqueue_document(filings, SourceDocument(
                external_id=ext, title=f"{ext}.pdf", url=f"https://files.example.com/{ext.replace(' ', '-')}",
                content=text.encode(), media_type="text/plain", acl=PUBLIC, source_version=1, container="10-Q",
                updated_at=UPDATED,
            ))  # fmt: skip
        for ext, (title, text) in handbook.items():
            do_enqueue_document(wiki, SourceDocument(
                external_id=ext, title=title, url=f"https://wiki.example.com/{ext}", content=text.encode(),
                media_type="text/plain", acl=PUBLIC, source_version=1, container="HB", updated_at=UPDATED,
            ))  # fmt: skip
    ingest_inline(tenant.pk)
    return {"tenant": tenant, "token": token}


def ask(token: str, question: str, conversation_id: str | None = None) -> dict[str, Any]:
    payload: dict[str, Any] = {"question": question}
    if conversation_id:
        payload["conversation_id"] = conversation_id
    r = client_for(token).post("/api/v1/answers", payload, format="json")
    assert r.status_code == 200, r.content
    return r.json()


def cited_titles(body: dict[str, Any]) -> set[str]:
    return {s["title"] for s in body["answer"]["sources"]}


def claims(body: dict[str, Any]) -> str:
    return " ".join(c["text"] for c in body["answer"]["claims"])


def test_ingestion_records_the_company_and_fiscal_period_from_the_cover_page(acme) -> None:
    with tenant_context(acme["tenant"].pk):
        about = dict(Document.objects.values_list("external_id", "about"))
    assert about["2023 Q3 AAPL"] | {} == {
        "form": "10-Q", "period_end": "2023-07-01", "calendar_year": 2023, "calendar_quarter": 2,
        "entity": "Apple", "kind": "company", "fiscal_year": 2023, "fiscal_quarter": 3,
    }  # fmt: skip
    assert (about["2023 Q3 NVDA"]["fiscal_year"], about["2023 Q3 NVDA"]["fiscal_quarter"]) == (2024, 3)
    assert about["equipment"] == {}


def test_apples_latest_quarter_is_answered_from_apples_newest_filing_and_never_from_nvidias(acme) -> None:
    body = ask(acme["token"], "What was Apple's revenue in the latest quarter?")

    assert body["answer"]["abstention"] is None, body["answer"]
    assert cited_titles(body) == {"2023 Q3 AAPL.pdf"}
    assert "81,797" in claims(body)
    assert body["plan"]["entity_scope"] == ["Apple"]
    assert body["plan"]["period_scope"] == ["2023-07-01"]
    assert body["trace"]["scope"]["set_aside"].get("other_entity:NVIDIA", 0) >= 1


def test_a_named_quarter_is_the_period_the_filing_describes_not_a_window_on_updated_dates(acme) -> None:
    for question in ("What was Apple's revenue in Q2 2023?", "AAPL net sales Q2 FY2023",
                     "What were Apple's net sales in the second quarter of fiscal 2023?"):  # fmt: skip
        body = ask(acme["token"], question)
        assert body["answer"]["abstention"] is None, (question, body["answer"])
        assert cited_titles(body) == {"2023 Q2 AAPL.pdf"}, question
        assert "94,836" in claims(body)
        assert body["plan"]["filters"]["after"] is None and body["plan"]["filters"]["before"] is None
        assert body["plan"]["time_applied"] == ["content period: Apple Q2 FY2023 (quarter ended 2023-04-01)"]


def test_a_statement_row_deep_in_a_long_filing_answers_with_only_the_cell_of_the_quarter_asked(acme) -> None:
    body = ask(acme["token"], "What were Amazon's total net sales in the quarter ended June 30, 2023?")

    assert body["answer"]["abstention"] is None, body["answer"]
    assert cited_titles(body) == {"2023 Q2 AMZN.pdf"}
    assert "Total net sales: $134,383 million, three months ended June 30, 2023" in [
        c["text"] for c in body["answer"]["claims"]
    ]
    assert "121,234" not in claims(body) and "261,741" not in claims(body)  # the other periods' cells
    assert body["trace"]["scope"]["focused_search"]["chunks"] > 0


def test_a_follow_up_about_the_previous_quarter_counts_back_from_the_period_the_first_turn_used(acme) -> None:
    first = ask(acme["token"], "What was Apple's revenue in Q2 2023?")
    second = ask(acme["token"], "How does that compare with the previous quarter?", first["conversation_id"])

    assert second["trace"]["followup"]["is_followup"]
    assert [p["period"] for p in second["trace"]["comparison"]["parts"]] == [
        "Apple Q1 FY2023 (quarter ended 2022-12-31)", "Apple Q2 FY2023 (quarter ended 2023-04-01)"]  # fmt: skip
    assert cited_titles(second) <= {"2023 Q1 AAPL.pdf", "2023 Q2 AAPL.pdf"}
    assert "117,154" in claims(second)
    # Compared in code: the earlier figure, the quarter before it, and the change.
    assert second["plan"]["intent"] == "compare"
    assert second["answer"]["conclusion"] == (
        "It decreased by $22,318 million ($22.32 billion), from $117,154 million (the previous quarter) to "
        "$94,836 million (Q2 2023)."
    )

    alone = ask(acme["token"], "What was Apple's revenue in the previous quarter?")
    assert alone["plan"]["period_scope"] == ["2023-04-01"]  # the quarter before the latest one


def test_a_product_named_without_its_company_is_asked_in_that_companys_fiscal_calendar(acme) -> None:
    # Apple's fiscal Q2 2023 ended April 1, 2023; Amazon's calendar Q2 2023 (June 30) is another company's.
    body = ask(acme["token"], "What were iPhone net sales in Q2 2023?")

    assert body["plan"]["period_scope"] == ["2023-04-01"]
    assert body["plan"]["period_label"] == "Apple Q2 FY2023 (quarter ended 2023-04-01)"


def test_an_updated_date_window_is_applied_only_when_the_user_asks_for_it(acme) -> None:
    body = ask(acme["token"], "What was Apple's revenue in Q2 2023? after:2026-06-01")

    assert body["plan"]["filters"]["after"] == "2026-06-01"
    assert body["plan"]["time_applied"][-1] == "updated date: 2026-06-01 to …"
    assert body["answer"]["abstention"] is not None  # every document was updated in March 2026


def test_iphone_revenue_is_not_answered_by_the_handbook_sentence_about_issued_phones(acme) -> None:
    body = ask(acme["token"], "What was Apple's iPhone revenue?")

    assert "issued an Apple iPhone" not in claims(body)
    assert "Equipment" not in cited_titles(body)
    assert body["answer"]["abstention"] is None, body["answer"]
    assert "39,669" in claims(body)


def test_a_question_about_phones_alone_may_still_be_answered_by_the_handbook(acme) -> None:
    body = ask(acme["token"], "Are TTS employees issued an iPhone?")

    assert "Equipment" in cited_titles(body), body["answer"]


def test_paid_parental_leave_is_answered_from_the_ppl_page_not_the_breaks_sentence(acme) -> None:
    body = ask(acme["token"], "How much paid parental leave do I get?")

    assert body["answer"]["abstention"] is None, body["answer"]
    assert "12 weeks of paid time off" in claims(body)
    assert "15-minute breaks" not in claims(body)


def test_claims_that_fail_the_relevance_check_are_dropped_with_their_reason_in_the_trace(acme) -> None:
    body = ask(acme["token"], "How much revenue did NVIDIA report in the latest quarter?")

    assert body["answer"]["abstention"] is None, body["answer"]
    assert cited_titles(body) == {"2023 Q3 NVDA.pdf"}
    assert "18,120" in claims(body)
    assert "forward-looking" not in claims(body)
    dropped = [v for v in body["trace"]["verification"] if not v["relevant"]]
    assert dropped and all(any(r.startswith("not_relevant:") for r in v["reasons"]) for v in dropped)
    assert any("not_relevant:boilerplate" in v["reasons"] for v in dropped)


@pytest.mark.parametrize(
    "question,reason",
    [
        ("What was Foobarco's revenue in the latest quarter?", "unknown_entity"),
        ("What does the ZQXW office do?", "unknown_entity"),
        ("What was Intel's revenue in the latest quarter?", "entity_not_found"),
        ("What was Apple's revenue in Q1 2019?", "no_documents_for_period"),
        ("What were Apple's net sales in fiscal 2031?", "no_documents_for_period"),
    ],
)
def test_bad_entities_and_periods_abstain_with_a_coded_reason(acme, question, reason) -> None:
    body = ask(acme["token"], question)

    assert body["answer"]["claims"] == []
    assert body["answer"]["abstention"]["reason"] == reason


def test_a_question_that_cannot_be_parsed_is_a_coded_400_not_a_500(acme) -> None:
    r = client_for(acme["token"]).post("/api/v1/answers", {"question": "?? -- !!"}, format="json")

    assert r.status_code == 400
    assert r.json()["error"]["code"] == "empty_query"


def test_which_row_ranks_first_is_answered_from_the_whole_table_the_question_ranks(acme) -> None:
    body = ask(acme["token"], "Other than its online stores, which of Amazon's revenue categories brought in the "
               "most money in the quarter ended March 31, 2023?")  # fmt: skip

    assert body["answer"]["abstention"] is None, body["answer"]
    assert [c["text"] for c in body["answer"]["claims"]] == [
        "Third-party seller services (Net Sales): $29,820 million, three months ended March 31, 2023"
    ]
    assert body["trace"]["ranked_table"]["row"] == "Third-party seller services"
    # Online stores (set aside) and North America (another table) do not compete.
    assert "51,096" not in claims(body) and "76,881" not in claims(body)


def test_a_question_naming_no_company_is_not_answered_from_one_of_several_companies_filings(acme) -> None:
    body = ask(acme["token"], "How much were total net sales during the quarter?")

    assert not {t for t in cited_titles(body) if t.endswith(".pdf")}, body["answer"]
    assert body["trace"]["scope"]["set_aside"]["company_not_asked"] >= 1
    # Asked about companies in general, any company's filing may answer.
    asked = ask(acme["token"], "Which company reported total net sales of $81,797 million?")
    assert "2023 Q3 AAPL.pdf" in cited_titles(asked), asked["answer"]


def test_a_tenant_holding_one_companys_filings_is_answered_from_them_without_naming_the_company() -> None:
    token = _load_tenant("apple-only", {"2023 Q3 AAPL": FILINGS["2023 Q3 AAPL"]}, HANDBOOK)["token"]

    body = ask(token, "How much were total net sales during the quarter?")

    assert cited_titles(body) == {"2023 Q3 AAPL.pdf"}, body["answer"]
    assert "81,797" in claims(body)


def test_a_comparison_of_two_named_companies_looks_up_each_in_its_own_filing_and_concludes(acme) -> None:
    body = ask(acme["token"], "Which company had more revenue in its latest quarter: NVIDIA or Apple?")

    assert body["plan"]["intent"] == "compare" and body["answer"]["abstention"] is None, body["answer"]
    assert cited_titles(body) == {"2023 Q3 NVDA.pdf", "2023 Q3 AAPL.pdf"}
    assert body["answer"]["conclusion"].startswith("Apple's revenue ($81,797 million) was larger than NVIDIA's revenue")


def test_a_question_naming_two_companies_keeps_the_filings_of_both_and_of_no_other(acme) -> None:
    # Before, a source had to be about every company named, so none was, and the answer was "entity_not_found".
    body = ask(acme["token"], "What did Apple and NVIDIA say about revenue in their latest quarters?")

    scope = body["trace"]["scope"]
    assert (body["answer"]["abstention"] or {}).get("reason") != "entity_not_found"
    assert scope["kept"] > 0 and scope["set_aside"].get("other_entity:Amazon", 0) >= 1
    assert not any(k in scope["set_aside"] for k in ("other_entity:Apple", "other_entity:NVIDIA"))
    assert {r["title"] for r in body["results"]} & {"2023 Q3 NVDA.pdf", "2023 Q3 AAPL.pdf"}


def test_a_follow_up_comparing_with_another_company_looks_up_the_same_figure_for_it(acme) -> None:
    first = ask(acme["token"], "What was Apple's revenue in the quarter ended July 1, 2023?")
    second = ask(acme["token"], "How does that compare with NVIDIA's in its quarter ended October 29, 2023?",
                 first["conversation_id"])  # fmt: skip

    assert second["trace"]["followup"]["is_followup"] and second["plan"]["intent"] == "compare"
    assert cited_titles(second) == {"2023 Q3 AAPL.pdf", "2023 Q3 NVDA.pdf"}
    assert second["answer"]["conclusion"].startswith(
        "Apple's revenue ($81,797 million) was larger than NVIDIA's revenue ($18,120 million)"
    )
