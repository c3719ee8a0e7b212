"""Evidence strength: the share of the question's content a kept quote covers, the weak-evidence bar."""

from __future__ import annotations

from datetime import UTC, datetime

from answers.abstention import evidence_strength, question_form_stems
from answers.planning import plan_question

NOW = datetime(2026, 1, 1, tzinfo=UTC)
RULE = ("A GSA employee is eligible to be rated by their official Supervisor if they have been on an established "
        "Performance Plan for 120 days.")  # fmt: skip


def test_the_word_after_how_and_placeholders_are_the_questions_form_not_its_content() -> None:
    plan = plan_question(
        "How long does someone have to be on a performance plan before their supervisor can rate them?", NOW
    )
    assert {"long", "someon"} <= question_form_stems(plan.original)
    # rate, supervisor, performance, plan of the five content words left ("before" is one too).
    assert evidence_strength(plan, [RULE]) >= 0.6
    assert evidence_strength(plan, ["Supervisors meet every week."]) < 0.45


def test_a_statement_has_no_question_form_words() -> None:
    claim = "Supervisors rate someone after a long probation."
    assert question_form_stems(claim) == frozenset()
    plan = plan_question(claim, NOW)
    assert evidence_strength(plan, ["Supervisors rate employees after a probation."]) < 1.0


def test_a_follow_up_is_covered_by_a_quote_that_answers_its_last_question() -> None:
    resolved = (
        "How much is that BART fare: I'm flying into SFO to visit the San Francisco office. What's the easiest way "
        "to get there by public transit?"
    )
    plan = plan_question(resolved, NOW)
    fare = "BART fares are based on distance. SFO to Civic Center Station is $8.65."
    assert evidence_strength(plan, [fare]) >= 0.6
    # Read as one question, the earlier turn's many words would make the fare look off-topic.
    assert evidence_strength(plan_question(resolved.replace(":", "."), NOW), [fare]) < 0.45
    # A quote about what "it" is still counts as before.
    release = plan_question("When did it come out: What's the current major release of ExampleDB?", NOW)
    assert evidence_strength(release, ["ExampleDB 18 is the current major release, released on 2025-09-25."]) >= 0.45


def test_a_plural_and_its_singular_are_one_term() -> None:
    from answers.lexicon import stem

    for plural, singular in [("fares", "fare"), ("notes", "note"), ("names", "name"), ("cases", "case"),
                             ("boxes", "box"), ("matches", "match"), ("classes", "class"), ("changes", "change")]:  # fmt: skip
        assert stem(plural) == stem(singular), plural
    assert stem("notes") != stem("not")


def test_a_quote_that_answers_the_question_after_the_askers_situation_is_strong_enough() -> None:
    question = (
        "We're building a product whose authority to operate will come from a partner agency. "
        "Who do we go to for the privacy threshold analysis?"
    )
    answer = "Contact the Privacy Office at the agency granting the ATO for the privacy threshold analysis."
    assert evidence_strength(plan_question(question, NOW), [answer]) >= 0.45
    assert evidence_strength(plan_question(question.replace(". Who", ", who"), NOW), [answer]) < 0.45
    # A quote about the situation alone stays weak.
    assert evidence_strength(plan_question(question, NOW), ["Partner agencies build products too."]) < 0.45
