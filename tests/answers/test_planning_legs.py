"""The retrieval legs a question is searched with (answers/planning.py)."""

from __future__ import annotations

from datetime import UTC, datetime

from answers.planning import plan_question

AS_OF = datetime(2026, 1, 1, tzinfo=UTC)


def test_a_resolved_follow_up_is_also_searched_with_its_last_two_questions_only() -> None:
    plan = plan_question(
        "What if I land at Oakland instead: How much is that BART fare: I'm flying into SFO to visit the San "
        "Francisco office. What's the easiest way to get there by public transit?",
        AS_OF,
    )
    assert plan.retrieval_queries[-1] == "land Oakland instead BART fare"
    assert [r.source for r in plan.rewrites] == ["keywords", "latest_turns"]


def test_a_question_of_its_own_gets_no_latest_turns_leg() -> None:
    plan = plan_question("How much is the BART fare from SFO to Civic Center?", AS_OF)
    assert "latest_turns" not in [r.source for r in plan.rewrites]
    # A two-turn follow-up's last two questions are the whole question: no second leg of the same words.
    two = plan_question("Can I take it intermittently: How much paid parental leave do I get?", AS_OF)
    assert "latest_turns" not in [r.source for r in two.rewrites]
