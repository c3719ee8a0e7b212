"""Comparison questions: two figures looked up on their own, compared in code."""

from __future__ import annotations

from decimal import Decimal

from answers.comparisons import conclude, first_amount, split_comparison


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
        "by $1.20 billion."
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
