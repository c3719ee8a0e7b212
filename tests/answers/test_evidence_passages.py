"""Evidence passages: what the writer is handed from a retrieved chunk."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

from answers.contracts import ParsedQuery, QueryPlan
from answers.evidence import build_evidence
from retrieval.search import RankedChunk

LEAVE_TYPES = (
    "For jury duty and other court-related leave, use Court Leave.\n\n"
    "If you are running out of leave hours, you can request:\n\n"
    "Advanced Annual Leave\n\n"
    "Advanced Sick Leave\n\n"
    "Donated hours from the Voluntary Leave Transfer Program\n\n"
    "Bereavement leave is covered on its own page."
)


def chunk(text: str) -> RankedChunk:
    return RankedChunk(
        chunk_id=1, document_id=7, rrf=0.03, ranks={"lexical": 1}, text=text, heading="", char_start=0,
        char_end=len(text), title="Leave types", url="https://wiki.example/leave", canonical_url="https://wiki.example/leave",
        source_system="confluence", container="HANDBOOK", updated_at=datetime(2025, 1, 1, tzinfo=UTC), created_at=None,
        version_label="", authority_tier=2, snapshot_sha256="0" * 64, fingerprint="f", simhash=0,
    )  # fmt: skip


def plan(question: str, text: str | None = None, exclude: tuple[str, ...] = ()) -> QueryPlan:
    parsed = ParsedQuery(original=question, text=text or question, exclude=exclude)
    return QueryPlan(parsed=parsed, as_of=datetime(2025, 10, 1, tzinfo=UTC), retrieval_queries=(question,))


def test_a_list_reaches_the_writer_with_its_introduction() -> None:
    records, _trace = build_evidence(plan("What can I request when running out of leave hours?"), [chunk(LEAVE_TYPES)])

    passage = records[0].text
    assert "If you are running out of leave hours, you can request:" in passage
    assert "Donated hours from the Voluntary Leave Transfer Program" in passage
    assert LEAVE_TYPES[records[0].char_start : records[0].char_end] == passage


def test_a_list_naming_an_excluded_item_keeps_the_items_that_are_not_excluded() -> None:
    question = "If I run out of leave, what can I request other than advanced annual or advanced sick leave?"
    records, _ = build_evidence(
        plan(question, "If I run out of leave, what can I request?", ("advanced annual", "advanced sick leave")),
        [chunk(LEAVE_TYPES)],
    )

    assert any("Donated hours" in r.text for r in records)


def test_a_list_whose_introduction_names_the_excluded_term_is_left_out() -> None:
    records, _ = build_evidence(
        plan("what can I use besides leave hours", "what can I use", ("leave hours",)), [chunk(LEAVE_TYPES)]
    )

    assert not any("Donated hours" in r.text for r in records)


def test_a_sentence_naming_the_excluded_term_among_others_stays_in_the_passage() -> None:
    text = (
        "Your supervisor signs the form first.\n\n"
        "Your supervisor and the HR specialist review every term extension request."
    )
    records, _ = build_evidence(
        plan("Besides my supervisor, who reviews a term extension request?", "who reviews a term extension request",
             ("supervisor",)),
        [chunk(text)],
    )  # fmt: skip

    passages = " ".join(r.text for r in records)
    assert "the HR specialist review every term extension request" in passages
    assert "signs the form first" not in passages


def test_a_sentence_that_reads_only_with_the_one_before_it_brings_that_one_into_the_passage() -> None:
    text = (
        "Book leave ahead of time.\n\n"
        "Reminder: HR Links is separate from Tock. If you're taking time off, you'll need to make sure you're "
        "accounted for in both systems."
    )
    records, _ = build_evidence(
        plan("Apart from HR Links, where else do I have to account for my time off?",
             "where else do I have to account for my time off", ("HR Links",)),
        [chunk(text)],
    )  # fmt: skip

    passages = " ".join(r.text for r in records)
    # "Reminder: …" shares no word with the question; without it the passage names only "both systems".
    assert "HR Links is separate from Tock. If you're taking time off" in passages
    assert "Book leave ahead of time" not in passages


def test_a_resolved_follow_up_gets_the_passage_about_the_case_it_asked_last() -> None:
    sfo = (
        "From SFO\n\nPublic transit from SFO to the San Francisco office is cheap, fairly quick, and convenient. "
        "Take the AirTrain from your terminal to the SFO BART station."
    )
    oak = "From Oakland\n\nAt Oakland, change to the BART system train at Coliseum station."
    question = (
        "What if I land at Oakland instead: I'm flying into SFO to visit the San Francisco office. What's the easiest "
        "way to get there by public transit?"
    )
    records, _ = build_evidence(
        plan(question), [chunk(sfo), dataclasses.replace(chunk(oak), chunk_id=2, document_id=8)]
    )

    # Every word of the earlier question is in the SFO passage; the one asked last is about Oakland.
    assert "Coliseum station" in records[0].text


def test_a_negated_question_gets_the_passage_that_says_what_is_not_so() -> None:
    text = (
        "Your Annual Leave will be paid out when you leave TTS.\n\nRead the FAQ.\n\n"
        "Your comp time will be paid out when you leave TTS.\n\nRead the FAQ.\n\n"
        "Your Sick Leave will not be paid out when you leave TTS."
    )
    question = "Which of my leave balances won't be paid out when I leave TTS?"
    # Room for one passage: the one that answers the negated question.
    records, _ = build_evidence(plan(question), [chunk(text)], token_budget=14)

    assert [r.text for r in records] == ["Your Sick Leave will not be paid out when you leave TTS."]


def test_the_figure_a_how_long_question_asks_for_joins_the_passage_though_it_repeats_none_of_its_words() -> None:
    text = (
        "Inactive repositories are automatically archived by the TTS Tech Operations with ghad. A repository is "
        "considered inactive if there haven't been any new commits in a while. The current default is 90 days. "
        "Maintainers can add the MAINTAINED topic to exempt a repository."
    )
    question = "How long does a GitHub repo have to sit inactive before it is archived?"
    records, _ = build_evidence(plan(question), [chunk(text)])

    passages = " ".join(r.text for r in records)
    assert "The current default is 90 days." in passages
    assert "MAINTAINED topic" not in passages
    # A question that asks for no figure does not take it along.
    records, _ = build_evidence(plan("Which repositories are considered inactive?"), [chunk(text)])
    assert "The current default is 90 days." not in " ".join(r.text for r in records)


def test_a_which_question_takes_in_the_next_sentence_when_the_passage_names_nothing() -> None:
    text = (
        "The team asks everyone to use a password manager for their passwords. A password manager keeps your "
        "passwords safe. A password manager also fills in your passwords for you. We recommend using KeePassXC "
        "which is open source and runs on Windows, MacOS and Linux. Your password manager can also keep the answers "
        "to security questions."
    )
    # Seven other pages about password managers that "recommend" too: each page then gets two passages, not
    # six, and the word alone does not lift the sentence naming the product.
    others = [
        dataclasses.replace(chunk(f"We recommend that your password manager stores the passwords of system {n}."),
                            chunk_id=n, document_id=100 + n, title=f"System {n}")
        for n in range(1, 8)
    ]  # fmt: skip
    records, _ = build_evidence(plan("Which password manager does the team recommend?"), [chunk(text), *others])

    # The passage about password managers names none; the sentence after it shares one word and names one.
    assert any("We recommend using KeePassXC" in r.text for r in records), [r.text for r in records]


def test_a_passage_carries_the_headings_it_sits_under_when_its_window_starts_below_them() -> None:
    text = (
        "Administrative Leave is called Other paid absences in HR Links.\n\n"
        "Voting and poll volunteering\n\n"
        "You can receive Administrative Leave in order to vote, register to vote, and participate in early voting. "
        "You can receive up to 4 hours for each election event.\n\n"
        "Serving as a poll worker is covered by a different rule. It needs a supervisor's approval first."
    )
    records, _ = build_evidence(
        plan("How many hours can I get for each election event?"),
        [dataclasses.replace(chunk(text), heading="Administrative Leave")],
    )

    hours = next(r for r in records if "4 hours" in r.text)
    assert "Voting and poll volunteering" not in hours.text
    assert hours.heading == "Administrative Leave / Voting and poll volunteering"


def test_a_when_question_gets_the_passage_with_the_weekday_or_time_it_asks_for() -> None:
    question = "When do I send in my timecard each week?"
    for due in ("by Friday", "by the end of the day", "by 3:30 PM Eastern"):
        text = (
            "Send in your timecard each week to your supervisor.\n\nRead the FAQ.\n\n"
            f"Send in your timecard each week {due}.\n\nRead the FAQ."
        )
        # Room for one passage: both share the question's words, and the one saying when answers it.
        records, _ = build_evidence(plan(question), [chunk(text)], token_budget=14)

        assert [r.text for r in records] == [f"Send in your timecard each week {due}."], due
