"""The extractive writer and its sentence splitter."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import UTC, datetime

import pytest

from answers.contracts import EvidenceRecord, ParsedQuery, QueryPlan
from answers.lexicon import asks_superlative
from answers.support import quote_in_passage
from answers.verification import verify_claim
from answers.writers.extractive import (
    ExtractiveWriter,
    ListBlock,
    bracket_fits,
    group_list_blocks,
    label_line,
    ranked_table,
    split_sentences,
    writer_release,
)

RELEASE_NOTES = (
    "Release N notes\n"
    "Logical replication received several changes in this release. "
    "The subscription option lr_example_parallel_apply now defaults to on for newly created subscriptions. "
    "Dr. Example reviewed the change, e.g. for large transactions."
)
UPGRADE_GUIDE = (
    "Upgrading to release N\n"
    "Read the whole guide before you start. "
    "Existing subscriptions keep the value that was stored before the upgrade. "
    "Publishers do not need to be restarted after the upgrade."
)
BLOG = (
    "Tuning replication (third-party blog)\n"
    "Parallel apply is useful for large transactions and cuts replication lag a lot. "
    "Our publisher cluster needed extra memory for parallel apply workers."
)


def make_evidence(eid: str, text: str) -> EvidenceRecord:
    return EvidenceRecord(
        id=eid,
        document_id=1,
        chunk_id=1,
        canonical_url=f"https://docs.example.org/{eid}",
        title=eid,
        source_system="confluence",
        container="ENG",
        text=text,
        char_start=0,
        char_end=len(text),
        snapshot_sha256="0" * 64,
        updated_at=datetime(2025, 9, 25, tzinfo=UTC),
    )


def make_plan(
    query: str,
    *,
    text: str | None = None,
    exclude: tuple[str, ...] = (),
    phrases: tuple[str, ...] = (),
) -> QueryPlan:
    parsed = ParsedQuery(original=query, text=text if text is not None else query, exclude=exclude, phrases=phrases)
    return QueryPlan(parsed=parsed, as_of=datetime(2025, 10, 1, tzinfo=UTC), retrieval_queries=(query,))


EVIDENCE = [make_evidence("S1", RELEASE_NOTES), make_evidence("S2", UPGRADE_GUIDE), make_evidence("S3", BLOG)]
BY_ID = {e.id: e for e in EVIDENCE}


# --------------------------------------------------------------------------- split_sentences


def sentences(text: str) -> list[str]:
    return [text[s:e] for s, e in split_sentences(text)]


def test_split_sentences_returns_exact_offsets_without_surrounding_whitespace() -> None:
    text = "  First sentence here.   Second one follows!\n\nThird?  "
    spans = split_sentences(text)
    assert [text[s:e] for s, e in spans] == ["First sentence here.", "Second one follows!", "Third?"]
    assert spans[0] == (2, 22)


def test_split_sentences_keeps_abbreviations_initials_and_decimals_inside_a_sentence() -> None:
    text = (
        "Dr. Smith moved to the U.S. office in 2024. Costs fell 3.5 percent, i.e. less than planned. "
        "John F. Kennedy is an example, e.g. of initials. See Fig. 3 for details."
    )
    assert sentences(text) == [
        "Dr. Smith moved to the U.S. office in 2024.",
        "Costs fell 3.5 percent, i.e. less than planned.",
        "John F. Kennedy is an example, e.g. of initials.",
        "See Fig. 3 for details.",
    ]


def test_split_sentences_ends_a_sentence_after_a_single_capital_letter_word() -> None:
    assert sentences("Parallel apply is on in release N. Existing subscriptions keep it.") == [
        "Parallel apply is on in release N.",
        "Existing subscriptions keep it.",
    ]


def test_split_sentences_breaks_at_headings_and_list_items_but_not_hard_wraps() -> None:
    text = "Setup Guide\nThis paragraph was wrapped by the\nPDF extractor at a line end.\n- first item\n- second item"
    assert sentences(text) == [
        "Setup Guide",
        "This paragraph was wrapped by the\nPDF extractor at a line end.",
        "- first item",
        "- second item",
    ]


def test_split_sentences_of_blank_text_is_empty() -> None:
    assert split_sentences(" \n\t ") == []


# --------------------------------------------------------------------------- the writer


def test_the_writer_picks_the_sentence_that_answers_the_question() -> None:
    plan = make_plan("Is lr_example_parallel_apply on by default for new subscriptions?")
    claims = ExtractiveWriter().write(plan, EVIDENCE)
    assert claims
    assert claims[0].text == (
        "The subscription option lr_example_parallel_apply now defaults to on for newly created subscriptions."
    )
    assert claims[0].citations[0].evidence_id == "S1"


def test_every_claim_is_a_verbatim_sentence_that_passes_verification() -> None:
    plan = make_plan("what happens to existing subscriptions and replication lag after the upgrade")
    claims = ExtractiveWriter().write(plan, EVIDENCE)
    assert claims
    for c in claims:
        assert len(c.citations) == 1
        cite = c.citations[0]
        assert cite.quote == c.text
        assert cite.quote in BY_ID[cite.evidence_id].text
        assert quote_in_passage(cite.quote, BY_ID[cite.evidence_id].text)
        result = verify_claim(c, BY_ID, plan, authorised_ids=set(BY_ID))
        assert result.kept and result.method == "verbatim"


def test_claim_ids_are_sequential_and_claims_past_max_claims_are_extras() -> None:
    plan = make_plan("replication subscriptions upgrade parallel apply")
    claims = ExtractiveWriter().write(plan, EVIDENCE, max_claims=2)
    assert [c.id for c in claims] == [f"c{i}" for i in range(1, len(claims) + 1)]
    assert [c.extra for c in claims[:2]] == [False, False]
    assert 2 < len(claims) <= 2 + ExtractiveWriter.extra_claims
    assert all(c.extra for c in claims[2:])


def test_one_claim_asked_for_is_one_claim() -> None:
    plan = make_plan("replication subscriptions upgrade parallel apply")
    assert len(ExtractiveWriter().write(plan, EVIDENCE, max_claims=1)) == 1


def test_sentences_containing_an_excluded_term_are_skipped() -> None:
    plan = make_plan("parallel apply -publisher", text="parallel apply", exclude=("publisher",))
    claims = ExtractiveWriter().write(plan, EVIDENCE)
    assert claims
    assert all("publisher" not in c.text.lower() for c in claims)


def test_exclusions_match_inflected_words_but_not_substrings() -> None:
    evidence = [
        make_evidence("E", "Publishers need a restart for parallel apply. Republishing parallel apply is safe.")
    ]
    plan = make_plan("parallel apply", exclude=("publisher",))
    assert [c.text for c in ExtractiveWriter().write(plan, evidence)] == ["Republishing parallel apply is safe."]


def test_a_sentence_naming_the_excluded_term_among_others_can_answer() -> None:
    evidence = [
        make_evidence(
            "E",
            "Your supervisor reviews your timesheet every week. "
            "Your supervisor and the HR specialist review a request for an extension. "
            "The supervisor, who signs the form, reviews a request for an extension last.",
        )
    ]
    plan = make_plan(
        "Besides my supervisor, who reviews a request for an extension?",
        text="who reviews a request for an extension",
        exclude=("supervisor",),
    )

    texts = [c.text for c in ExtractiveWriter().write(plan, evidence)]

    assert texts == ["Your supervisor and the HR specialist review a request for an extension."]


def test_a_source_that_sets_the_excluded_term_aside_itself_can_answer() -> None:
    evidence = [
        make_evidence("E", "Sick leave covers a funeral. For a military funeral use funeral leave, not sick leave.")
    ]
    plan = make_plan(
        "Other than sick leave, what leave can I use for a military funeral?",
        text="what leave can I use for a military funeral",
        exclude=("sick leave",),
    )

    assert [c.text for c in ExtractiveWriter().write(plan, evidence)] == [
        "For a military funeral use funeral leave, not sick leave."
    ]


def test_a_sentence_that_says_the_excluded_term_is_separate_from_another_is_not_about_it() -> None:
    from answers.writers.extractive import excluded_sentence

    assert not excluded_sentence("HR Links is separate from Tock.", ["HR Links"])
    assert not excluded_sentence(
        "HR Links is GSA's out of office request system and is separate from Tock, TTS' timekeeping system.",
        ["HR Links"],
    )
    assert excluded_sentence("HR Links is GSA's out of office request system.", ["HR Links"])


def test_an_unrelated_query_gets_no_claims() -> None:
    assert ExtractiveWriter().write(make_plan("what is the cafeteria lunch menu on fridays"), EVIDENCE) == []


def test_no_evidence_gets_no_claims() -> None:
    assert ExtractiveWriter().write(make_plan("parallel apply"), []) == []


def test_the_writer_is_deterministic() -> None:
    plan = make_plan("does parallel apply reduce replication lag for subscriptions")
    first = ExtractiveWriter().write(plan, EVIDENCE)
    assert all(ExtractiveWriter().write(plan, EVIDENCE) == first for _ in range(5))


def test_headings_short_fragments_and_overlong_sentences_are_never_claims() -> None:
    long_sentence = "Replication " + " ".join(["lag"] * 85) + "."
    evidence = [make_evidence("E", f"Replication Lag Overview\nReplication lag.\n{long_sentence}")]
    assert ExtractiveWriter().write(make_plan("replication lag"), evidence) == []


def test_near_duplicate_sentences_are_returned_once() -> None:
    sentence = "Existing subscriptions keep the value that was stored before the upgrade."
    evidence = [make_evidence("A", sentence), make_evidence("B", sentence.replace("the upgrade", "an upgrade"))]
    claims = ExtractiveWriter().write(make_plan("existing subscriptions after upgrade"), evidence)
    assert len(claims) == 1
    assert claims[0].citations[0].evidence_id == "A"


def test_a_quoted_phrase_lifts_the_sentence_that_contains_it() -> None:
    evidence = [
        make_evidence("A", "Replication lag grows when the apply worker falls behind the publisher."),
        make_evidence("B", "Lag in replication is reported by the monitoring view every minute."),
    ]
    plain = ExtractiveWriter().write(make_plan("replication lag"), evidence)
    assert plain[0].citations[0].evidence_id == "A"
    phrased = ExtractiveWriter().write(
        make_plan('"lag in replication"', text="lag in replication", phrases=("lag in replication",)), evidence
    )
    assert phrased[0].citations[0].evidence_id == "B"


def test_evidence_rank_breaks_ties_between_equally_matching_sentences() -> None:
    evidence = [
        make_evidence("first", "The retention period for audit logs is set by the admin."),
        make_evidence("second", "An admin sets the retention period for audit logs here."),
    ]
    claims = ExtractiveWriter().write(make_plan("audit logs retention period"), evidence, max_claims=1)
    assert claims[0].citations[0].evidence_id == "first"


def test_similarity_lets_a_sentence_without_shared_words_qualify() -> None:
    calls: list[tuple[str, int]] = []

    def cosine(query: str, texts: Sequence[str]) -> list[float]:
        calls.append((query, len(texts)))
        return [0.9 if "lag a lot" in t else 0.1 for t in texts]

    plan = make_plan("how do I speed up big commits")
    assert ExtractiveWriter().write(plan, EVIDENCE) == []
    claims = ExtractiveWriter().write(plan, EVIDENCE, similarity=cosine)
    assert [c.citations[0].evidence_id for c in claims] == ["S3"]
    assert len(calls) == 1  # one batched call, so the caller can embed all sentences at once


def test_a_similarity_callable_returning_the_wrong_number_of_scores_is_an_error() -> None:
    with pytest.raises(ValueError):
        ExtractiveWriter().write(make_plan("parallel apply"), EVIDENCE, similarity=lambda q, ts: [0.5])


def test_the_writer_identifies_its_release() -> None:
    assert writer_release() == {"name": "extractive", "version": "18"}
    assert (ExtractiveWriter.name, ExtractiveWriter.version) == ("extractive", "18")


def test_a_list_item_without_a_full_stop_is_a_claim_without_its_marker() -> None:
    evidence = [make_evidence("E", "Known limits:\n- audit logs are retained for ninety days\n- exports run nightly")]
    claims = ExtractiveWriter().write(make_plan("how long are audit logs retained"), evidence)
    assert [c.text for c in claims] == ["audit logs are retained for ninety days"]


def test_a_short_step_of_a_procedure_is_a_claim_and_a_short_title_is_not() -> None:
    page = ("Submitting a Docusign issue ticket\nOpen a new ticket in the Self-Service Portal\n"
            "For application name, enter Digital Signature System (DSS)\nChoose the priority of your request\n"
            "Email Template for Individual Travel")  # fmt: skip
    evidence = [make_evidence("E", page)]
    claims = ExtractiveWriter().write(make_plan("what application name do I enter for a Docusign ticket"), evidence)
    assert claims and claims[0].text == "For application name, enter Digital Signature System (DSS)"
    texts = [c.text for c in claims]
    assert "Submitting a Docusign issue ticket" not in texts and "Email Template for Individual Travel" not in texts


def test_the_conjunction_before_the_askers_reason_is_not_a_word_the_answer_must_repeat() -> None:
    question = ("I've been asked to run a workshop at our partner's office in Mexico City this spring. "
                "Is there anything extra I need to do because it's international official travel?")  # fmt: skip
    evidence = [
        make_evidence("A", "Extra desks need a reservation."),
        make_evidence("E", "All official international travel taken by GSA employees, regardless of funding source, "
                           "requires Salesforce event approval."),
    ]  # fmt: skip
    claims = ExtractiveWriter().write(make_plan(question), evidence)
    assert any(c.text.startswith("All official international travel taken") for c in claims), claims


def test_a_light_verb_in_the_asked_sentence_is_not_a_word_the_answer_must_repeat() -> None:
    question = ("I've been asked to run a workshop at our partner's office in Mexico City this spring. "
                "Is there anything extra I need to do for international official travel?")  # fmt: skip
    evidence = [make_evidence("E", "All official international travel taken by GSA employees, regardless of funding "
                                   "source, requires Salesforce event approval.")]  # fmt: skip
    claims = ExtractiveWriter().write(make_plan(question), evidence)
    assert [c.text[:39] for c in claims] == ["All official international travel taken"]


def test_a_passage_window_that_starts_mid_sentence_does_not_yield_its_fragment() -> None:
    text = "retained for ninety days by default. Audit logs can be exported by admins."
    evidence = [dataclasses.replace(make_evidence("E", text), char_start=120, char_end=120 + len(text))]
    claims = ExtractiveWriter().write(make_plan("audit logs retained"), evidence)
    assert [c.text for c in claims] == ["Audit logs can be exported by admins."]


# ---- write like an answer ------------------------------------------------------------------

PPL_PAGE = (
    "Paid parental leave\n"
    "How much paid parental leave do I get?\n"
    "- [Book your flight or\n"
    "- Leave policies\n"
    "You are entitled to 12 weeks of paid parental leave after the birth or placement of a child.\n"
    'Read the **leave** guide in {% slack_channel "leave" %} first.\n'
    "Parental leave | 12 weeks | paid\n"
    "Before you start, you should:\n"
    "Paid parental leave is available to employees with 12 months of federal service.\n"
    "You are entitled to 12 weeks of paid parental leave after a birth or placement."
)


@pytest.mark.parametrize(
    ("sentence", "reason"),
    [
        ("How much paid parental leave do I get?", "question"),
        ("[Book your flight or", "markup"),
        ("Book your flight or", "fragment"),
        ("Leave policies", "label"),
        ("Travel and Leave Policies for New Staff Members", "label"),
        ("Read the **leave** guide first.", "markup"),
        ('See the [guide]({% page "/leave/" %}).', "markup"),
        ("Parental leave | 12 weeks | paid", "markup"),
        ("Get set up to travel <em>before</em> onboarding.", "markup"),
        ("Before you start, you should:", "fragment"),
        ("The allowance (for travel is 30 days.", "fragment"),
    ],
)
def test_what_cannot_be_a_claim_is_named(sentence: str, reason: str) -> None:
    from answers.writers.extractive import unfit_reason

    assert unfit_reason(sentence) == reason


def test_statements_and_list_items_that_read_as_statements_are_fit() -> None:
    from answers.writers.extractive import unfit_reason

    assert unfit_reason("You are entitled to 12 weeks of paid parental leave.") is None
    assert unfit_reason("Bring your laptop and badge to the first day of work") is None
    assert unfit_reason("Total net sales: $81,797 million, three months ended July 1, 2023.") is None


def test_it_leads_with_the_answer_and_drops_questions_fragments_markup_and_repeats() -> None:
    plan = make_plan("How much paid parental leave do I get?")
    info: dict[str, object] = {}
    claims = ExtractiveWriter().write(plan, [make_evidence("ppl", PPL_PAGE)], info=info)
    texts = [c.text for c in claims]
    assert texts[0] == "You are entitled to 12 weeks of paid parental leave after the birth or placement of a child."
    # The second wording of the same entitlement adds nothing; the eligibility sentence does.
    assert texts[1:] == ["Paid parental leave is available to employees with 12 months of federal service."]
    for c in claims:
        assert c.citations[0].quote == c.text
    # Fragments: the heading, the pipe row (no full stop) and "you should:"; markup: the "[" item and "**".
    assert info["rejected_sentences"] == {"fragment": 3, "label": 1, "markup": 2, "question": 1}


def test_a_resolved_follow_up_takes_its_kind_of_answer_from_the_question_asked_last() -> None:
    # answers/followups.py resolves "Can I take it intermittently?" to this; it asks yes or no, not how much.
    plan = make_plan("Can I take it intermittently: How much paid parental leave do I get?")
    evidence = [
        make_evidence(
            "ppl",
            "You can take parental leave intermittently with supervisor approval. "
            "If you take parental leave intermittently, the 12 week period begins after your final day.",
        )
    ]

    claims = ExtractiveWriter().write(plan, evidence, max_claims=1)

    assert [c.text for c in claims] == ["You can take parental leave intermittently with supervisor approval."]


def test_a_date_is_not_the_amount_a_how_big_question_asks_for() -> None:
    plan = make_plan("How big was the International operating loss in the quarter ended September 30, 2022?")
    evidence = [
        make_evidence(
            "q3",
            "The International operating loss for the quarter ended September 30, 2022 is due to higher costs. "
            "In the quarter ended September 30, 2022 the International operating loss was $2,466 million.",
        )
    ]

    claims = ExtractiveWriter().write(plan, evidence, max_claims=1)

    assert [c.text for c in claims] == [
        "In the quarter ended September 30, 2022 the International operating loss was $2,466 million."
    ]


def test_a_roster_line_answers_a_question_about_its_label() -> None:
    roster = (
        "The Outreach team has a point person for each of the main business units.\n\n"
        "Director - Star Vanamali\n\n18F - Dahianna Salazar Foreman\n\nSolutions - Kristina Britt"
    )
    plan = make_plan("Who is the director of the Outreach team?")

    texts = [c.text for c in ExtractiveWriter().write(plan, [make_evidence("outreach", roster)])]

    assert texts[0] == "Director - Star Vanamali"
    assert "18F - Dahianna Salazar Foreman" not in texts


def test_a_forms_field_line_answers_a_question_about_the_field() -> None:
    form = (
        "Enter the following information in Section 3:\n\nEmployer Name: General Services Administration\n\n"
        "Federal Employer Identification Number (FEIN): 44-0553234\n\n"
        "Employer Address: 1800 F St. NW, Washington, D.C. 20405"
    )
    plan = make_plan("What's GSA's federal employer ID number for my loan forgiveness form?")

    texts = [c.text for c in ExtractiveWriter().write(plan, [make_evidence("benefits", form)])]

    assert texts[0] == "Federal Employer Identification Number (FEIN): 44-0553234"
    # A field without a number in it, or a numbered step, is still a label, not a claim.
    assert "Employer Name: General Services Administration" not in texts
    assert label_line("Step 1: Submit the software") is None


def test_the_sentence_after_the_lead_that_goes_on_about_its_subject_is_stated_second() -> None:
    page = (
        "MAX Drive is good for sending a one-off file to a partner (for example, when their email server strips out "
        "an attachment). Retrieving a file that has been uploaded to MAX Drive does not require the recipient to have "
        "a Max.gov account. Other tools are listed on the collaboration page."
    )
    plan = make_plan("A partner's email server keeps stripping the attachment I'm trying to send them, and the file is "
                     "sensitive. What's a good way to get it to them just this once?")  # fmt: skip

    evidence = [
        make_evidence("max", page),
        make_evidence("drive", "A good way to share a file once: click Get shareable link and send it to them."),
    ]

    texts = [c.text for c in ExtractiveWriter().write(plan, evidence)]

    assert texts[0].startswith("MAX Drive is good for sending a one-off file")
    assert texts[1].startswith("Retrieving a file that has been uploaded to MAX Drive")
    assert not any(t.startswith("Other tools") for t in texts)
    # Scored on its own, the sentence that goes on about MAX Drive comes after one from another page.
    plain = ExtractiveWriter()
    plain.continue_lead = False
    assert not plain.write(plan, evidence)[1].text.startswith("Retrieving")


def test_the_sentence_after_the_lead_is_stated_with_the_one_that_goes_on_from_it() -> None:
    page = (
        "If you are traveling internationally and hold a security clearance, you are required to notify GSA. "
        "Follow the guidance on international travel for clearance holders in InSite. "
        "This notification is optional if you do not hold a clearance."
    )
    plan = make_plan("Heading to Portugal for vacation next month. I don't hold any security clearance - do I still "
                     "have to tell GSA I'm leaving the country?")  # fmt: skip

    texts = [c.text for c in ExtractiveWriter().write(plan, [make_evidence("travel", page)])]

    assert texts[0].startswith("If you are traveling internationally and hold a security clearance")
    # "This notification …" reads only with the sentence before it, which is the lead's continuation.
    assert texts[1] == (
        "Follow the guidance on international travel for clearance holders in InSite. "
        "This notification is optional if you do not hold a clearance."
    )


def test_a_sentence_that_uses_the_abbreviation_its_page_defines_answers_for_the_words_it_stands_for() -> None:
    plan = make_plan("Do I need to have an individual development plan written up before I ask to attend a paid "
                     "workshop?")  # fmt: skip
    idp = dataclasses.replace(
        make_evidence(
            "idp",
            "An IDP is no longer required for requests, but an SF-182 is required for most "
            "conference, event, and training requests that have a cost.",
        ),  # fmt: skip
        title="Individual Development Plan",
    )
    evidence = [
        idp,
        make_evidence(
            "fees",
            "If you plan on attending additional days of the conference, GSA needs to pay the "
            "difference between the full and waived registration fees.",
        ),  # fmt: skip
    ]

    texts = [c.text for c in ExtractiveWriter().write(plan, evidence)]

    # The page's title spells out the abbreviation its text uses, so "An IDP" is the individual development plan.
    assert texts and texts[0].startswith("An IDP is no longer required for requests")


def test_an_instruction_that_introduces_a_forms_fields_is_a_claim_without_them() -> None:
    page = (
        "To access captioning services:\n\n"
        "- Send an email at least 12 hours prior to the meeting (2-3 days is preferred) to captions@example.org "
        "with the following information:\n"
        "  - Requestors Name:\n"
        "  - Event Title:\n"
        "  - Event date:"
    )
    plan = make_plan("How far in advance do I need to email to get captioning for a meeting?")

    texts = [c.text for c in ExtractiveWriter().write(plan, [make_evidence("cart", page)])]

    # The claim is the instruction up to the fields' introduction, a verbatim span of the page.
    assert (
        "Send an email at least 12 hours prior to the meeting (2-3 days is preferred) to captions@example.org" in texts
    )


def test_a_short_value_of_the_thing_the_long_sentence_before_it_defines_is_read_with_that_sentence() -> None:
    page = (
        "Inactive repositories are automatically archived by Tech Operations. A repository is considered "
        '"inactive" if there haven\'t been any new commits or comments on issues or pull requests in a while; or if '
        'the repository description includes the terms "deprecated," "not supported," or "no longer supported." '
        "The current default is 90 days."
    )
    plan = make_plan("How long does a GitHub repository have to sit inactive before it gets archived?")

    texts = [c.text for c in ExtractiveWriter().write(plan, [make_evidence("github", page)])]

    # The sentence before ends with its full stop inside the closing quotes, and is longer than a value's usual lead.
    assert any(t.startswith('A repository is considered "inactive"') and t.endswith("The current default is 90 days.")
               for t in texts), texts  # fmt: skip


def test_a_value_too_short_to_stand_alone_is_read_with_the_sentence_before_it() -> None:
    reference = (
        "ExampleDB 17 configuration reference: subscriptions\n\n"
        "lr_example_parallel_apply (boolean). Default: off. When on, the subscriber applies large transactions "
        "with parallel workers."
    )
    plan = make_plan("What was the default of lr_example_parallel_apply in ExampleDB 17?")

    claims = ExtractiveWriter().write(plan, [make_evidence("pg17", reference)], max_claims=1)

    assert [c.text for c in claims] == ["lr_example_parallel_apply (boolean). Default: off."]
    assert claims[0].citations[0].quote == claims[0].text


def test_a_catalogue_owner_answers_who_owns_a_service() -> None:
    page = (
        "Service catalogue: orders-worker\n\n"
        "The orders-worker service takes orders from the web shop and hands them to billing.\n\n"
        "orders-worker: runtime Foo 3.4, owner fulfilment."
    )
    plan = make_plan("Who owns the orders-worker service?")

    texts = [c.text for c in ExtractiveWriter().write(plan, [make_evidence("wrk", page)], max_claims=1)]

    assert texts == ["orders-worker: runtime Foo 3.4, owner fulfilment."]


def test_a_filing_sentence_about_the_quarter_does_not_answer_for_the_nine_months() -> None:
    evidence = [
        make_evidence(
            "intc",
            "Notebook revenue was $4.5 billion, up $95 million from Q3 2022. "
            "Notebook revenue was $11.8 billion, down $3.3 billion from YTD 2022.",
        )
    ]
    plan = dataclasses.replace(
        make_plan("What was notebook revenue for the nine months?"),
        period_scope=("2023-09-30",),
    )

    texts = [c.text for c in ExtractiveWriter().write(plan, evidence, max_claims=1)]

    assert texts == ["Notebook revenue was $11.8 billion, down $3.3 billion from YTD 2022."]


def test_contact_options_listed_without_markers_are_one_list_and_each_can_answer() -> None:
    page = (
        "If an approved party needs to verify your employment, they can contact TWN via the options below:\n\n"
        "The Work Number website\n\n"
        "800-367-5690 (Monday through Friday, 8:00 AM to 8:00 PM EST)\n\n"
        "Email member@equifax.com\n\n"
        "GSA's TWN Employer Code is 10536"
    )
    blocks = [u for u in group_list_blocks(page, split_sentences(page)) if isinstance(u, ListBlock)]
    assert len(blocks) == 1 and len(blocks[0].items) == 4  # a phone number and times are one item

    texts = [c.text for c in ExtractiveWriter().write(make_plan("What is GSA's TWN employer code?"),
                                                      [make_evidence("twn", page)], max_claims=1)]  # fmt: skip
    assert texts == ["GSA's TWN Employer Code is 10536"]


def test_a_labelled_table_row_answers_a_number_question() -> None:
    filing = (
        "CONDENSED CONSOLIDATED STATEMENTS OF OPERATIONS (Unaudited)\n\n"
        "Apple's net sales are reported by category in the table below.\n\n"
        "Total net sales: $81,797 million, three months ended July 1, 2023; $82,959 million, three months ended "
        "June 25, 2022.\n\n"
        "Net sales by category are described in Note 2."
    )
    plan = make_plan("What were Apple's total net sales?")
    claims = ExtractiveWriter().write(plan, [make_evidence("aapl", filing)])
    assert claims[0].text.startswith("Total net sales: $81,797 million, three months ended July 1, 2023;")


# --------------------------------------------------------------------------- financial table rows

REVENUE_ROW = (
    "Revenue: $13,507 million, three months ended July 30, 2023; $6,704 million, three months ended July 31, 2022; "
    "$20,699 million, six months ended July 30, 2023; $14,992 million, six months ended July 31, 2022."
)


def row_claim(question: str, period_ends: tuple[str, ...]) -> tuple[str, str]:
    plan = dataclasses.replace(make_plan(question, text="revenue quarter"), period_scope=period_ends)
    evidence = [make_evidence("T1", REVENUE_ROW)]
    (claim,) = ExtractiveWriter().write(plan, evidence, max_claims=1)
    result = verify_claim(claim, {"T1": evidence[0]}, plan, authorised_ids={"T1"})
    assert result.quote_ok and result.support == "supported", result.reasons
    return claim.text, claim.citations[0].quote


def test_a_table_row_answers_with_only_the_cell_of_the_quarter_asked_about() -> None:
    text, quote = row_claim("What was NVIDIA's revenue for the quarter ended July 30, 2023?", ("2023-07-30",))
    assert text == "Revenue: $13,507 million, three months ended July 30, 2023"
    assert quote == text  # the first cell is a prefix of the row: its own verbatim quote


def test_a_later_cell_keeps_the_row_label_and_cites_the_whole_row() -> None:
    text, quote = row_claim("What was the revenue for the six months ended July 30, 2023?", ("2023-07-30",))
    assert text == "Revenue: $20,699 million, six months ended July 30, 2023"
    assert quote == REVENUE_ROW
    text, _quote = row_claim("What was the revenue in the quarter a year earlier?", ("2022-07-31",))
    assert "$6,704 million" in text and "13,507" not in text


def test_a_table_row_stays_whole_without_a_resolved_period_or_with_no_single_matching_cell() -> None:
    assert row_claim("What was NVIDIA's revenue?", ())[0] == REVENUE_ROW
    assert (
        row_claim("revenue in the quarter ended July 30, 2023 and a year earlier", ("2023-07-30", "2022-07-31"))[0]
        == REVENUE_ROW
    )


def test_a_row_with_change_columns_answers_with_only_the_cell_of_the_quarter_asked_about() -> None:
    # NVIDIA's MD&A summary: three quarters, then the changes from the quarter before and from a year before.
    row = (
        "Net income: $6,188 million, three months ended July 30, 2023; $2,043 million, three months ended April 30, "
        "2023; $656 million, three months ended July 31, 2022; 203%, change from the three months ended April 30, "
        "2023; 843%, change from the three months ended July 31, 2022."
    )
    plan = dataclasses.replace(
        make_plan("What was NVIDIA's net income in the quarter ended July 30, 2023?", text="net income quarter"),
        period_scope=("2023-07-30",),
    )
    evidence = [make_evidence("T1", row)]
    (claim,) = ExtractiveWriter().write(plan, evidence, max_claims=1)
    assert claim.text == "Net income: $6,188 million, three months ended July 30, 2023"
    # The same figure in the statement of income is said once.
    statement = make_evidence("T2", "Net income: $6,188 million, three months ended July 30, 2023; $656 million, "
                                    "three months ended July 31, 2022.")  # fmt: skip
    claims = ExtractiveWriter().write(plan, [*evidence, statement])
    assert [c.text for c in claims] == ["Net income: $6,188 million, three months ended July 30, 2023"]
    # The quarter a change is counted from is not a cell of that quarter: April 30 has its own cell.
    earlier = dataclasses.replace(
        make_plan("What was NVIDIA's net income in the quarter ended April 30, 2023?", text="net income quarter"),
        period_scope=("2023-04-30",),
    )
    (claim,) = ExtractiveWriter().write(earlier, evidence, max_claims=1)
    assert claim.text == "Net income: $2,043 million, three months ended April 30, 2023"


# --------------------------------------------------------------------------- what the question asks about


def test_a_segment_figure_does_not_lead_an_answer_about_the_total() -> None:
    from answers.lexicon import content_stems
    from answers.writers.extractive import unasked_qualifier

    filing = make_evidence(
        "Q3",
        "Gaming revenue for the third quarter of fiscal year 2024 was $2.86 billion, up 81% from a year ago. "
        "Revenue for the third quarter of fiscal year 2024 was $18.12 billion, up 206% from a year ago.",
    )
    claims = ExtractiveWriter().write(make_plan("What was NVIDIA's revenue in the latest quarter?"), [filing])
    assert claims[0].text.startswith("Revenue for the third quarter")
    # Asked about the segment, the segment's sentence is no longer narrower than the question.
    assert not unasked_qualifier(
        "Gaming revenue for the third quarter was $2.86 billion.", frozenset(content_stems("gaming revenue"))
    )
    assert unasked_qualifier(
        "Net income attributable to the non-controlling interest was $10 million.",
        frozenset(content_stems("net income")),
    )


def test_a_line_named_by_its_table_group_is_not_narrower_than_the_question() -> None:
    from answers.lexicon import content_stems
    from answers.writers.extractive import unasked_qualifier

    asked = frozenset(content_stems("Amazon's technology and content expenses"))
    line = "Technology and content (operating expenses): $20,450 million, three months ended March 31, 2023."
    assert not unasked_qualifier(line, asked)
    # Asked by the line's name alone, the line in its group is what was asked.
    assert not unasked_qualifier(
        "Research and development (operating expenses): $1,875 million, three months ended April 30, 2023.",
        frozenset(content_stems("What was research and development in the quarter for NVIDIA")),
    )
    # The group names the measure; the line's own words still narrow it.
    assert unasked_qualifier(
        "Desktop (net revenue): $2,879 million, three months ended July 1, 2023.",
        frozenset(content_stems("Intel's net revenue")),
    )
    # A segment inside the group ("Client Computing" under "Net revenue:") narrows the line too.
    segment = "Other (Client Computing, net revenue): $481 million, three months ended April 1, 2023."
    assert unasked_qualifier(segment, frozenset(content_stems("Intel's quarterly revenue")))
    rest = "All other (net revenue): $165 million, three months ended April 1, 2023."
    assert unasked_qualifier(rest, frozenset(content_stems("Intel's quarterly revenue")))
    assert not unasked_qualifier(
        "Total Client Computing (net revenue): $6,780 million, three months ended July 1, 2023.",
        frozenset(content_stems("Intel's Client Computing total revenue")),
    )


def test_a_row_without_the_asked_quarters_cell_ranks_below_the_row_with_it() -> None:
    cash_flow = make_evidence(
        "CF",
        "Net income (cash flows from operating activities): $2,954 million, nine months ended October 30, 2022; "
        "$6,749 million, nine months ended October 31, 2021.",
    )
    income = make_evidence(
        "IS",
        "Net income: $680 million, three months ended October 30, 2022; $2,464 million, three months ended "
        "October 31, 2021; $2,954 million, nine months ended October 30, 2022; $6,749 million, nine months "
        "ended October 31, 2021.",
    )
    question = "What was NVIDIA's net income in the quarter ended October 30, 2022?"
    plan = dataclasses.replace(make_plan(question), period_scope=("2022-10-30",))
    claims = ExtractiveWriter().write(plan, [cash_flow, income])
    assert claims[0].text == "Net income: $680 million, three months ended October 30, 2022"


def test_a_clause_that_counts_what_it_lists_answers_how_many() -> None:
    page = make_evidence(
        "B",
        "The Business Operations Division leads the day to day operations of the organization.\n\n"
        "This division is made up of four teams and responsible for the following functions:\n\nAgreements\n\nBudget",
    )
    claims = ExtractiveWriter().write(make_plan("How many teams make up the Business Operations Division?"), [page])
    counted = [c for c in claims if "four teams" in c.text]
    # Once, with what it lists, quoting the clause and its items verbatim.
    assert [c.text for c in counted] == [
        "This division is made up of four teams and responsible for the following functions: Agreements; Budget."
    ]
    assert counted[0].citations[0].quote in page.text


def test_a_which_question_prefers_the_sentence_that_names_something() -> None:
    from answers.lexicon import content_stems
    from answers.writers.extractive import names_something

    asked = frozenset(content_stems("Which password manager does TTS recommend?"))
    assert names_something("We recommend using KeePassXC which is open source.", asked)
    assert not names_something("We strongly recommend using a password manager to manage your keys.", asked)
    assert not names_something("As you set up your TTS accounts, use a password manager.", asked)  # TTS was asked


LEAVE_TYPES = (
    "If you can't work for weather or safety reasons, you can request Administrative Leave.\n\n"
    "If you are running out of leave hours, you can request:\n\n"
    "Advanced Annual Leave\n\n"
    "Advanced Sick Leave\n\n"
    "Donated hours from the Voluntary Leave Transfer Program\n\n"
    "Contact us: leave@example.gov"
)


def test_a_list_and_its_introduction_become_one_claim_that_quotes_the_whole_list() -> None:
    evidence = [make_evidence("L", LEAVE_TYPES)]
    plan = make_plan("What can I request if I run out of leave hours?")

    claims = ExtractiveWriter().write(plan, evidence)

    assert claims[0].text == (
        "If you are running out of leave hours, you can request: Advanced Annual Leave; Advanced Sick Leave; "
        "Donated hours from the Voluntary Leave Transfer Program."
    )
    quote = claims[0].citations[0].quote
    assert quote.startswith("If you are running out") and quote.endswith("Voluntary Leave Transfer Program")
    assert "Contact us" not in quote  # a label line ends the list
    result = verify_claim(claims[0], {"L": evidence[0]}, plan, authorised_ids={"L"})
    assert result.kept and result.quote_ok


def test_items_the_question_excludes_are_left_out_of_a_listed_answer() -> None:
    evidence = [make_evidence("L", LEAVE_TYPES)]
    plan = make_plan(
        "If I run out of leave, what can I request other than advanced annual or advanced sick leave?",
        text="If I run out of leave, what can I request?",
        exclude=("advanced annual", "advanced sick leave"),
    )

    claims = ExtractiveWriter().write(plan, evidence)

    assert claims[0].text == (
        "If you are running out of leave hours, you can request: Donated hours from the Voluntary Leave Transfer Program."
    )
    assert all("Advanced" not in c.text for c in claims)


def test_a_list_whose_items_are_all_excluded_is_no_claim() -> None:
    evidence = [make_evidence("L", LEAVE_TYPES)]
    plan = make_plan("what can I request when running out of leave hours", exclude=("advanced", "donated hours"))

    assert all("running out" not in c.text for c in ExtractiveWriter().write(plan, evidence))


def test_a_sentence_broken_over_lines_and_the_lines_of_a_table_are_not_lists() -> None:
    broken = "Intended especially to capture:\n\nPaid Parental Leave\n\nExtended jury leave, or\n\nOther leave"
    table = "Net sales by reportable segment:\n\nAmericas $ 37,784 $ 40,882 (8)%\n\nEurope 23,945 23,287 3 %"
    for text in (broken, table):
        units = group_list_blocks(text, split_sentences(text))
        assert not any(isinstance(u, ListBlock) for u in units), text


def test_latest_counts_as_covered_once_the_current_version_is_resolved() -> None:
    from answers.lexicon import content_stems
    from answers.writers.extractive import scoped_terms

    plan = make_plan("latest ExampleDB replication changes")
    latest = set(content_stems("latest"))
    assert not latest & scoped_terms(plan)
    assert not latest & scoped_terms(dataclasses.replace(plan, needs_current_version=True))
    resolved = dataclasses.replace(plan, needs_current_version=True, version_scope="18")
    assert latest <= scoped_terms(resolved)


def test_a_table_groups_own_words_narrow_its_measure() -> None:
    from answers.lexicon import content_stems
    from answers.writers.extractive import unasked_qualifier

    asked = frozenset(content_stems("revenue for Microsoft's More Personal Computing segment"))
    assert unasked_qualifier(
        "More Personal Computing (unearned revenue by segment): $3,684 million, December 31, 2022.", asked
    )
    assert not unasked_qualifier(
        "More Personal Computing (revenue): $14,237 million, three months ended December 31, 2022.", asked
    )
    spent = frozenset(content_stems("How much did Amazon spend on sales and marketing"))
    assert unasked_qualifier(
        "Sales and marketing (stock-based compensation expense): $1,111 million, three months ended September 30, 2023.",
        spent,
    )


def test_a_value_is_read_with_the_sentence_before_it_that_names_what_it_is() -> None:
    page = make_evidence(
        "San Francisco",
        "SFMTA one-way fare is $2.25 with a 90-minute transfer. BART fares are based on distance. SFO to Civic "
        "Center Station is $8.65; OAK to Civic Center Station is $10.05.",
    )
    claims = ExtractiveWriter().write(make_plan("How much is the BART fare from SFO?"), [page])
    assert claims[0].text == (
        "BART fares are based on distance. SFO to Civic Center Station is $8.65; OAK to Civic Center Station is $10.05."
    )
    assert quote_in_passage(claims[0].citations[0].quote, page.text)
    # The value alone is not a second claim beside the pair.
    assert all(c.text != "SFO to Civic Center Station is $8.65; OAK to Civic Center Station is $10.05." for c in claims)


def test_a_sentence_that_speaks_of_both_things_named_before_it_is_read_with_that_sentence() -> None:
    page = make_evidence(
        "Going out of office",
        "Reminder: HR Links is separate from Tock. If you're taking time off, you'll need to make sure you're "
        "accounted for in both systems.",
    )
    plan = make_plan("Apart from HR Links, where else do I have to account for my time off?",
                     text="where else do I have to account for my time off", exclude=("HR Links",))  # fmt: skip
    claims = ExtractiveWriter().write(plan, [page])
    assert claims[0].text == page.text
    # "… in both systems" alone names neither system: it is never a claim of its own.
    assert all(not c.text.startswith("If you're taking time off") for c in claims)


def test_a_sentence_opening_with_however_is_read_with_the_one_it_qualifies() -> None:
    page = make_evidence(
        "Purchase requests",
        "Business cards\n\nIf you want TTS/18F branding, you must purchase "
        "your own business cards. However, please get a final approval from the TTS Outreach team before placing "
        "the order.",
    )
    claims = ExtractiveWriter().write(make_plan("How do I get business cards with 18F branding?"), [page])
    assert claims[0].text == (
        "If you want TTS/18F branding, you must purchase your own business cards. However, please get a final "
        "approval from the TTS Outreach team before placing the order."
    )
    assert quote_in_passage(claims[0].citations[0].quote, page.text)


def test_a_figure_about_the_sale_the_sentence_before_reported_is_stated_with_that_sentence() -> None:
    first = (
        "In August 2023, we closed an agreement to sell a 20% minority stake in our IMS Nanofabrication GmbH (IMS) "
        "business, a business within our IFS operating segment, to Bain Capital Special Situations (Bain Capital)."
    )
    page = make_evidence("2023 Q3 INTC.pdf", f"{first} Net proceeds resulting from the sale were $849 million.")
    claims = ExtractiveWriter().write(
        make_plan("What did Intel net from selling part of IMS Nanofabrication to Bain Capital in August 2023?"), [page]
    )
    # The first sentence names the sale and is long; the figure is only in the next one.
    assert claims[0].text == page.text
    assert quote_in_passage(claims[0].citations[0].quote, page.text)


def test_access_to_a_tool_is_answered_by_how_to_obtain_its_license() -> None:
    page = make_evidence(
        "Airtable",
        "Airtable is a database tool used by several teams.\n\nTTS employees can obtain a free, read-only license "
        "by making a request to tts-tech-operations@gsa.gov.",
    )
    claims = ExtractiveWriter().write(make_plan("How do I get access to Airtable?"), [page])
    assert any("tts-tech-operations@gsa.gov" in c.text for c in claims), [c.text for c in claims]


def test_a_list_introduced_by_these_options_is_read_with_the_sentence_that_says_what_they_are_for() -> None:
    page = make_evidence(
        "Google Groups",
        "To adjust group permissions so non-GSA people can join your Google Group, open Group settings. Enable or "
        "select these options:\n\nPeople outside the organization can be members (ON)\n\nAllow email posting",
    )
    claims = ExtractiveWriter().write(make_plan("How do I let non-GSA people join my Google Group?"), [page])
    assert claims[0].text == (
        "To adjust group permissions so non-GSA people can join your Google Group, open Group settings. Enable or "
        "select these options: People outside the organization can be members (ON); Allow email posting."
    )
    assert quote_in_passage(claims[0].citations[0].quote, page.text)


def test_a_command_is_read_with_the_instruction_that_introduces_it() -> None:
    page = make_evidence(
        "Git commit signing",
        "Configure git to sign commits\n\nBy default, git uses a format called GPG for commit signing.\n\n"
        "Tell git to use SSH keys instead of GPG keys. In a terminal, enter this command:\n\n"
        "git config --global gpg.format ssh\n\nNext, tell git to sign your commits.",
    )
    claims = ExtractiveWriter().write(make_plan("How do I tell git to use an SSH key for signing?"), [page])
    texts = [c.text for c in claims]
    assert any(t.endswith("enter this command: git config --global gpg.format ssh") for t in texts), texts
    command = next(c for c in claims if "gpg.format" in c.text)
    assert quote_in_passage(command.citations[0].quote, page.text)


def test_a_follow_ups_earlier_question_weighs_less_than_what_it_asks_now() -> None:
    page = make_evidence(
        "San Francisco",
        "Public transit from SFO to the TTS San Francisco office is cheap, fairly quick, and convenient.\n\n"
        "Take the AirTrain from your terminal of arrival to the SFO BART station.\n\n"
        "BART fares are based on distance. SFO to Civic Center Station is $8.65.",
    )
    resolved = (
        "How much is that BART fare: I'm flying into SFO to visit the San Francisco office. What's the easiest way "
        "to get there by public transit?"
    )
    claims = ExtractiveWriter().write(make_plan(resolved), [page])
    assert claims[0].text == "BART fares are based on distance. SFO to Civic Center Station is $8.65."


def test_filing_prose_dated_to_another_period_than_the_one_asked_ranks_lower() -> None:
    from answers.writers.extractive import prose_fits_period

    prior = "Our income tax benefit for the three months ended March 31, 2022 was $1.4 billion."
    assert prose_fits_period(prior, ["2023-03-31"], "What was the valuation loss in Q1 2023?") is False
    assert prose_fits_period(prior.replace("2022", "2023"), ["2023-03-31"], "the loss in Q1 2023") is True
    assert prose_fits_period("The loss was $467 million.", ["2023-03-31"], "the loss in Q1 2023") is None


def test_a_sentence_that_names_the_excluded_term_beside_another_is_kept() -> None:
    from answers.writers.extractive import excluded_sentence

    # "Apart from HR Links, where else do I account for my time off?"
    assert not excluded_sentence("HR Links is separate from Tock.", ["HR Links"])
    assert not excluded_sentence("Record it in Tock as well as HR Links.", ["HR Links"])
    assert excluded_sentence("Enter your hours in HR Links.", ["HR Links"])


def test_a_sentence_about_the_case_without_the_excluded_term_is_kept() -> None:
    from answers.writers.extractive import excluded_sentence

    # "I'm not using a password manager. Where should I save my git signing key?"
    assert not excluded_sentence("If you are not using a password manager, type the path.", ["password manager"])
    assert not excluded_sentence("If you don't have a password manager, enter a strong password.",
                                 ["password manager"])  # fmt: skip
    assert excluded_sentence("Save the key in your password manager.", ["password manager"])


def test_sales_and_marketing_is_an_expense_line_not_revenue() -> None:
    from datetime import UTC, datetime

    from answers.lexicon import content_stems, says_sales
    from answers.planning import filing_terms_rewrite
    from answers.query_parser import parse_query
    from answers.writers.extractive import unasked_qualifier

    question = "How much did Amazon spend on sales and marketing in the quarter ended September 30, 2023?"
    assert not says_sales(question) and says_sales("What were Amazon's net sales?")
    # No "total net sales" leg for a cost line; the revenue question keeps it.
    now = datetime(2026, 1, 1, tzinfo=UTC)
    assert "total net sales" not in filing_terms_rewrite(parse_query(question, now))
    assert "total net sales" in filing_terms_rewrite(parse_query("What were Amazon's sales in Q3 2023?", now))
    asked = frozenset(content_stems("spend sales marketing expenses expense costs"))
    line = "Sales and marketing (operating expenses): $10,551 million, three months ended September 30, 2023."
    assert not unasked_qualifier(line, asked)
    assert unasked_qualifier(
        "Sales and marketing (stock-based compensation expense): $1,111 million, three months ended September "
        "30, 2023.",
        asked,
    )


def test_the_users_own_case_leads_when_the_question_sets_a_term_aside() -> None:
    evidence = make_evidence(
        "keys",
        "Next, you will be asked to provide a password for your key file. If you are using a password manager, "
        "simply press enter to have an empty password. If you are not using a password manager, enter a strong "
        "password for your key file.",
    )
    from answers.planning import plan_question

    plan = plan_question("I'm not using a password manager. What password should I give my key file?",
                         datetime(2026, 1, 1, tzinfo=UTC))  # fmt: skip
    assert plan.parsed.exclude  # the parser sets "password manager" aside
    claims = ExtractiveWriter().write(plan, [evidence])
    assert claims[0].text == "If you are not using a password manager, enter a strong password for your key file."


def test_the_parts_of_a_hyphenated_word_are_terms_of_a_sentence() -> None:
    from answers.lexicon import content_stems, content_stems_with_parts

    stems = content_stems_with_parts("Type ~/.ssh/git-signing-key.")
    assert "git-signing-key" in stems and set(content_stems("git signing key")) <= set(stems)


# --------------------------------------------------------------------------- "which ... the most": ranking a table's rows


def _row(label: str, q2021: int, q2022: int) -> str:
    return (
        f"{label} (Net Sales): ${q2021:,} million, three months ended September 30, 2021; ${q2022:,} million, "
        "three months ended September 30, 2022."
    )


def _filing_passages() -> list[EvidenceRecord]:
    """A product table cut by a passage boundary, then a segment table, as three passages of one filing."""
    first = "Net sales by groups of similar products and services is as follows (in millions):\n\n" + "\n\n".join(
        [
            _row("Online stores", 49_942, 53_489),
            _row("Physical stores", 4_269, 4_694),
            _row("Third-party seller services", 24_252, 28_666),
        ]  # fmt: skip
    )
    second = "\n\n".join([_row("Cloud services", 16_110, 30_538), _row("Consolidated", 110_812, 127_101)])
    third = "Segment information:\n\n" + "\n\n".join(
        [_row("North America", 65_557, 78_843), _row("International", 29_145, 27_720)]
    )
    out, start = [], 0
    for n, text in enumerate((first, second, third)):
        ev = dataclasses.replace(make_evidence(f"p{n}", text), char_start=start, char_end=start + len(text),
                                 title="2022 Q3 AMZN.pdf")  # fmt: skip
        out.append(ev)
        start += len(text) + (2 if n == 0 else 400)  # the segment table is further down the filing
    return out


def _ranking_plan(question: str, exclude: tuple[str, ...] = ()) -> QueryPlan:
    return dataclasses.replace(make_plan(question, exclude=exclude), period_scope=("2022-09-30",))


def test_it_answers_which_row_ranks_first_from_the_table_the_question_sets_a_row_aside_from() -> None:
    plan = _ranking_plan(
        "Other than its online stores, which revenue category brought in the most in the quarter ended "
        "September 30, 2022?",
        exclude=("online stores",),
    )

    claims = ExtractiveWriter().write(plan, _filing_passages())

    # The table continues in the next passage: its row there ranks first; the segment table does not compete.
    assert claims[0].text == "Cloud services (Net Sales): $30,538 million, three months ended September 30, 2022"
    assert all("North America" not in c.text and "Online stores" not in c.text for c in claims)


def test_it_ranks_by_the_smallest_cell_when_the_question_asks_for_the_lowest() -> None:
    plan = _ranking_plan(
        "Besides online stores, which revenue category had the lowest net sales in the quarter ended "
        "September 30, 2022?",
        exclude=("online stores",),
    )

    claims = ExtractiveWriter().write(plan, _filing_passages())

    assert claims[0].text.startswith("Physical stores (Net Sales): $4,694 million")


def test_it_does_not_pick_a_table_to_rank_when_two_could_answer() -> None:
    plan = _ranking_plan("Which group had the highest net sales in the quarter ended September 30, 2022?")

    assert ranked_table(plan, _filing_passages()) is None  # the product table or the segment table?
    assert asks_superlative("What was Apple's net income in the most recent quarter?") is None


def test_the_ranked_set_and_the_ranking_words_are_not_what_a_claim_must_state() -> None:
    from answers.lexicon import ranking_words
    from answers.verification import attribute_terms

    question = "Which of Amazon's revenue categories brought in the most money in the quarter ended September 30, 2022?"
    assert ranking_words(question) == {"category", "brought"}
    assert "category" not in attribute_terms(make_plan(question))
    assert "revenu" in attribute_terms(make_plan(question))  # what the row's figure must be a figure of
    assert ranking_words("What was Amazon's revenue in the most recent quarter?") == frozenset()


# --------------------------------------------------------------------------- negated questions

OFFBOARDING = (
    "Your Annual Leave will be paid out when you leave TTS. "
    "Your Sick Leave will not be paid out when you leave TTS; however, you will not lose it."
)


def test_a_negated_question_is_answered_by_the_sentence_that_says_what_is_not_so() -> None:
    evidence = [make_evidence("OFF", OFFBOARDING)]
    question = "Which of my leave balances won't be paid out when I leave TTS?"
    claims = ExtractiveWriter().write(make_plan(question), evidence, max_claims=1)
    assert [c.text for c in claims] == [
        "Your Sick Leave will not be paid out when you leave TTS; however, you will not lose it."
    ]
    # Asked without the negation, the same evidence answers with the other sentence first.
    claims = ExtractiveWriter().write(make_plan("Which of my leave balances will be paid out when I leave TTS?"),
                                      evidence, max_claims=1)  # fmt: skip
    assert claims[0].text.startswith("Your Annual Leave")


def test_what_the_asker_already_knows_or_sets_aside_is_not_the_negation_asked() -> None:
    from answers.lexicon import asks_negated, states_negation

    assert asks_negated("When I leave TTS, which of my leave balances won't be paid out to me?")
    assert asks_negated("If I notice suspicious activity on my laptop, what should I not do?")
    assert asks_negated("Who isn't eligible for the leave transfer program?")
    assert not asks_negated("Standard and compressed schedules don't allow credit hours, so which schedule types do?")
    assert not asks_negated("I don't have a clearance. Do I still have to notify GSA before a trip abroad?")
    assert not asks_negated("Which changes affect subscribers, not publishers?", ("publishers",))
    assert states_negation("No approval is needed to archive a repository.")
    assert states_negation("Laundry may only be reimbursable if travel involves at least 4 consecutive nights.")
    assert not states_negation("Your Annual Leave will be paid out.")


def test_what_can_be_done_without_a_step_or_is_exempt_from_it_asks_what_is_not_needed() -> None:
    from answers.lexicon import asks_negated, states_negation

    assert asks_negated("Is there anything in GitHub I can do without asking Tech Operations for approval first?")
    assert asks_negated("What kind of software is exempt from the GSA IT Standards approval process?")
    assert states_negation("In general, open source development libraries are exempt from IT Standards review.")
    assert not states_negation(
        "Almost all software in use at GSA needs to be approved through the IT Standards process."
    )


def test_an_excluded_term_is_found_in_other_words_for_the_same_thing() -> None:
    from answers.writers.extractive import excluded_sentence, mentions_excluded

    # "Other than creating a public repo, ...": the page's "create public repositories" is the case set aside.
    assert excluded_sentence("You do not need approval to create public repositories.", ["creating a public repo"])
    # "Apart from my annual leave, ...": "Your Annual Leave" is the asker's.
    assert excluded_sentence("Your Annual Leave will be paid out.", ["my annual leave"])
    assert not excluded_sentence("Your Sick Leave will not be paid out.", ["my annual leave"])
    assert not mentions_excluded("Publication of the report is due in May.", ["public repo"])


def test_a_may_i_question_is_answered_first_by_the_rule_not_by_a_description() -> None:
    evidence = [
        make_evidence("E1", "Staff notify GSA about a personal trip abroad through the travel form."),
        make_evidence("E2", "Notifying GSA of a personal trip abroad is optional without a clearance."),
    ]
    plan = make_plan("Do I still have to notify GSA before a personal trip abroad?")

    texts = [c.text for c in ExtractiveWriter().write(plan, evidence)]

    assert texts[0] == "Notifying GSA of a personal trip abroad is optional without a clearance."
    # Asked what, not whether, the description leads.
    plan = make_plan("How do I notify GSA about a personal trip abroad?")
    assert ExtractiveWriter().write(plan, evidence)[0].text.startswith("Staff notify GSA")


def test_whether_a_named_team_has_to_wait_is_answered_by_the_rule_not_by_what_it_does() -> None:
    evidence = [
        make_evidence("E1", "Once a report is confirmed, SecOps can award it."),
        make_evidence("E2", "There is no need to wait until the issue is resolved to award."),
    ]
    plan = make_plan("Does SecOps have to wait until we ship the fix before awarding the bounty?")

    assert ExtractiveWriter().write(plan, evidence)[0].citations[0].evidence_id == "E2"
    # "Does SecOps have a ...?" asks for a thing, not whether a rule allows it.
    plan = make_plan("Does SecOps have a report of it?")
    assert ExtractiveWriter().write(plan, evidence)[0].citations[0].evidence_id == "E1"


def test_a_sentence_about_the_askers_situation_alone_yields_to_one_about_what_they_ask() -> None:
    question = "I'm in the National Guard and my annual training starts next month. Which Tock line do I use?"
    plan = make_plan(question)
    evidence = [
        make_evidence("TOCK", "Staff should Tock any out of office time to Tock line #670, Out of Office."),
        make_evidence(
            "LEAVE", "You can receive 15 Military Leave days each year for annual training in the National Guard."
        ),
    ]
    lead = ExtractiveWriter().write(plan, evidence)[0]
    assert lead.citations[0].evidence_id == "TOCK"
    # Read with the situation's words alone, the leave sentence shares more of the question and would lead.
    unweighed = ExtractiveWriter()
    unweighed.situation_only_factor = 1.0
    assert unweighed.write(plan, evidence)[0].citations[0].evidence_id == "LEAVE"


def test_a_question_that_says_ship_finds_the_rule_that_says_sent() -> None:
    # "ship" is what a page says as "sent".
    supplies = make_evidence("supplies", (
        "The supply center offers paper, pens, notebooks, and other basic office supplies. "
        "Please note that most office supplies are not able to be sent to teleworkers."
    ))  # fmt: skip
    texts = [c.text for c in ExtractiveWriter().write(make_plan("Can TTS ship the office supplies to me?"), [supplies])]
    assert texts[0] == "Please note that most office supplies are not able to be sent to teleworkers."


def test_the_sentence_after_the_lead_is_stated_though_the_answer_is_full_but_not_past_one_claim_asked() -> None:
    page = (
        "After the Opportunity Network form is submitted, OHRM will review the form within 3 days. "
        "Once approved, it is posted to the Network at once."
    )
    others = [
        make_evidence("o1", "The Opportunity Network form asks for the position description and the grade."),
        make_evidence("o2", "Submit the Opportunity Network form from the Internal Hiring page."),
        make_evidence("o3", "Hiring managers use the form to list a detail on the Opportunity Network."),
        make_evidence("o4", "The Opportunity Network lists details and reassignments across GSA."),
        make_evidence("o5", "A detail submitted to the Opportunity Network names its office and its start date."),
    ]
    plan = make_plan("How long after I submit the Opportunity Network form does the detail go live?")
    evidence = [make_evidence("on", page), *others]

    texts = [c.text for c in ExtractiveWriter().write(plan, evidence)]

    plain = ExtractiveWriter()
    plain.continue_lead = False
    alone = [c.text for c in plain.write(plan, evidence)]
    assert len(alone) == 4 and "Once approved, it is posted to the Network at once." not in alone
    # The four claims chosen on their own scores, and the lead's next sentence second.
    assert texts == [alone[0], "Once approved, it is posted to the Network at once.", *alone[1:]]
    assert alone[0].startswith("After the Opportunity Network form is submitted")
    assert len(ExtractiveWriter().write(plan, evidence, max_claims=1)) == 1


@pytest.mark.parametrize("asked", ["How soon", "How quickly", "How far in advance", "How far ahead"])
def test_how_soon_or_how_far_ahead_is_answered_by_the_sentence_with_a_length_of_time(asked: str) -> None:
    evidence = [
        make_evidence("home", "The service desk ships replacement laptops to your home address."),
        make_evidence("days", "The service desk ships replacement laptops within 5 business days."),
    ]
    plan = make_plan(f"{asked} does the service desk ship a replacement laptop?")
    assert ExtractiveWriter().write(plan, evidence)[0].citations[0].evidence_id == "days"


def test_the_second_fact_of_a_two_part_question_is_stated_as_an_extra_claim() -> None:
    # Five sentences about the booking outrank the one that says who pays; it is stated past the four claims.
    booking = [
        make_evidence(f"b{i}", text)
        for i, text in enumerate([
            "Cancel the conference hotel booking in Concur if your conference request is denied.",
            "A conference hotel booking in Concur shows any nonrefundable fee on the trip's itinerary.",
            "Concur lists conference hotel rooms at the government rate, some with a nonrefundable fee.",
            "Someone on the travel team can look up a conference hotel booking in Concur.",
            "Your conference request is decided by the training lead before any Concur hotel booking.",
        ])
    ]  # fmt: skip
    pays = make_evidence(
        "fee", "Charges that are not pre-approved are the traveler's liability: the traveler pays them."
    )
    plan = make_plan("Will someone cancel my conference hotel booking in Concur, and who pays a nonrefundable fee?")
    limited = ExtractiveWriter()
    limited.extra_claims = 0
    assert [c.citations[0].evidence_id for c in limited.write(plan, [*booking, pays])] == ["b1", "b0", "b3", "b2"]
    claims = ExtractiveWriter().write(plan, [*booking, pays])
    assert [(c.citations[0].evidence_id, c.extra) for c in claims] == [
        ("b1", False), ("b0", False), ("b3", False), ("b2", False), ("b4", True), ("fee", True)
    ]  # fmt: skip


def test_the_row_whose_bracket_holds_the_askers_count_answers_over_the_other_rows() -> None:
    rows = [
        make_evidence("seven", "Number of direct reports: >/=7; Utilization % target: 30%; Target hours: 10-16 hours."),
        make_evidence("four", "Number of direct reports: 4; Utilization % target: 60%; Target hours: 18-24 hours."),
        make_evidence("few", "Number of direct reports: 1-3; Utilization % target: 65%; Target hours: 20-26 hours."),
    ]
    plan = make_plan("I'm about to take on eight direct reports. What utilization target will I be held to?")
    # Retrieval ranked the asker's row last; the bracket ">/=7" holds eight, "4" and "1-3" do not.
    assert ExtractiveWriter().write(plan, rows[::-1])[0].citations[0].evidence_id == "seven"
    assert bracket_fits(rows[1].text, "I supervise 4 direct reports. What is my target?") is True
    assert bracket_fits(rows[2].text, "I supervise 4 direct reports. What is my target?") is False
    # A count of something else, or a year, says nothing about the row.
    assert bracket_fits(rows[2].text, "I have 2 projects. What is my target?") is None
    assert bracket_fits("Fiscal year: 2023; Reports filed: 12.", "How many reports were filed in 2023 reports?") is None
