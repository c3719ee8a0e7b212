"""Evidence strength: the share of the question's content a kept quote covers, the weak-evidence bar."""

from __future__ import annotations

from datetime import UTC, datetime

from answers.abstention import evidence_strength, rules_on_the_asked_act, states_the_askers_case
from answers.lexicon import abbreviations_defined, content_stems, question_form_stems, with_abbreviations
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


def test_a_derived_noun_and_its_verb_are_one_term() -> None:
    from answers.lexicon import stem

    for derived, base in [("recusal", "recusing"), ("approval", "approved"), ("cancellation", "cancel"),
                          ("notification", "notify"), ("registration", "register"), ("deletion", "delete"),
                          ("eligibility", "eligible"), ("application", "apply"), ("withdrawal", "withdraw"),
                          ("referral", "refer"), ("enrollment", "enrol"), ("estimated", "estimation"),
                          ("temporarily", "temporary"), ("children", "child")]:  # fmt: skip
        assert stem(derived) == stem(base), derived
    # Words that only look derived keep apart: no adverb in "apply" or "family", no act in "question" or "signal".
    for word, other in [("apply", "app"), ("family", "fami"), ("question", "quest"), ("signal", "sign"),
                        ("personal", "person"), ("format", "form"), ("spring", "spr"), ("repeated", "repe")]:  # fmt: skip
        assert stem(word) != other, word
    assert stem("families") == stem("family") and stem("springs") == stem("spring")
    # A verb and its particle made one noun: the particle is a stopword, so the noun is the verb.
    for compound, verb in [("cleanout", "cleaned"), ("setups", "set"), ("kickoff", "kick")]:
        assert stem(compound) == stem(verb), compound
    assert stem("group") != "gro" and stem("without") == "without"
    # A question's words meet the page's: "recusing" in the question is the page's "recusal".
    question = "A headhunter contacted me about a role. Do I have to start recusing myself?"
    quote = "If a search firm is involved, recusal is not triggered unless it identifies the prospective employer."
    assert evidence_strength(plan_question(question, NOW), [quote]) > 0


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


VLTP_QUESTION = (
    "My dad has a medical emergency, but I still have some sick leave left. Can I get donated hours through VLTP "
    "anyway?"
)
VLTP_RULE = (
    "If you have a personal or family medical emergency and have exhausted your earned leave, you can enroll in "
    "the Voluntary Leave Transfer Program (VLTP)."
)


def test_a_rule_whose_condition_is_the_askers_case_states_that_case() -> None:
    plan = plan_question(VLTP_QUESTION, NOW)
    # The consequence is in the page's words, so the coverage count stays under the usual bar ...
    assert evidence_strength(plan, [VLTP_RULE]) < 0.45
    # ... while its condition repeats the asker's case: medical, emergency, leave.
    assert states_the_askers_case(plan, VLTP_RULE)
    zoom = plan_question(
        "A vendor invited me to their Zoom call, but it wants me to accept Zoom's terms of service first. Am I still "
        "allowed to join?",
        NOW,
    )
    assert states_the_askers_case(
        zoom,
        "GSA employees may participate in Zoom meetings hosted by external partners UNLESS they are required to "
        "accept Zoom Terms of Service (TOS) or install software.",
    )


def test_a_rule_that_names_the_asked_thing_answers_a_yes_or_no_question_about_it() -> None:
    laptop = plan_question(
        "I'll be working from the D.C. office tomorrow, but my GSA laptop is out for repair. Can I just plug my own "
        "personal laptop into the office network for the day?",
        NOW,
    )
    rule = "Personal laptops cannot be connected directly to the GSA network at any GSA facility."
    # "cannot be connected", not "plug": the coverage count stays under the usual bar ...
    assert evidence_strength(laptop, [rule]) < 0.45
    # ... and the rule names "personal laptop(s)" as the question does.
    assert rules_on_the_asked_act(laptop, rule)
    zoom = plan_question("I'm setting up a Zoom meeting with a partner. Can I just send them my personal meeting room?",
                         NOW)  # fmt: skip
    assert rules_on_the_asked_act(zoom, "Do not use a Personal Meeting ID (PMI) for Zoom meetings hosted by GSA.")


def test_a_statement_a_how_question_or_words_apart_are_not_a_rule_on_the_asked_act() -> None:
    laptop = plan_question("Can I just plug my own personal laptop into the office network for the day?", NOW)
    # No rule's wording: a statement of what happens.
    assert not rules_on_the_asked_act(laptop, "Personal laptops are often connected to home networks.")
    # The same words, not side by side: "laptop" and "personal" are about other things.
    assert not rules_on_the_asked_act(laptop, "You must not leave a laptop in a car; personal items are your own.")
    how = plan_question("How do I connect my personal laptop to the office network?", NOW)
    assert not rules_on_the_asked_act(how, "Personal laptops cannot be connected directly to the GSA network.")
    # "go back" pairs with anything: no act of its own.
    school = plan_question("Will GSA help pay tuition if I go back to school for a master's degree?", NOW)
    assert not rules_on_the_asked_act(
        school, "If your text is not converting to the styles, go back to the file and make sure it ends with .md."
    )


def test_a_when_after_a_verb_two_common_words_or_a_long_other_case_are_not_the_askers_case() -> None:
    moving = plan_question(
        "I'm going to work from my parents' place this summer. Do I have to change my home address?", NOW
    )
    # "advise when ..." is what PeopleOps says, not a condition.
    assert not states_the_askers_case(
        moving, "PeopleOps will advise when you should change your home address in HR Links."
    )
    repos = plan_question("We still rely on ours even though it barely changes - can we keep that from happening?", NOW)
    assert not states_the_askers_case(
        repos, "If the action or behavior keeps happening, it doesn't help to keep hammering away."
    )
    fsa = plan_question("What's the most I can put into the health care one for the year?", NOW)
    # "care" and "one" only: a condition about another case.
    assert not states_the_askers_case(
        fsa, "If you need more than 13 sick days at once to care for a loved one, you can apply for FMLA status."
    )


def test_a_verb_and_its_ing_and_ed_forms_are_one_term() -> None:
    from answers.lexicon import stem

    for base, forms in [("vote", ("voting", "voted", "votes")), ("use", ("using", "used", "uses")),
                        ("make", ("making",)), ("file", ("filing", "filed")), ("rule", ("ruled",)),
                        ("fix", ("fixing",)), ("play", ("playing",)), ("get", ("getting",))]:  # fmt: skip
        assert {stem(f) for f in forms} == {stem(base)}, base
    assert stem("hoping") == stem("hope") != stem("hopping")


def test_quotes_that_cover_only_the_askers_situation_are_no_evidence() -> None:
    plan = plan_question("If someone I refer ends up getting hired, do I get any kind of bonus for it?", NOW)
    assert evidence_strength(plan, ["Refer to Hire NTE Dt (Hire not-to-exceed date) for when your term ends."]) == 0.0
    assert evidence_strength(plan, ["If someone you refer is hired, you get a referral bonus of $500."]) >= 0.45


def test_what_the_asker_should_know_about_is_asked_and_the_knowing_is_not() -> None:
    question = ("I tend to leave leftovers and containers in the office fridge at 1800 F for a while. "
                "Is there a cleanout I should know about?")  # fmt: skip
    quote = ("The DC fridge is cleaned out bi-monthly on Fridays (dates are posted on the fridge), and all food "
             "(including containers) is thrown out.")  # fmt: skip
    assert evidence_strength(plan_question(question, NOW), [quote]) >= 0.45


def test_an_abbreviation_the_evidence_defines_covers_the_words_it_stands_for() -> None:
    plan = plan_question("What number do I call to reach the Employee Assistance Program?", NOW)
    asked = content_stems(plan.original)
    passages = ["The Employee Assistance Program (EAP) is a free support resource.", "TTS offers design services."]
    quote = "To access the EAP, you can call them 24/7 at 1-800-222-0364."

    defined = abbreviations_defined(passages, asked)

    assert defined == {"eap": frozenset({"employe", "assistanc", "program"})}
    assert evidence_strength(plan, [quote], defined) > evidence_strength(plan, [quote]) + 0.3
    # Either way: the words stand for the abbreviation too.
    assert "eap" in with_abbreviations(frozenset(content_stems("the employee assistance program line")), defined)
    # An abbreviation the question names in neither form is left alone: "services" is not "TTS".
    defined_tts = abbreviations_defined(["Technology Transformation Services (TTS) builds tools."], ["servic"])
    assert defined_tts == {}
    assert abbreviations_defined(["Research and Development (R&D) costs rose."], ["research", "develop"]) == {
        "rd": frozenset({"research", "develop"})
    }


def test_a_one_on_one_written_1_1_is_that_word_and_not_a_number() -> None:
    page = content_stems("More important than the specific cadence, however, is this: never cancel a 1:1.")
    assert "one-on-one" in page and "1" not in page
    assert "one-on-one" in content_stems("Can I just cancel my weekly one-on-one with my direct report?")
    assert "one-on-ones" in content_stems("Hold 1:1s weekly.")
    # A time of day or a ratio keeps its numbers.
    assert "15" in content_stems("The meeting starts at 1:15 pm.")
