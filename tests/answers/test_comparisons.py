"""Comparison questions: two figures looked up on their own, compared in code."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from answers.comparisons import (
    Amount,
    amount_for_period,
    conclude,
    first_amount,
    first_percent,
    part_figure,
    split_comparison,
)
from answers.query_parser import parse_query

AS_OF = datetime(2026, 12, 1, tzinfo=UTC)


def _between(question: str) -> list[str] | None:
    c = split_comparison(question, parse_query(question, AS_OF))
    return None if c is None else [p.question for p in c.parts]


def test_which_of_two_measures_is_larger_becomes_one_question_per_measure() -> None:
    c = split_comparison(
        "Which was larger in the quarter ended April 30, 2023 for NVIDIA: research and development or net income?"
    )
    assert c is not None and c.kind == "larger"
    assert [p.question for p in c.parts] == [
        "What was research and development in the quarter ended April 30, 2023 for NVIDIA?",
        "What was net income in the quarter ended April 30, 2023 for NVIDIA?",
    ]
    text = conclude(c, first_amount("Research and development: $1,875 million, three months ended April 30, 2023"),
                    first_amount("Net income: $2,043 million, three months ended April 30, 2023"))  # fmt: skip
    assert (
        text
        == "Net income ($2,043 million) was larger than research and development ($1,875 million), by $168 million."
    )


def test_whose_figure_is_larger_keeps_each_company_with_its_own_period() -> None:
    c = split_comparison(
        "Whose quarterly revenue was larger: NVIDIA's for the quarter ended April 30, 2023 or Intel's for the "
        "quarter ended April 1, 2023?"
    )
    assert c is not None
    assert [p.question for p in c.parts] == [
        "What was NVIDIA's quarterly revenue for the quarter ended April 30, 2023?",
        "What was Intel's quarterly revenue for the quarter ended April 1, 2023?",
    ]
    a, b = (
        first_amount("Revenue: $7,192 million, three months ended April 30, 2023"),
        first_amount("Total revenue of $11.7 billion"),
    )
    assert a is not None and b is not None and b.millions == Decimal("11700")
    assert conclude(c, a, b).startswith("Intel's quarterly revenue ($11.7 billion) was larger than NVIDIA's")


def test_how_much_larger_answers_about_the_first_figure_even_when_it_is_smaller() -> None:
    c = split_comparison(
        "How much larger were Amazon's AWS net sales than Microsoft's Intelligent Cloud revenue in the quarter "
        "ended September 30, 2023?"
    )
    assert c is not None and c.parts[1].question == (
        "What was Microsoft's Intelligent Cloud revenue in the quarter ended September 30, 2023?"
    )
    a, b = (
        first_amount("AWS (net sales): $23,059, three months ended September 30, 2023"),
        first_amount("$24,259 million"),
    )
    assert a is not None and a.text == "$23,059"  # the date's comma is not part of the amount
    assert conclude(c, a, b) == (
        "Amazon's AWS net sales ($23,059) was smaller than Microsoft's Intelligent Cloud revenue ($24,259 million), "
        "by $1,200 million ($1.20 billion)."
    )


def test_did_it_grow_compares_the_later_period_with_the_earlier_one() -> None:
    c = split_comparison(
        "Did Apple's total net sales grow between the quarter ended June 25, 2022 and the quarter ended July 1, 2023?"
    )
    assert c is not None and c.kind == "grew"
    text = conclude(c, first_amount("$82,959 million"), first_amount("$81,797 million"))
    assert text.startswith("No. It decreased from $82,959 million (the quarter ended June 25, 2022) to $81,797 million")


def test_a_question_that_compares_nothing_is_not_split() -> None:
    for q in ("How much paid parental leave do I get?", "Which is better: Zoom or Meet?",
              "What was Apple's revenue in the latest quarter?", "Did the policy change in 2023?"):  # fmt: skip
        assert split_comparison(q) is None, q
    assert first_amount("no figure here") is None
    assert first_amount("a loss of -$1,019 million") is not None and first_amount("-$1,019 million").millions < 0  # type: ignore[union-attr]


def test_by_how_much_it_grew_is_answered_with_the_change_in_both_units() -> None:
    c = split_comparison(
        "By how much did AWS net sales grow from the September 2022 quarter to the September 2023 quarter?"
    )
    assert c is not None and c.kind == "grew" and c.how_much
    assert [p.question for p in c.parts] == [
        "What was AWS net sales in the September 2022 quarter?",
        "What was AWS net sales in the September 2023 quarter?",
    ]
    text = conclude(
        c, first_amount("Net sales (AWS): $20,538 million"), first_amount("Net sales (AWS): $23,059 million")
    )
    assert text == (
        "It increased by $2,521 million ($2.52 billion), from $20,538 million (the September 2022 quarter) to "
        "$23,059 million (the September 2023 quarter)."
    )
    fell = split_comparison("How much did Intel's revenue fall from Q1 2023 to Q2 2023?")
    assert fell is not None and fell.how_much
    assert conclude(fell, first_amount("$12.9 billion"), first_amount("$11.7 billion")).startswith(
        "It decreased by $1,200 million ($1.20 billion), from $12.9 billion (Q1 2023)"
    )


def test_which_company_earned_more_keeps_each_company_with_its_own_period() -> None:
    c = split_comparison(
        "Which company earned more net income: Apple in its quarter ended April 1, 2023, or Microsoft in its "
        "quarter ended March 31, 2023?"
    )
    assert c is not None and c.kind == "larger"
    assert [p.question for p in c.parts] == [
        "What was Apple's net income in the quarter ended April 1, 2023?",
        "What was Microsoft's net income in the quarter ended March 31, 2023?",
    ]
    text = conclude(c, first_amount("Net income: $24,160 million"), first_amount("Net income: $18,299 million"))
    assert text.startswith("Apple's net income ($24,160 million) was larger than Microsoft's net income")


def test_a_share_of_another_figure_is_computed_from_the_two_cited_figures() -> None:
    named = split_comparison(
        "What was Microsoft's operating margin (operating income as a percentage of revenue) for the quarter "
        "ended September 30, 2023?"
    )
    plain = split_comparison(
        "What was Apple's gross margin as a share of total net sales in the quarter ended July 1, 2023?"
    )
    assert named is not None and plain is not None and named.kind == plain.kind == "share"
    assert [p.question for p in named.parts] == [
        "What was Microsoft's operating income for the quarter ended September 30, 2023?",
        "What was Microsoft's revenue for the quarter ended September 30, 2023?",
    ]
    assert plain.parts[1].question == "What was Apple's total net sales in the quarter ended July 1, 2023?"
    text = conclude(
        named, first_amount("Operating income: $26,895 million"), first_amount("Total revenue: $56,517 million")
    )
    assert text == "Operating income ($26,895 million) was 47.6% of revenue ($56,517 million)."
    assert "cannot be a share" in conclude(named, first_amount("$5 million"), first_amount("$0 million"))
    # An ordinary question that mentions a percentage is not split.
    assert split_comparison("What was Apple's gross margin percentage in the quarter ended July 1, 2023?") is None


def test_a_statement_row_gives_the_amount_of_the_resolved_quarter_not_its_first_cell() -> None:
    from answers.comparisons import amount_for_period

    row = ("Net sales (AWS): $16,110 million, three months ended September 30, 2021; $20,538 million, three months "
           "ended September 30, 2022; $58,718 million, nine months ended September 30, 2022.")  # fmt: skip
    assert amount_for_period(row, ("2022-09-30",)) == first_amount("$20,538 million")
    assert amount_for_period(row, ("2023-09-30",)) is None
    # Without a resolved period, the part's own words name the quarter.
    assert amount_for_period(row, (), "the September 2022 quarter") == first_amount("$20,538 million")
    assert amount_for_period(row, (), "the March 2022 quarter") is None
    assert amount_for_period("Revenue was $7.2 billion.", ("2022-09-30",)) is None


def test_what_share_came_from_a_segment_divides_the_segment_by_the_total() -> None:
    c = split_comparison("What share of NVIDIA's revenue came from Data Center in the quarter ended April 30, 2023?")
    assert c is not None and c.kind == "share"
    assert [p.question for p in c.parts] == [
        "What was NVIDIA's Data Center revenue in the quarter ended April 30, 2023?",
        "What was NVIDIA's revenue in the quarter ended April 30, 2023?",
    ]
    text = conclude(
        c, first_amount("Data Center (revenue): $4,284 million"), first_amount("Total revenue: $7,192 million")
    )
    assert text == "Data Center revenue ($4,284 million) was 59.6% of revenue ($7,192 million)."
    total = split_comparison(
        "What share of Intel's total net revenue came from Client Computing in the quarter ended September 30, 2023?"
    )
    assert total is not None and total.parts[0].question.startswith("What was Intel's Client Computing net revenue")


def test_which_company_had_the_higher_figure_and_by_how_much_is_one_comparison() -> None:
    c = split_comparison(
        "Which company had the higher net income: NVIDIA in its quarter ended July 30, 2023 or Intel in its quarter "
        "ended July 1, 2023? By how much?"
    )
    assert c is not None and c.kind == "larger"
    assert [p.question for p in c.parts] == [
        "What was NVIDIA's net income in the quarter ended July 30, 2023?",
        "What was Intel's net income in the quarter ended July 1, 2023?",
    ]
    text = conclude(c, first_amount("Net income: $6,188 million"), first_amount("Net income (loss): $1,473 million"))
    assert text.endswith("by $4,715 million ($4.72 billion).")


def test_how_many_percentage_points_higher_is_the_difference_of_two_percentages() -> None:
    c = split_comparison(
        "How many percentage points higher was Apple's Services gross margin percentage than its Products gross "
        "margin percentage in the quarter ended June 25, 2022?"
    )
    assert c is not None and c.points
    # "its" is Apple's: the second lookup names the company, as the first does.
    assert [p.question for p in c.parts] == [
        "What was Apple's Services gross margin percentage in the quarter ended June 25, 2022?",
        "What was Apple's Products gross margin percentage in the quarter ended June 25, 2022?",
    ]
    services = amount_for_period(
        "Services (gross margin percentage): 71.5%, three months ended June 25, 2022; 69.8%, three months ended "
        "June 26, 2021; 72.2%, nine months ended June 25, 2022.", ("2022-06-25",), percent=True,
    )  # fmt: skip
    products = amount_for_period(
        "Products (gross margin percentage): 34.5%, three months ended June 25, 2022; 36.0%, three months ended "
        "June 26, 2021.", ("2022-06-25",), percent=True,
    )  # fmt: skip
    assert services is not None and products is not None
    assert (services.text, products.text) == ("71.5%", "34.5%")
    assert conclude(c, services, products) == (
        "Apple's Services gross margin percentage (71.5%) was 37.0 percentage points higher than Apple's Products "
        "gross margin percentage (34.5%)."
    )
    # A percentage stated in prose is read when no cell names the quarter.
    assert first_percent("Services gross margin percentage was 71.5% in the quarter.") == Amount(
        "71.5%", Decimal("71.5"), percent=True
    )


def test_a_combined_figure_of_two_segments_is_their_sum_and_each_keeps_the_owner() -> None:
    c = split_comparison(
        "What was the combined operating income of Amazon's North America and International segments in Q1 2023?"
    )
    assert c is not None and c.kind == "sum" and not c.verdict
    assert [p.question for p in c.parts] == [
        "What was Amazon's North America operating income in Q1 2023?",
        "What was Amazon's International operating income in Q1 2023?",
    ]
    a = amount_for_period("North America (Operating Income (Loss)): -$1,568 million, three months ended March 31, 2022; "
                          "$898 million, three months ended March 31, 2023", ("2023-03-31",))  # fmt: skip
    b = amount_for_period("International (Operating Income (Loss)): -$1,281 million, three months ended March 31, "
                          "2022; -$1,247 million, three months ended March 31, 2023", ("2023-03-31",))  # fmt: skip
    assert a is not None and b is not None
    assert conclude(c, a, b) == (
        "Combined: Amazon's North America operating income ($898 million) and Amazon's International operating "
        "income (-$1,247 million) add up to -$349 million."
    )


def test_did_two_segments_make_or_lose_money_together_is_answered_by_the_sign_of_their_sum() -> None:
    c = split_comparison(
        "Taken together, did Amazon's North America and International segments make or lose money at the operating "
        "level in Q1 2023, and what was the combined figure?"
    )
    assert c is not None and c.kind == "sum" and c.verdict
    assert [p.question for p in c.parts][1] == "What was Amazon's International operating income in Q1 2023?"
    loss = conclude(c, Amount("$898 million", Decimal(898)), Amount("-$1,247 million", Decimal(-1247)))
    assert loss.startswith("Together they lost money: ") and loss.endswith("add up to -$349 million.")
    gain = conclude(c, Amount("$2,000 million", Decimal(2000)), Amount("-$500 million", Decimal(-500)))
    assert gain.startswith("Together they made money: ") and gain.endswith("add up to $1,500 million ($1.50 billion).")


def test_one_figure_of_two_named_companies_is_compared_in_any_wording() -> None:
    assert _between("Which company had more revenue in its quarter ended September 30, 2023: Amazon or Microsoft?") == [
        "What was Amazon's revenue in the quarter ended September 30, 2023?",
        "What was Microsoft's revenue in the quarter ended September 30, 2023?",
    ]
    assert _between("Which had higher operating income in Q2 2023, Intel or NVIDIA?") == [
        "What was Intel's operating income in Q2 2023?",
        "What was NVIDIA's operating income in Q2 2023?",
    ]
    # "money" is what the asker means by profit; "last quarter" is each company's own latest quarter.
    assert _between("Who made more money last quarter, Intel or Nvidia?") == [
        "What was Intel's net income in the last quarter?",
        "What was NVIDIA's net income in the last quarter?",
    ]
    # Each company keeps the period named after it; the measure named twice is asked once.
    assert _between("Was AAPL's Q2 2023 revenue bigger than Microsoft's fiscal Q3 2023 revenue?") == [
        "What was Apple's revenue in Q2 2023?",
        "What was Microsoft's revenue in fiscal Q3 2023?",
    ]


def test_a_yes_or_no_comparison_of_two_companies_is_answered_yes_or_no() -> None:
    question = "Did Intel earn less net income than NVIDIA in Q2 2023?"
    c = split_comparison(question, parse_query(question, AS_OF))
    assert c is not None and c.kind == "smaller" and c.yes_no
    text = conclude(c, first_amount("Net income: $1,473 million"), first_amount("Net income: $6,188 million"))
    assert text == (
        "Yes. Intel's net income ($1,473 million) was smaller than NVIDIA's net income ($6,188 million), "
        "by $4,715 million ($4.72 billion)."
    )


def test_two_companies_without_a_comparison_or_with_a_change_over_time_are_not_one_figure_each() -> None:
    # Two lookups, not one figure compared: the compound or single-question pipeline answers these.
    assert _between("What did Apple and Microsoft say about foreign exchange risk in Q2 2023?") is None
    # Whose growth was faster needs each company's change, not one figure each.
    assert _between("Whose revenue grew faster in Q2 2023, Apple or Microsoft?") is None
    # One company: the forms above or nothing.
    assert _between("Which was higher in Q2 2023 for Intel, gross margin or net income?") is None


def test_each_of_two_periods_goes_to_the_company_named_last_before_it() -> None:
    question = (
        "Compare Apple and NVIDIA on net income for their mid-2023 quarters (Apple's quarter ended July 1, 2023; "
        "NVIDIA's ended July 30, 2023). Which was higher?"
    )
    assert _between(question) == [
        "What was Apple's net income in the quarter ended July 1, 2023?",
        "What was NVIDIA's net income in the quarter ended July 30, 2023?",
    ]


def test_more_wordings_of_a_sum_a_share_a_gap_and_a_change_are_split_into_their_two_figures() -> None:
    forms = {
        "What did NVIDIA's Data Center and Gaming platforms bring in together in the quarter ended July 30, 2023?": (
            "sum",
            "What was NVIDIA's Data Center revenue in the quarter ended July 30, 2023?",
            "What was NVIDIA's Gaming revenue in the quarter ended July 30, 2023?",
        ),
        "Combined revenue of Microsoft's Intelligent Cloud and More Personal Computing segments in Q1 2023?": (
            "sum",
            "What was Microsoft's Intelligent Cloud revenue in Q1 2023?",
            "What was Microsoft's More Personal Computing revenue in Q1 2023?",
        ),
        # The period stated before the brackets, the owner named once.
        "What was AWS's operating margin in Q3 2023 (segment operating income as a percent of AWS net sales)?": (
            "share",
            "What was AWS's segment operating income in Q3 2023?",
            "What was AWS's net sales in Q3 2023?",
        ),
        "Intel R&D as a % of revenue for Q3 2023?": (
            "share",
            "What was Intel's R&D for Q3 2023?",
            "What was Intel's revenue for Q3 2023?",
        ),
        "By how much did Amazon's North America net sales exceed its International net sales in Q2 2023?": (
            "larger",
            "What was Amazon's North America net sales in Q2 2023?",
            "What was Amazon's International net sales in Q2 2023?",
        ),
        "How did Microsoft's Intelligent Cloud revenue change from the December 2022 quarter to the March 2023 "
        "quarter?": (
            "grew",
            "What was Microsoft's Intelligent Cloud revenue in the December 2022 quarter?",
            "What was Microsoft's Intelligent Cloud revenue in the March 2023 quarter?",
        ),
    }
    for question, (kind, first, second) in forms.items():
        c = split_comparison(question)
        assert c is not None and c.kind == kind, question
        assert [p.question for p in c.parts] == [first, second]
    exceed = split_comparison("By how much did Amazon's North America net sales exceed its International net sales?")
    assert exceed is not None and exceed.subject_first


def test_a_change_in_a_percentage_is_stated_in_percentage_points() -> None:
    c = split_comparison("How did Intel's gross margin percentage change from Q1 2023 to Q2 2023?")
    assert c is not None and c.kind == "grew" and c.points
    text = conclude(c, first_percent("Gross margin percentage: 34.2%"), first_percent("Gross margin percentage: 35.8%"))
    assert text == "It increased by 1.6 percentage points, from 34.2% (Q1 2023) to 35.8% (Q2 2023)."


def test_a_cost_printed_as_a_negative_reconciling_item_is_compared_by_its_size() -> None:
    c = split_comparison("Which was larger in Q1 2023 for Apple: R&D expense or SG&A expense?")
    assert c is not None
    row = "Research and development expense: -$7,709 million, three months ended December 31, 2022"
    amount = part_figure(c, row, ("2022-12-31",), "R&D expense")
    assert amount is not None and amount.millions == Decimal(7709) and amount.text == "$7,709 million"
    # Only a statement row's cell when one is asked for: a sentence's first amount is not a cell.
    prose = "Total R&D and MG&A expenses for Q3 2023 were $5.2 billion."
    assert part_figure(c, prose, ("2023-09-30",), "R&D expense", cell_only=True) is None
    assert part_figure(c, prose, ("2023-09-30",), "R&D expense") == first_amount(prose)


def test_a_resolved_follow_up_compares_the_earlier_figure_with_the_previous_quarter_or_another_company() -> None:
    earlier = "What was Apple's net income in the quarter ended July 1, 2023?"
    c = split_comparison(f"How does that compare with the previous quarter: {earlier}")
    assert c is not None and c.kind == "grew" and c.how_much
    assert [p.question for p in c.parts] == [
        "What was Apple's net income in the previous quarter, before the quarter ended July 1, 2023?",
        earlier,
    ]
    c = split_comparison(f"How does that compare with NVIDIA's in its quarter ended July 30, 2023: {earlier}")
    assert c is not None and c.kind == "larger"
    assert [p.question for p in c.parts] == [
        earlier,
        "What was NVIDIA's net income in the quarter ended July 30, 2023?",
    ]
    # The same company, or an earlier question that is no lookup of one figure, is no such comparison.
    assert split_comparison(f"How does that compare with Apple's: {earlier}") is None
    assert split_comparison("How does that compare with NVIDIA: How do I book travel?") is None


def test_a_share_without_what_was_needs_a_company_before_as_a_percent() -> None:
    assert split_comparison("Net income as a % of revenue for Intel in Q3 2023?") is None
    c = split_comparison("Intel net income as a % of revenue for Q3 2023?")
    assert c is not None and c.parts[0].question == "What was Intel's net income for Q3 2023?"
