"""Conflicts are reported only for the same entity, attribute and period stated with different values."""

from __future__ import annotations

from datetime import UTC, datetime

from answers.conflicts import conflict_section, find_conflicts, same_fact_different_value
from answers.contracts import Citation, DraftClaim, EvidenceRecord
from answers.planning import plan_question

AS_OF = datetime(2026, 1, 1, tzinfo=UTC)


def doc(eid: str, text: str, *, document_id: int, title: str = "", tier: int = 2) -> EvidenceRecord:
    return EvidenceRecord(
        id=eid, document_id=document_id, chunk_id=document_id, canonical_url=f"https://wiki.example/{eid}",
        title=title or eid, source_system="confluence", container="HANDBOOK", text=text, char_start=0,
        char_end=len(text), snapshot_sha256="0" * 64, updated_at=datetime(2025, 6, 1, tzinfo=UTC),
        authority_tier=tier, authority="wiki",
    )  # fmt: skip


def claim_from(ev: EvidenceRecord, text: str, cid: str = "c1") -> DraftClaim:
    return DraftClaim(cid, text, (Citation(ev.id, text),))


def conflicts_for(question: str, mine: EvidenceRecord, text: str, *others: EvidenceRecord) -> dict[str, object]:
    report = find_conflicts(plan_question(question, AS_OF), [claim_from(mine, text)], [mine, *others])
    return conflict_section(report)


def test_two_pages_giving_a_different_value_for_the_same_fact_are_a_conflict() -> None:
    a = doc("A", "The VPN gateway listens on port 51820 for all staff.", document_id=1)
    b = doc("B", "The VPN gateway listens on port 1194 for all staff.", document_id=2)
    section = conflicts_for("Which port does the VPN gateway listen on?", a, a.text, b)
    assert section["status"] == "both_views"
    assert section["statement"]


def test_pages_that_merely_differ_are_not_a_conflict() -> None:
    leave = doc("PPL", "You are entitled to 12 weeks of paid parental leave after a birth.", document_id=1)
    breaks = doc("BRK", "You get two 15-minute breaks per day, and 12 paid holidays a year.", document_id=2)
    section = conflicts_for("How much paid parental leave do I get?", leave, leave.text, breaks)
    assert section == {"status": "none", "pairs": [], "statement": ""}


def test_two_quarters_of_the_same_figure_are_a_series_not_a_conflict() -> None:
    q3 = doc("Q3", "Total operating expenses were $13,415 million.", document_id=1, title="2023 Q3 AAPL.pdf")
    q2 = doc("Q2", "Total operating expenses were $13,658 million.", document_id=2, title="2023 Q2 AAPL.pdf")
    assert conflicts_for("What were Apple's operating expenses?", q3, q3.text, q2)["status"] == "none"
    # The same holds when the period is written in the sentence rather than the title.
    assert not same_fact_different_value(
        "Total net sales: $81,797 million, three months ended July 1, 2023.",
        "Total net sales: $94,836 million, three months ended April 1, 2023.",
    )


def test_the_same_figure_for_different_companies_is_not_a_conflict() -> None:
    aapl = doc("AAPL", "Total operating expenses were $13,415 million.", document_id=1, title="2023 Q3 AAPL.pdf")
    nvda = doc("NVDA", "Total operating expenses were $2,662 million.", document_id=2, title="2023 Q3 NVDA.pdf")
    assert conflicts_for("What were the total operating expenses?", aapl, aapl.text, nvda)["status"] == "none"
    assert not same_fact_different_value(
        "Apple reported revenue of $81.8 billion.", "NVIDIA reported revenue of $13.5 billion."
    )


def test_two_services_on_different_runtimes_are_not_a_conflict() -> None:
    api = doc(
        "api",
        "orders-api: runtime Foo 3.2, owner payments-platform, updated 2026-04-14.",
        document_id=1,
        title="Service catalogue: orders-api",
    )
    worker = doc("worker", "orders-worker: runtime Foo 3.4, owner fulfilment, updated 2026-03-02.", document_id=2,
                 title="Service catalogue: orders-worker")  # fmt: skip
    assert conflicts_for("Which runtime does orders-api run on?", api, api.text, worker)["status"] == "none"
    assert not same_fact_different_value(api.text, worker.text, api, worker)
    # One service with two runtimes is.
    assert same_fact_different_value(
        "orders-api: runtime Foo 3.2, owner payments-platform.", "orders-api: runtime Foo 3.4, owner payments-platform."
    )


def test_the_same_period_and_company_with_two_values_is_a_conflict() -> None:
    filed = doc("F", "Total operating expenses were $13,415 million.", document_id=1, title="2023 Q3 AAPL.pdf")
    restated = doc("R", "Total operating expenses were $13,512 million.", document_id=2, title="2023 Q3 AAPL restated")
    assert conflicts_for("What were Apple's operating expenses?", filed, filed.text, restated)["pairs"]


def test_opposite_polarity_of_the_same_statement_is_a_conflict_but_a_shared_value_is_not() -> None:
    assert same_fact_different_value(
        "Contractors may work remotely from abroad.", "Contractors may not work remotely from abroad."
    )
    # Both say 12 weeks; the second also mentions another number in the same slot family.
    assert not same_fact_different_value(
        "You are entitled to 12 weeks of paid parental leave.", "You are entitled to 12 weeks of paid parental leave."
    )
