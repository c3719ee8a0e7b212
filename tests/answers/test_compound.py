"""Compound questions: two or three questions joined by "and", each answered on its own."""

from __future__ import annotations

from answers.compound import carried_part, split_compound


def test_two_questions_joined_by_and_become_one_question_per_part() -> None:
    c = split_compound("What can I use to get the code right away, and where do I get the Tokencode?")
    assert c is not None
    assert [p.question for p in c.parts] == [
        "What can I use to get the code right away?",
        "Where do I get the Tokencode?",
    ]


def test_a_leading_clause_is_context_for_every_part() -> None:
    c = split_compound(
        "After applying for my GSA travel card as a first-time traveler, what is the next step, and where do I "
        "get the Tokencode?"
    )
    assert c is not None
    assert [p.question for p in c.parts] == [
        "After applying for my GSA travel card as a first-time traveler, what is the next step?",
        "After applying for my GSA travel card as a first-time traveler, where do I get the Tokencode?",
    ]
    # What is named when a part cannot be answered is what the asker wrote, without the shared clause.
    assert [p.clause for p in c.parts] == ["What is the next step?", "Where do I get the Tokencode?"]


def test_it_in_the_second_part_stands_for_the_first_parts_object() -> None:
    c = split_compound("Where should I save my git signing key, and what password should I give it?")
    assert c is not None
    assert c.parts[1].question == "What password should I give my git signing key?"


def test_the_sentences_around_the_question_travel_with_every_part() -> None:
    c = split_compound(
        "I only need Microsoft Office for a short while. Which license do I ask for, and where do I send the request?"
    )
    assert c is not None
    assert all(p.question.startswith("I only need Microsoft Office for a short while. ") for p in c.parts)


def test_a_clause_or_an_adverb_between_and_and_the_question_word_still_splits() -> None:
    c = split_compound(
        "I get back from a work trip on Friday. How long do I have to file my travel voucher, and after I submit it, "
        "roughly how long until the money shows up?"
    )
    assert c is not None
    assert [p.question for p in c.parts] == [
        "I get back from a work trip on Friday. How long do I have to file my travel voucher?",
        "I get back from a work trip on Friday. After I submit my travel voucher, roughly how long until the money "
        "shows up?",
    ]
    # Without a question word after the clause there is no second question.
    assert split_compound("Who approves my travel voucher, and after I submit it, is a receipt needed?") is None


def test_an_elliptic_tail_stays_one_question() -> None:
    assert split_compound("Who approves a travel request, and for how much?") is None
    assert split_compound("What is Tock and how do I use it?") is None


def test_a_question_without_a_question_word_after_and_is_not_split() -> None:
    assert split_compound("What are the lodging and airfare budgets for the year?") is None
    assert split_compound("What was Apple's revenue and net income in Q2 2023?") is None


def test_several_question_sentences_are_left_alone() -> None:
    assert split_compound("Where is the travel policy? And how do I book a flight, and where do I stay?") is None


def test_a_later_part_that_leans_on_the_first_by_a_pronoun_stays_joined() -> None:
    # Asked alone, "How did it change year over year?" would lose the company and the quarter.
    assert split_compound("What was Intel's total revenue in Q3 2022 and how did it change year over year?") is None


def test_a_later_part_about_the_first_parts_figures_stays_joined() -> None:
    # Asked alone, "What was the combined figure?" is about nothing; the handbook answered it once.
    assert (
        split_compound(
            "Taken together, did Amazon's North America and International segments make or lose money at the "
            "operating level in Q1 2023, and what was the combined figure?"
        )
        is None
    )


def test_a_later_parts_pronoun_can_be_asked_again_as_what_the_earlier_answer_named() -> None:
    # "… you can access it right away through VDI." answered the first part; "it" in the second is VDI.
    assert carried_part("Where do I get the Tokencode to log in to it?", ["VDI"]) == (
        "Where do I get the Tokencode to log in to VDI?"
    )
    assert carried_part("Where do I send them?", ["Form A", "Form B"]) == "Where do I send Form A and Form B?"


def test_a_part_without_a_pronoun_or_without_a_named_answer_is_not_asked_again() -> None:
    assert carried_part("How far in advance must I email to get captioning?", ["Deaf-HOH"]) is None
    assert carried_part("Where do I get the Tokencode to log in to it?", []) is None
    assert carried_part("What are its opening hours?", ["VDI"]) is None  # "its" is not "it"


def test_it_after_a_noun_of_the_parts_own_stays_that_noun() -> None:
    c = split_compound(
        "I'm moving from Virginia to Colorado. Who do I email first about the move, and where do I send the state "
        "tax withholding form once I've filled it out?"
    )
    assert c is not None
    assert c.parts[1].question.endswith("Where do I send the state tax withholding form once I've filled it out?")


def test_it_without_a_clause_of_its_own_is_still_the_first_parts_object() -> None:
    c = split_compound("Where should I save my git signing key, and what's the password I should give it?")
    assert c is not None
    assert c.parts[1].question == "What's the password I should give my git signing key?"


def test_a_yes_or_no_question_after_and_is_a_part_of_its_own() -> None:
    c = split_compound(
        "How many free counseling sessions can I get through the employee assistance program, and am I allowed to "
        "use work hours for it?"
    )
    assert c is not None and [p.question for p in c.parts] == [
        "How many free counseling sessions can I get through the employee assistance program?",
        "Am I allowed to use work hours for the employee assistance program?",
    ]
    # "and" before a verb that asks nothing ("and do" without a subject) joins words, not questions.
    assert split_compound("How do I set up and do a screen share in Zoom?") is None


def test_a_yes_or_no_question_about_a_named_office_after_and_is_a_part_of_its_own() -> None:
    c = split_compound("What approval does the printer need, and can TTS ship the office supplies to me?")
    assert c is not None and [p.question for p in c.parts] == [
        "What approval does the printer need?",
        "Can TTS ship the office supplies to me?",
    ]
    # A capitalised word that is not an acronym ("Concur") is not taken for a subject.
    assert split_compound("How do I book a flight and can Concur hold it?") is None
