"""Follow-ups are rewritten into standalone questions before they are planned."""

from __future__ import annotations

import dataclasses

from answers.followups import ConversationState, resolve_followup
from answers.lexicon import asked_clause
from answers.verification import answer_type


def after(question: str) -> ConversationState:
    return ConversationState(question=question, original=question, plan={}, filters={}, evidence=[],
                             fingerprint="", acl_version=0, index_version=0)  # fmt: skip


def test_the_previous_quarter_counts_from_the_period_the_last_turn_asked_about() -> None:
    r = resolve_followup(
        after("What was NVIDIA's revenue in the quarter ended July 30, 2023?"), "And in the previous quarter?"
    )
    assert r.method == "scope_swap"
    assert r.question == "What was NVIDIA's revenue in the previous quarter, before the quarter ended July 30, 2023?"
    r = resolve_followup(after("What was NVIDIA's revenue in the latest quarter?"), "And in the previous quarter?")
    assert r.question == "What was NVIDIA's revenue in the previous quarter, before the latest quarter?"


def test_a_named_period_replaces_the_previous_one_whole() -> None:
    r = resolve_followup(after("What was Apple's revenue in the quarter ended July 1, 2023?"), "And in Q2 2023?")
    assert r.question == "What was Apple's revenue in Q2 2023?"  # the date's comma did not survive as ", 2023"


def test_another_measure_of_the_same_company_and_period_swaps_only_the_measure() -> None:
    r = resolve_followup(
        after("What were Amazon's total net sales in the quarter ended March 31, 2023?"),
        "And its net income in that quarter?",
    )
    assert r.method == "measure_swap"
    assert r.question == "What were Amazon's net income in the quarter ended March 31, 2023?"
    r = resolve_followup(after("What was NVIDIA's revenue in the latest quarter?"), "What about its net income?")
    assert r.question == "What was NVIDIA's net income in the latest quarter?"


def test_a_follow_up_without_a_possessive_subject_is_still_appended() -> None:
    r = resolve_followup(after("How much paid parental leave do I get?"), "And its eligibility rules?")
    assert r.method == "scope_append"


def test_another_company_asks_the_same_question_about_it() -> None:
    r = resolve_followup(
        after("How much did Amazon spend on sales and marketing in the quarter ended September 30, 2023?"),
        "What about Microsoft?",
    )
    assert r.method == "entity_swap"
    assert r.question == "How much did Microsoft spend on sales and marketing in the quarter ended September 30, 2023?"
    r = resolve_followup(after("What was Apple's revenue in Q2 2023?"), "And NVIDIA?")
    assert r.question == "What was NVIDIA's revenue in Q2 2023?"
    # Not an entity of the catalogue: appended as before.
    assert resolve_followup(after("What was Apple's revenue in Q2 2023?"), "What about Mars?").method == "scope_append"


def test_another_companys_segment_takes_the_place_of_the_one_asked_about() -> None:
    r = resolve_followup(
        after("How much operating income did AWS generate in Q1 2023?"),
        "And Microsoft's Intelligent Cloud segment in the same quarter?",
    )
    assert r.method == "entity_swap"
    assert r.question == "How much operating income did Microsoft's Intelligent Cloud segment generate in Q1 2023?"
    # The same company's other part is not a swap of companies.
    same = resolve_followup(after("How much operating income did AWS generate in Q1 2023?"), "And Amazon's stores?")
    assert same.method != "entity_swap"


def test_the_same_quarter_of_another_company_is_the_same_months_not_its_quarter_of_that_name() -> None:
    # AWS's Q1 2023 ended March 31, 2023; Microsoft's fiscal Q1 2023 ended September 30, 2022.
    last = dataclasses.replace(after("How much operating income did AWS generate in Q1 2023?"),
                               plan={"period_scope": ["2023-03-31"]})  # fmt: skip
    r = resolve_followup(last, "And Microsoft's Intelligent Cloud segment in the same quarter?")
    assert r.question == (
        "How much operating income did Microsoft's Intelligent Cloud segment generate in the quarter ended "
        "March 31, 2023?"
    )
    # Without "the same quarter" the named quarter is kept as asked.
    assert resolve_followup(last, "And Microsoft's Intelligent Cloud segment?").question.endswith("in Q1 2023?")


def test_a_longer_follow_up_led_by_and_with_a_pronoun_leans_on_the_last_question() -> None:
    r = resolve_followup(
        after("How do I tell git to sign my commits with an SSH key instead of GPG?"),
        "And how do I make it sign every commit by default?",
    )
    assert r.method == "anaphora"
    assert r.question == (
        "How do I make it sign every commit by default: How do I tell git to sign my commits with an SSH key "
        "instead of GPG?"
    )
    # Without the lead, a question that long stands alone.
    alone = resolve_followup(
        after("How do I tell git to sign my commits?"), "How do I make it sign every commit by default?"
    )
    assert alone.method == "standalone"


def test_a_follow_up_asked_as_a_condition_is_not_held_to_the_last_questions_kind_of_answer() -> None:
    r = resolve_followup(
        after("How many times am I allowed to resubmit my timesheet?"),
        "And if I need to change it after the pay period has closed?",
    )
    assert r.method == "anaphora"
    assert asked_clause(r.question) == "And if I need to change it after the pay period has closed"
    assert answer_type(r.question) == ""  # not "number": the earlier "how many" only says what "it" is
