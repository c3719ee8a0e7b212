"""Fiscal calendars, cover-page metadata and period resolution (no database)."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from answers.planning import plan_question
from answers.query_parser import parse_query
from answers.scoping import resolve_periods, unknown_entities
from retrieval.entities import describe_document, fiscal_quarter_of

AS_OF = datetime(2026, 12, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    "period_end,fy_end_month,expected",
    [
        (date(2023, 7, 1), 9, (2023, 3)),  # Apple: Q3 FY2023 ends July 1, 2023
        (date(2022, 12, 31), 9, (2023, 1)),  # Apple's fiscal 2023 starts in October 2022
        (date(2023, 3, 31), 6, (2023, 3)),  # Microsoft: fiscal year ends June 30
        (date(2023, 9, 30), 6, (2024, 1)),
        (date(2023, 10, 29), 1, (2024, 3)),  # NVIDIA: fiscal 2024 ends late January 2024
        (date(2023, 4, 30), 1, (2024, 1)),
        (date(2022, 10, 1), 12, (2022, 3)),  # Intel: a 52/53-week quarter ending just after September
        (date(2023, 12, 30), 12, (2023, 4)),
    ],
)
def test_a_quarter_end_maps_to_the_companys_fiscal_quarter(period_end, fy_end_month, expected) -> None:
    assert fiscal_quarter_of(period_end, fy_end_month) == expected


def test_a_cover_page_names_the_registrant_and_the_period() -> None:
    text = (
        "FORM 10-Q\n(Mark One)\nFor the quarterly period ended October 29, 2023\nOR\n"
        "NVIDIA CORPORATION\n(Exact name of registrant as specified in its charter)\n"
    )
    assert describe_document(text) == {
        "form": "10-Q", "period_end": "2023-10-29", "calendar_year": 2023, "calendar_quarter": 4,
        "entity": "NVIDIA", "kind": "company", "fiscal_year": 2024, "fiscal_quarter": 3,
    }  # fmt: skip


def test_a_cover_without_a_registrant_line_falls_back_to_the_ticker() -> None:
    text = "FORM 10-Q\nFor the Quarterly Period Ended March 31, 2023\nTrading Symbol MSFT\n"
    about = describe_document(text)
    assert (about["entity"], about["fiscal_year"], about["fiscal_quarter"]) == ("Microsoft", 2023, 3)


def test_a_page_that_is_not_a_filing_has_no_period() -> None:
    assert describe_document("All TTS employees are issued an Apple iPhone for the quarter ended July 1, 2023.") == {}


APPLE = [
    {"entity": "Apple", "period_end": "2022-06-25", "fiscal_year": 2022, "fiscal_quarter": 3,
     "calendar_year": 2022, "calendar_quarter": 2},
    {"entity": "Apple", "period_end": "2022-12-31", "fiscal_year": 2023, "fiscal_quarter": 1,
     "calendar_year": 2022, "calendar_quarter": 4},
    {"entity": "Apple", "period_end": "2023-04-01", "fiscal_year": 2023, "fiscal_quarter": 2,
     "calendar_year": 2023, "calendar_quarter": 1},
    {"entity": "Apple", "period_end": "2023-07-01", "fiscal_year": 2023, "fiscal_quarter": 3,
     "calendar_year": 2023, "calendar_quarter": 2},
    {"entity": "NVIDIA", "period_end": "2023-07-30", "fiscal_year": 2024, "fiscal_quarter": 2,
     "calendar_year": 2023, "calendar_quarter": 3},
    {"entity": "NVIDIA", "period_end": "2023-10-29", "fiscal_year": 2024, "fiscal_quarter": 3,
     "calendar_year": 2023, "calendar_quarter": 4},
]  # fmt: skip


def resolved(question: str, entities: tuple[str, ...]) -> dict[str, set[str]]:
    parsed = parse_query(question, AS_OF)
    allowed, _names, _unresolved = resolve_periods(parsed.periods, APPLE, entities, parsed.text)
    return allowed


@pytest.mark.parametrize(
    "question,entity,expected",
    [
        ("What was Apple's revenue in Q2 2023?", "Apple", {"2023-04-01"}),  # fiscal first
        ("Apple net sales in 2023 Q2", "Apple", {"2023-04-01"}),
        ("Apple net sales, Q3 FY2023", "Apple", {"2023-07-01"}),
        ("Apple net sales in the third quarter of fiscal 2023", "Apple", {"2023-07-01"}),
        ("Apple net sales in fiscal 2023", "Apple", {"2022-12-31", "2023-04-01", "2023-07-01"}),
        ("Apple's latest quarter", "Apple", {"2023-07-01"}),
        ("Apple's most recent 10-Q", "Apple", {"2023-07-01"}),
        ("Apple revenue in the previous quarter", "Apple", {"2023-04-01"}),
        ("Apple revenue last year", "Apple", {"2022-06-25", "2023-07-01"}),  # the anchor has the comparative
        ("Apple net sales for the quarter ended April 1, 2023", "Apple", {"2023-04-01"}),
        ("Apple net sales for the three months ended March 31, 2023", "Apple", {"2023-04-01"}),
        ("NVIDIA revenue in Q3 2023", "NVIDIA", {"2023-07-30"}),  # no fiscal Q3 2023 filing: calendar Q3
        ("NVIDIA revenue in Q3 FY2024", "NVIDIA", {"2023-10-29"}),
        ("NVIDIA's latest quarter", "NVIDIA", {"2023-10-29"}),
        # Six- and nine-month spans are reported in the filing of the quarter they end with.
        ("Apple net sales for the nine months ended July 1, 2023", "Apple", {"2023-07-01"}),
        ("Apple share buybacks in the first nine months of fiscal 2023", "Apple", {"2023-07-01"}),
        ("Apple net sales in the first half of fiscal 2023", "Apple", {"2023-04-01"}),
        ("NVIDIA Gaming revenue for the first nine months of fiscal year 2024", "NVIDIA", {"2023-10-29"}),
    ],
)
def test_periods_resolve_against_what_the_documents_describe(question, entity, expected) -> None:
    assert resolved(question, (entity,)) == {entity: expected}


def test_previous_counts_back_from_a_named_period_and_compare_keeps_both() -> None:
    follow_up = "How does that compare with the previous quarter: What was Apple's revenue in Q2 2023?"
    assert resolved(follow_up, ("Apple",)) == {"Apple": {"2022-12-31", "2023-04-01"}}
    appended = "What was Apple's revenue in Q2 2023 the previous quarter?"
    assert resolved(appended, ("Apple",)) == {"Apple": {"2022-12-31"}}


def test_a_follow_up_that_names_its_own_quarter_is_about_that_quarter_not_the_earlier_turns_year() -> None:
    follow_up = (
        "How much did that lift Apple's net sales in Q2 2023: I heard Apple changed its pricing starting "
        "fiscal 2023. What changed?"
    )
    assert [p.label for p in parse_query(follow_up, AS_OF).periods] == ["Q2 2023"]
    assert resolved(follow_up, ("Apple",)) == {"Apple": {"2023-04-01"}}
    # Asked alone, the same words name both periods.
    alone = "How much did the pricing change starting fiscal 2023 lift Apple's net sales in Q2 2023?"
    assert len(parse_query(alone, AS_OF).periods) == 2


def test_a_period_no_document_describes_resolves_to_nothing() -> None:
    assert resolved("Apple revenue in Q1 2019", ("Apple",)) == {}
    assert resolved("Intel revenue in the latest quarter", ("Intel",)) == {}


def test_without_a_named_company_each_company_gets_its_own_latest_quarter() -> None:
    assert resolved("revenue in the latest quarter", ()) == {"Apple": {"2023-07-01"}, "NVIDIA": {"2023-10-29"}}


def test_time_words_never_become_an_updated_date_filter_but_operators_do() -> None:
    parsed = parse_query("Apple revenue in Q2 2023 after:2026-06-01", AS_OF)
    assert parsed.periods[0].label == "Q2 2023"
    assert parsed.time_filter is not None and parsed.time_filter.after == date(2026, 6, 1)
    assert parse_query("Apple revenue in Q2 2023", AS_OF).time_filter is None


@pytest.mark.parametrize("surface,canonical", [("AAPL", "Apple"), ("MSFT", "Microsoft"), ("Nvidia", "NVIDIA"),
                                               ("AMZN", "Amazon"), ("INTC", "Intel"), ("iPhone", "iPhone")])  # fmt: skip
def test_public_companies_and_products_are_recognised_by_their_aliases(surface, canonical) -> None:
    assert (surface, canonical) in parse_query(f"What did {surface} report?", AS_OF).entities


def test_a_contraction_is_not_taken_for_an_unknown_company() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    current = plan_question("What's the current major release of ExampleDB?", now).parsed
    assert unknown_entities(current, ["ExampleDB 18 is the current major release."]) == []
    foobarco = plan_question("What was Foobarco's revenue?", now).parsed
    assert unknown_entities(foobarco, ["Revenue was $5 million."]) == ["Foobarco"]


def test_a_place_or_an_everyday_abbreviation_is_not_taken_for_an_unknown_organisation() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    moving = plan_question(
        "I'm moving to Colorado and my HMO won't cover it. Where do I send Colorado's tax withholding form?", now
    ).parsed
    assert unknown_entities(moving, ["Send the completed withholding form for your new state to payroll."]) == []
    # An organisation's own abbreviation still has to be in what the reader may read.
    empmo = plan_question("Does Colorado's EMPMO approve travel?", now).parsed
    assert unknown_entities(empmo, ["Travel is approved by your supervisor."]) == ["EMPMO"]
