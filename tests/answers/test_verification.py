"""Verification: the mechanical quote check, the lexical support check, scope and links."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from answers.contracts import Citation, DraftClaim, EvidenceRecord, ParsedQuery, QueryPlan, TimeScope
from answers.lexicon import normalise_ws
from answers.sanitise import strip_unsupported_links
from answers.support import quote_in_passage, support_label
from answers.verification import verifier_release, verify_claim

# The three illustrative passages of the design document's replication example.
S1 = "The subscription option lr_example_parallel_apply now defaults to on for newly created subscriptions."
S2 = "Existing subscriptions keep the value that was stored before the upgrade."
S3 = "Parallel apply is useful for large transactions and cuts replication lag a lot."


def make_evidence(
    eid: str,
    text: str,
    *,
    updated_at: datetime | None = None,
    created_at: datetime | None = None,
) -> EvidenceRecord:
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
        updated_at=updated_at,
        created_at=created_at,
    )


def make_plan(query: str = "does parallel apply reduce replication lag", time: TimeScope | None = None) -> QueryPlan:
    # An explicit window (the after:/before: operators) is what the verifier applies.
    parsed = ParsedQuery(original=query, text=query, time=time, time_filter=time)
    return QueryPlan(parsed=parsed, as_of=datetime(2025, 10, 1, tzinfo=UTC), retrieval_queries=(query,))


def claim(text: str, *cites: tuple[str, str]) -> DraftClaim:
    return DraftClaim(id="c1", text=text, citations=tuple(Citation(e, q) for e, q in cites))


EVIDENCE = {
    "S1": make_evidence("S1", S1, updated_at=datetime(2025, 9, 25, tzinfo=UTC)),
    "S2": make_evidence("S2", S2, updated_at=datetime(2025, 9, 25, tzinfo=UTC)),
    "S3": make_evidence("S3", S3, updated_at=datetime(2024, 3, 10, tzinfo=UTC)),
}
ALL_IDS = frozenset(EVIDENCE)


# --------------------------------------------------------------------------- normalisation and quotes


def test_normalise_ws_straightens_quotes_dashes_and_whitespace() -> None:
    assert (
        normalise_ws("  \u201cIt\u2019s\u201d \u2013 on\u00a0by \u2014 default\n\tnow ")
        == '"It\'s" - on by - default now'
    )


def test_normalise_ws_applies_nfkc_and_drops_soft_hyphens() -> None:
    assert normalise_ws("\ufb01le repli\u00adcation") == "file replication"


def test_a_quote_with_different_whitespace_and_typography_is_found() -> None:
    passage = "Existing subscriptions keep the\n  value that was \u201cstored\u201d before the upgrade."
    assert quote_in_passage('keep the value that was "stored" before', passage)


def test_a_fabricated_quote_is_not_found() -> None:
    assert not quote_in_passage("Parallel apply removes replication lag entirely.", S3)


def test_a_paraphrased_quote_is_not_found() -> None:
    assert not quote_in_passage("cuts the replication lag a lot", S3)


def test_quote_matching_is_case_sensitive() -> None:
    assert not quote_in_passage("parallel apply is useful", S3)
    assert quote_in_passage("Parallel apply is useful", S3)


def test_a_quote_must_not_start_or_end_inside_a_word() -> None:
    passage = "The connector cannot support nested groups."
    assert not quote_in_passage("not support nested groups", passage)
    assert not quote_in_passage("The connect", passage)


def test_an_empty_quote_is_never_found() -> None:
    assert not quote_in_passage("   ", S3)


# --------------------------------------------------------------------------- support labels


def test_identical_claim_and_quote_are_supported_as_verbatim() -> None:
    assert support_label(S3, "Parallel  apply is useful for large transactions and cuts replication lag a lot") == (
        "supported",
        ("verbatim",),
    )


def test_the_seed_claim_that_parallel_apply_removes_lag_entirely_is_not_supported() -> None:
    label, reasons = support_label("Parallel apply removes replication lag entirely.", "cuts replication lag a lot")
    assert label != "supported"
    assert label == "unsupported"
    assert "escalation:entirely" in reasons


def test_an_absolute_claim_over_a_hedged_full_sentence_is_at_most_partially_supported() -> None:
    label, reasons = support_label("Parallel apply cuts replication lag entirely for large transactions.", S3)
    assert label == "partially_supported"
    assert "escalation:entirely" in reasons


def test_an_absolute_word_is_fine_when_the_quote_says_it_too() -> None:
    label, _ = support_label("Backups are always encrypted.", "All backups are always encrypted at rest.")
    assert label == "supported"


def test_a_different_number_for_the_same_quantity_is_contradicted() -> None:
    label, reasons = support_label("Audit logs are retained for 30 days.", "Audit logs are retained for 90 days.")
    assert label == "contradicted"
    assert "number_conflict:30" in reasons


def test_a_different_date_is_contradicted() -> None:
    label, _ = support_label(
        "Security fixes for Foo 3.2 end on 2026-07-30.",
        "Foo 3.2: security fixes until 2026-06-30; end of life 2026-12-31",
    )
    assert label == "contradicted"


def test_a_number_the_quote_does_not_mention_is_unsupported() -> None:
    label, reasons = support_label("Audit logs are retained for 30 days.", "Audit logs are retained by the platform.")
    assert label == "unsupported"
    assert "number_missing:30" in reasons


def test_thousands_separators_do_not_make_numbers_differ() -> None:
    label, _ = support_label("The limit is 1,000 requests per minute.", "The limit is 1000 requests per minute.")
    assert label == "supported"


def test_a_negated_claim_over_a_positive_quote_is_contradicted() -> None:
    label, reasons = support_label("The VPN does not require MFA.", "The VPN requires MFA.")
    assert label == "contradicted"
    assert "negation_mismatch" in reasons


def test_a_positive_claim_over_a_negated_quote_is_contradicted() -> None:
    label, _ = support_label("Guests can export reports.", "Guests can't export reports.")
    assert label == "contradicted"


def test_negation_in_an_unrelated_clause_of_the_quote_does_not_contradict() -> None:
    quote = "Existing subscriptions are not changed, but new subscriptions default to on."
    assert support_label("New subscriptions default to on.", quote)[0] == "supported"


def test_a_named_entity_missing_from_the_quote_caps_support() -> None:
    label, reasons = support_label("The VPN at Acme requires MFA.", "The VPN requires MFA.")
    assert label != "supported"
    assert "entity_missing:Acme" in reasons


def test_low_content_word_coverage_is_unsupported() -> None:
    label, _ = support_label("Quarterly revenue grew in the EMEA region.", "The office moved to a new building.")
    assert label == "unsupported"


def test_a_claim_summarising_part_of_a_quote_is_supported() -> None:
    assert support_label("Parallel apply cuts replication lag.", S3)[0] == "supported"


def test_a_claim_that_moves_the_other_way_than_its_quote_is_contradicted() -> None:
    label, reasons = support_label(
        "Metformin increases fibrosis in the lungs.", "Metformin reduces fibrosis in the lungs."
    )
    assert label == "contradicted"
    assert "direction_mismatch" in reasons


def test_an_acronym_written_out_in_the_quote_counts_as_the_same_entity() -> None:
    _, reasons = support_label("DCs present antigen to T cells.", "Dendritic cells present antigen to T cells.")
    assert not any(r.startswith("entity_missing") for r in reasons)


# The MiniLM embedder from the installed model files (no Django needed; loaded once for the module).
@pytest.fixture(scope="module")
def minilm():
    from retrieval.embedder import MiniLMOnnxEmbedder

    return MiniLMOnnxEmbedder(threads=1)


def test_with_embeddings_a_close_paraphrase_is_supported(minilm) -> None:
    claim_text, quote = (
        "Aspirin lowers the risk of heart attacks.",
        "Taking aspirin reduces the risk of myocardial infarction.",
    )
    assert support_label(claim_text, quote)[0] == "unsupported"  # too few shared words for the lexical check alone
    label, reasons = support_label(claim_text, quote, embedder=minilm)
    assert label == "supported"
    assert any(r.startswith("similarity=") for r in reasons)


def test_with_embeddings_the_seed_claim_is_still_not_supported(minilm) -> None:
    label, reasons = support_label("Parallel apply removes replication lag entirely.", "cuts replication lag a lot",
                                   embedder=minilm)  # fmt: skip
    assert label != "supported"
    assert "escalation:entirely" in reasons


def test_with_embeddings_a_missing_entity_and_a_flipped_direction_still_decide(minilm) -> None:
    assert support_label("The VPN at Acme requires MFA.", "The VPN requires MFA.", embedder=minilm)[0] != "supported"
    label, _ = support_label("Metformin increases fibrosis.", "Metformin reduces fibrosis.", embedder=minilm)
    assert label == "contradicted"


def test_with_embeddings_an_unrelated_quote_is_unsupported(minilm) -> None:
    label, _ = support_label("Quarterly revenue grew in EMEA.", "The office moved to a new building.", embedder=minilm)
    assert label == "unsupported"


def test_verify_claim_uses_the_embedder_it_is_given(minilm) -> None:
    c = claim("Parallel apply reduces replication lag for big transactions.", ("S3", S3))
    assert verify_claim(c, EVIDENCE, make_plan(), authorised_ids=ALL_IDS).support != "supported"
    result = verify_claim(c, EVIDENCE, make_plan(), authorised_ids=ALL_IDS, embedder=minilm)
    assert result.support == "supported" and result.method == "lexical-fallback" and result.kept


# --------------------------------------------------------------------------- verify_claim


def test_a_verbatim_claim_with_its_true_quote_is_kept() -> None:
    result = verify_claim(claim(S2, ("S2", S2)), EVIDENCE, make_plan(), authorised_ids=ALL_IDS)
    assert result.quote_ok and result.in_scope and result.support == "supported"
    assert result.method == "verbatim"
    assert result.kept


def test_a_fabricated_quote_fails_the_quote_check() -> None:
    c = claim("Parallel apply removes replication lag entirely.", ("S3", "removes replication lag entirely"))
    result = verify_claim(c, EVIDENCE, make_plan(), authorised_ids=ALL_IDS)
    assert not result.quote_ok
    assert "quote_not_found:S3" in result.reasons
    assert not result.kept


def test_a_quote_cited_to_the_wrong_evidence_id_fails() -> None:
    result = verify_claim(claim(S2, ("S1", S2)), EVIDENCE, make_plan(), authorised_ids=ALL_IDS)
    assert not result.quote_ok
    assert "quote_not_found:S1" in result.reasons


def test_an_unknown_evidence_id_fails() -> None:
    result = verify_claim(claim(S2, ("S9", S2)), EVIDENCE, make_plan(), authorised_ids=ALL_IDS)
    assert not result.quote_ok
    assert "unknown_evidence:S9" in result.reasons


def test_a_true_quote_from_unauthorised_evidence_fails() -> None:
    result = verify_claim(claim(S2, ("S2", S2)), EVIDENCE, make_plan(), authorised_ids={"S1", "S3"})
    assert not result.quote_ok
    assert "unauthorised_evidence:S2" in result.reasons
    assert not result.kept


def test_a_paraphrased_quote_fails_the_quote_check() -> None:
    c = claim("Existing subscriptions keep their setting.", ("S2", "Existing subscriptions keep their stored setting"))
    assert not verify_claim(c, EVIDENCE, make_plan(), authorised_ids=ALL_IDS).quote_ok


def test_the_seed_claim_passes_the_quote_check_but_fails_support() -> None:
    c = claim("Parallel apply removes replication lag entirely.", ("S3", "cuts replication lag a lot"))
    result = verify_claim(c, EVIDENCE, make_plan(), authorised_ids=ALL_IDS)
    assert result.quote_ok
    assert result.support != "supported"
    assert result.method == "lexical-fallback"
    assert not result.kept


def test_a_claim_without_citations_fails_the_quote_check() -> None:
    result = verify_claim(claim("Parallel apply is on."), EVIDENCE, make_plan(), authorised_ids=ALL_IDS)
    assert not result.quote_ok
    assert result.reasons == ("no_citations",)


def test_a_short_quote_still_matches_but_is_flagged() -> None:
    result = verify_claim(
        claim("Parallel apply cuts lag.", ("S3", "cuts")), EVIDENCE, make_plan(), authorised_ids=ALL_IDS
    )
    assert result.quote_ok
    assert "short_quote" in result.reasons


def test_support_is_the_weakest_label_across_citations() -> None:
    c = claim(S2, ("S2", S2), ("S3", S3))
    result = verify_claim(c, EVIDENCE, make_plan(), authorised_ids=ALL_IDS)
    assert result.quote_ok
    assert result.support == "unsupported"
    assert result.method == "lexical-fallback"


def test_evidence_updated_inside_the_time_window_is_in_scope() -> None:
    plan = make_plan(time=TimeScope(after=date(2025, 9, 1), before=date(2025, 10, 1), label="last month"))
    assert verify_claim(claim(S1, ("S1", S1)), EVIDENCE, plan, authorised_ids=ALL_IDS).in_scope


def test_evidence_updated_outside_the_time_window_is_out_of_scope() -> None:
    plan = make_plan(time=TimeScope(after=date(2025, 1, 1), label="after:2025-01-01"))
    result = verify_claim(claim(S3, ("S3", S3)), EVIDENCE, plan, authorised_ids=ALL_IDS)
    assert not result.in_scope
    assert "out_of_time_scope:S3" in result.reasons
    assert not result.kept


def test_the_window_end_is_exclusive() -> None:
    plan = make_plan(time=TimeScope(before=date(2025, 9, 25)))
    assert not verify_claim(claim(S1, ("S1", S1)), EVIDENCE, plan, authorised_ids=ALL_IDS).in_scope


def test_undated_evidence_is_out_of_scope_when_the_plan_has_a_window() -> None:
    evidence = {"U": make_evidence("U", S2)}
    plan = make_plan(time=TimeScope(after=date(2025, 1, 1)))
    result = verify_claim(claim(S2, ("U", S2)), evidence, plan, authorised_ids={"U"})
    assert not result.in_scope
    assert "undated" in result.reasons


def test_created_at_is_used_when_updated_at_is_missing() -> None:
    evidence = {"U": make_evidence("U", S2, created_at=datetime(2025, 6, 1, tzinfo=UTC))}
    plan = make_plan(time=TimeScope(after=date(2025, 1, 1)))
    assert verify_claim(claim(S2, ("U", S2)), evidence, plan, authorised_ids={"U"}).in_scope


def test_without_a_time_window_undated_evidence_is_in_scope() -> None:
    evidence = {"U": make_evidence("U", S2)}
    assert verify_claim(claim(S2, ("U", S2)), evidence, make_plan(), authorised_ids={"U"}).kept


# --------------------------------------------------------------------------- links

ALLOWED = ["https://docs.example.org/S1"]


def test_a_markdown_link_to_an_uncited_url_keeps_only_its_label() -> None:
    text, n = strip_unsupported_links("See [the notes](https://evil.example/x) for more.", ALLOWED)
    assert (text, n) == ("See the notes for more.", 1)


def test_a_markdown_link_to_a_cited_url_is_kept() -> None:
    original = "See [the notes](https://docs.example.org/S1) for more."
    assert strip_unsupported_links(original, ALLOWED) == (original, 0)


def test_a_bare_url_that_was_not_cited_is_removed_with_its_gap() -> None:
    text, n = strip_unsupported_links("Read https://evil.example/a?b=1 now. Or https://docs.example.org/S1.", ALLOWED)
    assert (text, n) == ("Read now. Or https://docs.example.org/S1.", 1)


def test_a_slack_style_link_keeps_its_label() -> None:
    text, n = strip_unsupported_links("Ping <https://evil.example/x|the runbook> or <https://evil.example/y>.", ALLOWED)
    assert (text, n) == ("Ping the runbook or.", 2)


def test_an_html_anchor_keeps_its_label_text() -> None:
    text, n = strip_unsupported_links('Open <a href="https://evil.example/x" target="_blank"><b>this</b></a>.', ALLOWED)
    assert (text, n) == ("Open this.", 1)


def test_a_disguised_link_whose_label_is_an_uncited_url_loses_both() -> None:
    text, n = strip_unsupported_links("Go to [https://evil.example/login](https://evil.example/steal).", ALLOWED)
    assert "evil.example" not in text
    assert n == 2


def test_a_disguised_link_showing_a_cited_url_keeps_only_the_honest_text() -> None:
    text, n = strip_unsupported_links("Go to [https://docs.example.org/S1](https://evil.example/steal).", ALLOWED)
    assert (text, n) == ("Go to https://docs.example.org/S1.", 1)


def test_text_without_links_is_unchanged() -> None:
    assert strip_unsupported_links("Release N defaults to on.", ALLOWED) == ("Release N defaults to on.", 0)


@pytest.mark.parametrize("url", ["https://docs.example.org/S1/", "https://docs.example.org/S1"])
def test_a_trailing_slash_does_not_change_whether_a_url_is_allowed(url: str) -> None:
    assert strip_unsupported_links(f"[notes]({url})", ALLOWED)[1] == 0


def test_the_verifier_identifies_its_release() -> None:
    release = verifier_release()
    assert set(release) == {"name", "version"}
    assert all(release.values())


def test_a_period_or_a_time_of_day_answers_a_when_question() -> None:
    from answers.verification import _HAS_DATE_RE, answer_type

    assert answer_type("When does Bluebird close?") == "date"
    for answer in ("Bluebird closes in the third quarter.", "It ships in Q3.", "The office opens at 9 am.",
                   "Reviews happen every spring.", "The deadline is March 15."):  # fmt: skip
        assert _HAS_DATE_RE.search(answer), answer
    assert not _HAS_DATE_RE.search("Bluebird is the merger code name.")


def test_a_when_question_about_a_case_is_answered_by_a_condition_not_a_date() -> None:
    ev = make_evidence("ZM", "GSA employees may participate in Zoom meetings hosted by external partners UNLESS they "
                             "are required to accept Zoom Terms of Service (TOS) or install software.")  # fmt: skip
    by_id = {"ZM": ev}

    def check(question: str):  # type: ignore[no-untyped-def]
        return verify_claim(claim(ev.text, (ev.id, ev.text)), by_id, make_plan(question), authorised_ids=set(by_id))

    assert check("When am I not allowed to join a Zoom meeting that an outside partner is hosting?").kept
    assert check("When is joining a partner's Zoom meeting allowed?").kept
    # Asked for a time, the same sentence (no date, no period) does not answer.
    outcome = check("When does the Zoom meeting that an outside partner is hosting start?")
    assert not outcome.relevant and "not_relevant:no_date_for_when" in outcome.reasons


def test_when_do_i_need_to_asks_for_a_time_and_when_do_i_need_asks_for_a_case() -> None:
    from answers.verification import answer_type

    assert answer_type("When do I need to submit my timesheet?") == "date"
    assert answer_type("When do I need an SF-182?") == ""
    assert answer_type("When don't I need an SF-182 approved to go to a conference?") == ""
    assert answer_type("When don’t I need an SF-182 approved to go to a conference?") == ""  # a typographic apostrophe


def test_a_resolved_follow_up_asks_for_the_kind_of_answer_its_last_question_asks_for() -> None:
    from answers.verification import answer_type

    assert answer_type("Can I take it intermittently: How much paid parental leave do I get?") == ""
    assert answer_type("When is it due: What form do I file for paid parental leave?") == "date"
    # A colon inside one question keeps the whole question.
    assert answer_type("Quick one: how much paid parental leave do I get?") == "number"


# --------------------------------------------------------------------------- versions the question names


def test_a_claim_about_another_service_than_the_one_asked_does_not_answer() -> None:
    api = make_evidence("API", "orders-api: runtime Foo 3.2, owner payments-platform, updated 2026-04-14.")
    worker = make_evidence("WRK", "orders-worker: runtime Foo 3.4, owner fulfilment, updated 2026-03-02.")
    by_id = {"API": api, "WRK": worker}

    def check(question: str, ev: EvidenceRecord):  # type: ignore[no-untyped-def]
        return verify_claim(claim(ev.text, (ev.id, ev.text)), by_id, make_plan(question), authorised_ids=set(by_id))

    assert check("Who owns orders-api?", api).relevant
    about_worker = check("Who owns orders-api?", worker)
    assert not about_worker.relevant
    assert "not_relevant:identifier_not_mentioned:orders-api" in about_worker.reasons
    # A name the question sets aside is not asked for; neither is an everyday compound ("full-time").
    assert check("Which service is not owned by payments-platform?", worker).relevant
    assert check("Who owns the full-time orders-worker service?", worker).relevant


def test_a_name_the_source_writes_by_its_initials_is_mentioned() -> None:
    ev = make_evidence("twn", "GSA's TWN Employer Code is 10536")
    result = verify_claim(claim(ev.text, ("twn", ev.text)), {"twn": ev},
                          make_plan("What's GSA's employer code for The Work Number?"), authorised_ids={"twn"})  # fmt: skip
    assert result.relevant, result.reasons


def test_a_claim_about_another_version_than_the_one_asked_does_not_answer() -> None:
    ev = make_evidence("R18", "The subscription option lr_example_parallel_apply now defaults to on in ExampleDB 18.")
    c = claim(ev.text, ("R18", ev.text))
    asked_12 = verify_claim(c, {"R18": ev}, make_plan("What is the default of lr_example_parallel_apply in ExampleDB 12?"),
                            authorised_ids={"R18"})  # fmt: skip
    assert not asked_12.relevant and "not_relevant:version_not_mentioned:ExampleDB 12" in asked_12.reasons
    asked_18 = verify_claim(c, {"R18": ev}, make_plan("What is the default of lr_example_parallel_apply in ExampleDB 18?"),
                            authorised_ids={"R18"})  # fmt: skip
    assert asked_18.relevant, asked_18.reasons
    # Dates, quarters and sections are not versions.
    dated = verify_claim(c, {"R18": ev}, make_plan("What changed on July 1, 2023 in Q2 2023?"), authorised_ids={"R18"})
    assert not any("version_not_mentioned" in r for r in dated.reasons)


def test_a_follow_ups_claim_may_answer_its_last_question_alone() -> None:
    # The page title names the office, as the handbook's "San Francisco" page does.
    ev = make_evidence("San Francisco", "BART fares are based on distance. SFO to Civic Center Station is $8.65.")
    resolved = ("How much is that BART fare: I'm flying into SFO to visit the San Francisco office. What's the "
                "easiest way to get there by public transit?")  # fmt: skip
    result = verify_claim(
        claim(ev.text, ("San Francisco", ev.text)),
        {"San Francisco": ev},
        make_plan(resolved),
        authorised_ids={"San Francisco"},
    )
    assert result.relevant, result.reasons
    # The same words asked as one question demand more of its attribute words than the claim has.
    whole = verify_claim(claim(ev.text, ("San Francisco", ev.text)), {"San Francisco": ev}, make_plan(resolved.replace(":", ".")),
                         authorised_ids={"San Francisco"})  # fmt: skip
    assert "not_relevant:attribute_not_addressed" in whole.reasons


def test_words_for_the_figure_itself_are_not_what_the_question_asks_about() -> None:
    text = ("Included in other income (expense), net is a valuation loss of $(467) million in Q1 2023 from our "
            "equity investment in Rivian.")  # fmt: skip
    ev = make_evidence("AMZN", text)
    question = "How big was the valuation loss on the Rivian stake? I need this year's number, not last year's one."
    result = verify_claim(claim(text, ("AMZN", text)), {"AMZN": ev}, make_plan(question), authorised_ids={"AMZN"})
    assert result.relevant, result.reasons


def test_how_far_in_advance_asks_for_a_lead_time_and_its_words_are_the_questions_form() -> None:
    from answers.lexicon import question_form_stems
    from answers.verification import answer_type

    question = "How far in advance must I email to get captioning?"
    assert answer_type(question) == "number"
    assert answer_type("How far ahead should I start the offboarding process?") == "number"
    assert answer_type("How soon will the badge office call me back?") == "number"
    # "advance" is how the answer is measured, not a word it must repeat: "at least 12 hours prior to the meeting".
    assert {"far", "advanc"} <= question_form_stems(question)
    assert answer_type("How do I email the captioning service?") == ""


def test_a_lead_time_spelled_out_in_the_teens_answers_how_far_ahead() -> None:
    ev = make_evidence("T", "Employees book travel through the travel desk at least fourteen days before departure.")
    outcome = verify_claim(claim(ev.text, (ev.id, ev.text)), {"T": ev}, make_plan("How far ahead must I book travel?"),
                           authorised_ids={"T"})  # fmt: skip
    assert outcome.kept, outcome.reasons
