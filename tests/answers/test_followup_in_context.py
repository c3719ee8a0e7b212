"""A follow-up asked as a full question is answered as asked first, and in the conversation's context only when
that finds no answer; an answer in context that repeats the last one does not count (answers/followups.py)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from answers.followups import (
    ConversationState,
    in_context,
    off_the_conversation,
    says_something_new_from_its_documents,
)
from tests.support import client_for, enqueue, ingest_inline, make_doc, source_for

PARKING = (
    "Employees apply for a garage parking permit through the facilities portal. "
    "A garage parking permit costs 40 dollars per month and is deducted from your pay. "
    "Permits are renewed every January."
)
BIKES = "Bicycles are kept in the basement cage next to the loading dock. The cage is open from 7 am to 7 pm."


@pytest.fixture
def corpus(cast):
    src = source_for(cast.tenant_a)
    for ext, text, title in [("parking", PARKING, "Garage parking"), ("bikes", BIKES, "Bicycle storage")]:
        enqueue(cast.tenant_a, src, make_doc(ext, text, [["public:tenant"]], title=title))
    ingest_inline(cast.tenant_a.pk)
    return cast


def ask(c: Any, question: str, cid: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"question": question} | ({"conversation_id": cid} if cid else {})
    r = c.post("/api/v1/answers", body, format="json")
    assert r.status_code == 200, r.content
    return r.json()


def after(question: str, claims: list[str] | None = None) -> ConversationState:
    return ConversationState(question=question, original=question, plan={}, filters={}, evidence=[],
                             fingerprint="f", acl_version=1, index_version=1, claims=claims or [])  # fmt: skip


def test_a_standalone_follow_up_is_read_in_context_only_when_short_and_naming_nothing_of_its_own() -> None:
    previous = after("How do I apply for a garage parking permit?")
    retry = in_context(previous, "My manager says I should get one too. How much will that set me back each month?")
    assert retry is not None and retry.method == "context"
    assert retry.question == ("My manager says I should get one too. How much will that set me back each month: "
                              "How do I apply for a garage parking permit?")  # fmt: skip
    assert in_context(None, "How much will that set me back each month?") is None
    # A turn naming a company of its own asks about that company, not the conversation's subject.
    assert in_context(previous, "So how much did Apple spend on research and development in that quarter?") is None
    long_turn = " ".join(["word"] * 25) + "?"
    assert in_context(previous, long_turn) is None


def test_a_follow_up_that_finds_nothing_as_asked_is_answered_in_the_conversations_context(corpus) -> None:
    c = client_for(corpus.tokens["bob"])
    first = ask(c, "How do I apply for a garage parking permit?")
    assert "facilities portal" in str(first["answer"]["claims"]), first["answer"]
    question = "My manager says I should get one too. How much will that set me back each month?"
    alone = ask(c, question)
    assert alone["answer"]["abstention"], alone["answer"]  # asked on its own it does not say what "one" is
    second = ask(c, question, first["conversation_id"])
    fu = second["trace"]["followup"]
    assert fu["is_followup"] and fu["resolution"] == "context" and fu["in_context"] == "answered", fu
    assert fu["resolved_question"].endswith(": How do I apply for a garage parking permit?")
    assert not second["answer"]["abstention"], second["answer"]
    assert "40 dollars per month" in str(second["answer"]["claims"])


def test_an_answer_in_context_that_only_repeats_the_last_one_is_not_given(corpus) -> None:
    c = client_for(corpus.tokens["bob"])
    first = ask(c, "How do I apply for a garage parking permit?")
    said = [claim["text"] for claim in first["answer"]["claims"]]
    assert said and "facilities portal" in str(said)
    second = ask(c, "Would the payroll office withhold any taxes on that?", first["conversation_id"])
    assert second["answer"]["abstention"], second["answer"]
    fu = second["trace"]["followup"]
    assert fu["resolution"] == "standalone" and fu["in_context"] == "repeats the last answer", fu
    assert not second["answer"]["claims"]


def response(*claims: tuple[str, int]) -> dict[str, Any]:
    """An answer as the API sends it: each claim cites one evidence record of the given document."""
    return {
        "answer": {"abstention": None, "claims": [
            {"text": text, "citations": [{"evidence_id": f"E{doc}"}]} for text, doc in claims
        ]},
        "evidence": [{"id": f"E{doc}", "document_id": doc} for _text, doc in claims],
    }  # fmt: skip


def test_an_answer_citing_none_of_the_last_answers_documents_is_off_the_conversation() -> None:
    previous = dataclasses.replace(after("Where do I request a Mural account?", ["Post in #admins-mural."]),
                                   cited_documents=[7])  # fmt: skip
    elsewhere = response(("If what you want to use isn't there, ask #infrastructure.", 3))
    assert off_the_conversation(elsewhere, previous)
    assert not off_the_conversation(response(("Request only Guest access if you use Mural irregularly.", 7)), previous)
    # After an abstention the conversation has no documents to be off.
    assert not off_the_conversation(elsewhere, dataclasses.replace(previous, cited_documents=[]))
    assert not off_the_conversation({"answer": {"abstention": {"reason": "weak_evidence"}, "claims": []}}, previous)


def test_after_an_abstention_the_conversation_is_about_the_documents_its_evidence_came_from() -> None:
    abstained = dataclasses.replace(after("How do I get the Xcode command line tools on my MacBook?"),
                                    evidence=[{"id": "E7", "document_id": 7}, {"id": "E8", "document_id": 8}])  # fmt: skip
    elsewhere = response(("You can view the Open Opportunities listings at any time.", 3))
    assert off_the_conversation(elsewhere, abstained)
    here = response(("XCode command line tools can be installed or upgraded through Self Service.", 7))
    assert not off_the_conversation(here, abstained)
    assert says_something_new_from_its_documents(here, abstained)
    assert not says_something_new_from_its_documents(elsewhere, abstained)


def test_an_answer_in_context_counts_only_for_a_new_claim_from_the_last_answers_documents() -> None:
    previous = dataclasses.replace(after("Where do I request a Mural account?", ["Post in #admins-mural."]),
                                   cited_documents=[7])  # fmt: skip
    new_here = response(("Request only Guest access if you use Mural irregularly.", 7))
    assert says_something_new_from_its_documents(new_here, previous)
    # A repeat from the conversation's page beside a new sentence from another page says nothing new about it.
    repeat_and_elsewhere = response(("Post in #admins-mural.", 7), ("Ask #infrastructure.", 3))
    assert not says_something_new_from_its_documents(repeat_and_elsewhere, previous)
