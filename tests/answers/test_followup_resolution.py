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


def test_another_kind_of_the_same_thing_takes_the_place_of_the_kind_asked_about() -> None:
    r = resolve_followup(
        after("Do I need to get anyone's OK before making a private repo in our GitHub org?"), "And a public one?"
    )
    assert r.method == "kind_swap"
    assert r.question == "Do I need to get anyone's OK before making a public repo in our GitHub org?"
    # Without a "<kind> <thing>" to swap, the fragment is appended as before.
    r = resolve_followup(after("How many days of annual leave can I carry over?"), "And the sick one?")
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


def test_that_after_a_question_asking_for_a_thing_is_the_thing_the_last_answer_named() -> None:
    previous = dataclasses.replace(
        after("Sharing my calendar with a partner agency isn't working. What else can we try?"),
        answer_names=["MAX.gov"],
    )
    r = resolve_followup(previous, "How widely is that used across government?")
    assert r.method == "anaphora"
    assert r.question.startswith("How widely is MAX.gov used across government: ")
    # "that" as a determiner names its own thing; the answer's name is not forced on it.
    fare = resolve_followup(previous, "How much is that fare?")
    assert fare.question.startswith("How much is that fare: ")


def test_it_after_a_question_about_how_to_do_something_stays_the_questions_subject() -> None:
    previous = dataclasses.replace(after("How do I get access to Airtable?"), answer_names=["Tech Operations"])
    r = resolve_followup(previous, "Who pays for it?")
    assert r.question == "Who pays for it: How do I get access to Airtable?"


def test_the_names_a_lead_claim_adds_to_its_question_are_kept_for_the_next_turn() -> None:
    from answers.followups import _lead_claim_names

    response = {"answer": {"abstention": None, "claims": [
        {"text": "If this process does not work for your team, you can try sharing your calendars through MAX.gov."}
    ]}}  # fmt: skip
    assert _lead_claim_names(response, "What else can we try to share our Calendar?") == ["MAX.gov"]
    abstained = {"answer": {"abstention": {"reason": "weak_evidence"}, "claims": []}}
    assert _lead_claim_names(abstained, "What else can we try?") == []


def test_a_what_if_turn_is_asked_as_a_new_case_of_the_last_question() -> None:
    r = resolve_followup(after("How do I get access to Airtable?"), "What if I need to edit things?")
    assert r.method == "condition"
    assert r.question == "What if I need to edit things: How do I get access to Airtable?"
    assert asked_clause(r.question) == "What if I need to edit things"
    # However long, and led by "and": still a case of the last question, never a question of its own.
    long = resolve_followup(
        after("How do I change my display name in Slack?"),
        "And what if I just want people to see the name I go by, like Mike instead of Michael?",
    )
    assert long.method == "condition"
    assert long.question.startswith("What if I just want people to see the name I go by")


def test_a_long_turn_that_points_back_and_names_no_company_stays_about_the_conversations_company() -> None:
    previous = dataclasses.replace(
        after("Microsoft changed how long it depreciates its servers. What's the new useful life?"),
        plan={"entities": [["Microsoft", "Microsoft"]]},
    )
    r = resolve_followup(previous, "How much did that boost operating income in the quarter ended September 30, 2022?")
    assert r.method == "anaphora"
    assert r.question.endswith(": Microsoft changed how long it depreciates its servers. What's the new useful life?")
    # A turn that names its own company is its own question.
    own = resolve_followup(
        previous, "How much did that boost Apple's operating income in the quarter ended July 1, 2023?"
    )
    assert own.method == "standalone"
    # Without a company in the conversation, the word limits for pointing back stay as they were.
    wiki = resolve_followup(
        after("How do I request a Mural account?"), "What kind should I ask for if I only use it now and then?"
    )
    assert wiki.method == "standalone"


def test_how_does_that_compare_points_back_however_much_it_names_of_its_own() -> None:
    r = resolve_followup(
        after("What was Apple's net income in the quarter ended July 1, 2023?"),
        "How does that compare with NVIDIA's in its quarter ended July 30, 2023?",
    )
    assert r.is_followup and r.method == "anaphora"
    assert r.question == (
        "How does that compare with NVIDIA's in its quarter ended July 30, 2023: What was Apple's net income in the "
        "quarter ended July 1, 2023?"
    )


def test_a_question_led_by_and_is_asked_as_its_own_question_about_the_last_one() -> None:
    base = "If I ask for a workplace accommodation, how soon should someone confirm they got my request?"
    r = resolve_followup(after(base), "And how long until I get an actual decision?")
    assert r.method == "anaphora"
    assert r.question == f"How long until I get an actual decision: {base}"
    assert asked_clause(r.question) == "How long until I get an actual decision"
    # A scope still refills the last question's slot.
    assert resolve_followup(after("What was Apple's revenue in Q2 2023?"), "And in Q3 2023?").method == "scope_swap"
