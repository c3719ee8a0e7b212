"""Constraint suite: rewrites never lose a negative, scope or time constraint.

Each case is a question with constraints; the plan must (1) keep the original
string as the first retrieval leg, (2) enforce exclusions/phrases/time/sources as
filters, and (3) only run rewritten queries that pass ``validate_rewrite`` --
including when a hostile rewriter adds the excluded term back and drops the rest.
"""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from answers.planning import plan_question
from answers.query_parser import validate_rewrite

AS_OF = datetime(2026, 10, 28, 12, tzinfo=UTC)
ALIASES = {"PG": "PostgreSQL", "Postgres": "PostgreSQL", "k8s": "Kubernetes"}

# (question, excluded terms, scope terms, time kind).  Time kind: "updated" = an explicit
# after:/before: window on the updated date (a filter); "period" = the period the content
# describes (resolved against document metadata, never a filter on updated dates); "words" =
# other time words, kept in the plan's trace but applied as nothing; "" = none.
CASES = [
    (
        "latest PostgreSQL logical replication changes that affect subscribers, not publishers",
        ["publishers"],
        ["subscribers"],
        "",
    ),
    ("logical replication for subscribers but not publishers", ["publishers"], ["subscribers"], ""),
    ("PG replication settings, not publishers", ["publishers"], [], ""),
    ("Postgres vacuum tuning -autovacuum", ["autovacuum"], [], ""),
    ("expense policy excluding contractors", ["contractors"], [], ""),
    ("VPN setup without WireGuard", ["WireGuard"], [], ""),
    ("onboarding checklist except interns", ["interns"], [], ""),
    ("travel rules for employees rather than contractors", ["contractors"], ["employees"], ""),
    ("release notes for the EU region, not the US region", ["US region"], ["EU region"], ""),
    ("k8s upgrade guide, not for the managed clusters", ["managed clusters"], [], ""),
    ("security incidents last quarter", [], [], "period"),
    ("security incidents last quarter -phishing", ["phishing"], [], "period"),
    ("deploy freezes this year, not holidays", ["holidays"], [], "words"),
    ("outages in 2025 -database", ["database"], [], "period"),
    ("on-call changes after:2026-01-01", [], [], "updated"),
    ("budget changes before:2026-06-01 -travel", ["travel"], [], "updated"),
    ("hiring plan since March 2026", [], [], "words"),
    ("postmortems in the last 30 days, not drills", ["drills"], [], "words"),
    ("incidents in Q3 2026 excluding staging", ["staging"], [], "period"),
    ('"per diem rate" for conferences -international', ["international"], [], ""),
    ('"data retention" policy for logs, not backups', ["backups"], ["logs"], ""),
    ("password rules for admins and not guests", ["guests"], ["admins"], ""),
    ("Kubernetes ingress timeouts -nginx", ["nginx"], [], ""),
    ("SSO setup for Slack, not Confluence", ["Confluence"], ["Slack"], ""),
    ("laptop refresh policy other than MacBooks", ["MacBooks"], [], ""),
    ("retention rules for invoices instead of receipts", ["receipts"], ["invoices"], ""),
    ("PostgreSQL subscriber conflicts, not publishers, last year", ["publishers"], ["conflicts"], "period"),
    ("backup schedule source:confluence -weekly", ["weekly"], [], ""),
    ("holiday calendar space:HR this year", [], [], "words"),
    ("latest API rate limits, not the beta endpoints", ["beta endpoints"], [], ""),
    ("parental leave for managers but not executives", ["executives"], ["managers"], ""),
    ("incident severity levels -deprecated today", ["deprecated"], [], "words"),
    # Real phrasing (issue 14): the negative must survive however it is written.
    ("vacation leave, not annual leave", ["annual leave"], ["vacation leave"], ""),
    ("How much vacation leave do I get, not annual leave?", ["annual leave"], ["vacation leave"], ""),
    ("vacation leave not annual leave", ["annual leave"], ["vacation leave"], ""),
    ("vacation leave (not annual leave)", ["annual leave"], ["vacation leave"], ""),
    ("vacation leave \u2014 not annual leave", ["annual leave"], ["vacation leave"], ""),
    ("holidays other than federal holidays", ["federal holidays"], [], ""),
    ("What leave can I take, not including sick leave?", ["sick leave"], [], ""),
    ("Which laptops can I get other than a MacBook?", ["MacBook"], [], ""),
    ("remote work without a stipend", ["stipend"], [], ""),
    ("benefits for employees, not interns or contractors", ["interns", "contractors"], ["employees"], ""),
    ("expense rules excluding international travel and meals", ["international travel", "meals"], [], ""),
    ("What is the travel policy for employees not contractors?", ["contractors"], ["employees"], ""),
    ("Apple net sales in Q2 2023, excluding services", ["services"], [], "period"),
    ("NVIDIA revenue other than data center for the latest quarter", ["data center"], [], "period"),
]


def _hostile(parsed):  # a keyword-density rewriter that re-adds what the user excluded
    excluded = " ".join(parsed.exclude)
    return [("hostile", f"{excluded} changes release notes"), ("hostile-empty", "")]


@pytest.mark.parametrize("question,exclude,scope,time_kind", CASES, ids=[c[0][:40] for c in CASES])
@pytest.mark.parametrize("rewriter", [None, _hostile], ids=["default", "hostile"])
def test_it_keeps_every_constraint_through_rewriting(question, exclude, scope, time_kind, rewriter) -> None:
    plan = plan_question(question, AS_OF, aliases=ALIASES, rewriter=rewriter)
    parsed = plan.parsed
    assert plan.retrieval_queries[0] == question
    assert [x.casefold() for x in parsed.exclude] == [x.casefold() for x in exclude]
    assert plan.filters["exclude"] == list(parsed.exclude)
    for term in scope:
        assert term.casefold() in [s.casefold() for s in parsed.scope_terms]
    if time_kind == "updated":
        assert plan.filters["after"] or plan.filters["before"]
        assert "time" in plan.enforced_as_filters
    else:
        # Time words never become a window on the documents' updated date.
        assert plan.filters["after"] is None and plan.filters["before"] is None
        assert "time" not in plan.enforced_as_filters
    if time_kind == "period":
        assert parsed.periods and "periods" in plan.enforced_as_filters
    elif time_kind == "words":
        assert parsed.time is not None and not parsed.periods
    for term in exclude:  # the excluded words are gone from the positive text
        assert term.casefold() not in parsed.text.casefold()
    if exclude:
        assert "exclusions" in plan.enforced_as_filters
    for q in plan.retrieval_queries[1:]:
        assert validate_rewrite(parsed, q).ok, (q, validate_rewrite(parsed, q))
    if rewriter is not None:
        hostile = [r for r in plan.rewrites if r.source == "hostile"]
        if exclude:
            assert hostile[0].violations, hostile
        assert all(r.used is None or validate_rewrite(parsed, r.used).ok for r in plan.rewrites)


def test_the_seed_case_drops_publishers_from_every_rewrite_but_keeps_subscribers() -> None:
    plan = plan_question(
        "latest PostgreSQL logical replication changes that affect subscribers, not publishers", AS_OF,
        rewriter=lambda p: [("model", "postgresql logical replication publisher subscriber changes release notes")],
    )  # fmt: skip
    rec = plan.rewrites[0]
    assert "excluded:publishers" in rec.violations
    assert rec.used is not None and "publisher" not in rec.used.lower() and "subscriber" in rec.used.lower()
    assert plan.needs_current_version


def test_aliases_become_canonical_entities_and_a_rewrite_must_keep_them() -> None:
    plan = plan_question("PG logical replication slots", AS_OF, aliases=ALIASES)
    assert ("PG", "PostgreSQL") in plan.parsed.entities
    assert any("PostgreSQL" in q for q in plan.retrieval_queries)
    assert "missing_entity:PostgreSQL" in validate_rewrite(plan.parsed, "logical replication slots").violations


def test_dependent_questions_are_decomposed_into_hops_with_a_date_comparison() -> None:
    plan = plan_question("Will the framework behind orders-api still receive security fixes on 2026-09-01?", AS_OF)
    assert plan.intent == "multi_hop"
    assert [h.query for h in plan.hops] == ["framework orders-api", "{value} receive security fixes"]
    assert plan.comparison is not None and plan.comparison.value == date(2026, 9, 1)
    assert plan_question("Who is the owner of orders-api?", AS_OF).intent == "answer"


def test_navigational_queries_are_recognised() -> None:
    assert plan_question("go to the travel page", AS_OF).intent == "navigational"
    assert plan_question("VPN setup page", AS_OF).intent == "navigational"
    assert plan_question("How do I set up the VPN?", AS_OF).intent == "answer"
