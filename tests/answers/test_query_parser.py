"""Deterministic query parsing and the rewrite validator (answers/query_parser.py)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime

import pytest

from answers.contracts import ParsedQuery, TimeScope
from answers.query_parser import (
    QueryError,
    RewriteCheck,
    constraints_enforced_as_filters,
    parse_query,
    validate_rewrite,
)

AS_OF = datetime(2026, 11, 30, 15, 30, tzinfo=UTC)  # a Monday in calendar Q4
ALIASES = {"pg": "postgresql", "postgres": "postgresql", "k8s": "kubernetes"}
SEED = "latest PostgreSQL logical replication changes that affect subscribers, not publishers"


def parse(raw: str, as_of: datetime = AS_OF) -> ParsedQuery:
    return parse_query(raw, as_of, ALIASES)


# --------------------------------------------------------------------------- constraint table


@dataclass(frozen=True)
class Case:
    query: str
    exclude: tuple[str, ...] = ()
    scope: tuple[str, ...] = ()
    time: tuple[date | None, date | None] | None = None
    phrases: tuple[str, ...] = ()
    latest: bool = False
    sources: tuple[str, ...] = ()
    containers: tuple[str, ...] = ()


D = date
CASES = [
    Case(SEED, exclude=("publishers",), scope=("subscribers",), latest=True),
    Case(
        "What changed for subscribers but not publishers last quarter?",
        exclude=("publishers",),
        scope=("subscribers",),
        time=(D(2026, 7, 1), D(2026, 10, 1)),
    ),
    Case(
        "replication slot docs for subscribers rather than publishers",
        exclude=("publishers",),
        scope=("subscribers",),
    ),
    Case(
        "EU region, not the US region, this quarter",
        exclude=("US region",),
        scope=("EU region",),
        time=(D(2026, 10, 1), D(2027, 1, 1)),
    ),
    Case(
        "Not publishers: what changed in Q3 2023?",
        exclude=("publishers",),
        time=(D(2023, 7, 1), D(2023, 10, 1)),
    ),
    Case("onboarding checklist excluding contractors", exclude=("contractors",)),
    Case(
        "Besides paid parental leave and the VLTP, which other form has a Docusign template?",
        exclude=("paid parental leave", "VLTP"),
    ),
    Case("besides Confluence, where are runbooks kept?", exclude=("Confluence",)),
    Case("all regions except for the EU since March 2024", exclude=("EU",), time=(D(2024, 3, 1), None)),
    Case("expense policy except travel in 2023", exclude=("travel",), time=(D(2023, 1, 1), D(2024, 1, 1))),
    Case(
        "deploy guide -staging after:2024-03 before:2025",
        exclude=("staging",),
        time=(D(2024, 3, 1), D(2025, 1, 1)),
    ),
    Case(
        'incident review -"root cause" last month',
        exclude=("root cause",),
        time=(D(2026, 10, 1), D(2026, 11, 1)),
    ),
    Case(
        "vacation policy for employees and not interns this year",
        exclude=("interns",),
        scope=("employees",),
        time=(D(2026, 1, 1), D(2027, 1, 1)),
    ),
    Case(
        'runbooks, not "draft runbooks", source:confluence',
        exclude=("draft runbooks",),
        scope=("runbooks",),
        sources=("confluence",),
    ),
    Case("SSO setup without Okta last 30 days", exclude=("Okta",), time=(D(2026, 10, 31), D(2026, 12, 1))),
    Case(
        "consumer alerts (not producer alerts) in the last 2 weeks",
        exclude=("producer alerts",),
        scope=("consumer alerts",),
        time=(D(2026, 11, 16), D(2026, 12, 1)),
    ),
    Case("SOC 2 evidence, excluding screenshots, newest first", exclude=("screenshots",), latest=True),
    Case("security review checklist without the legal sign-off", exclude=("legal sign-off",)),
    Case("on-call handbook for SREs, but not for managers", exclude=("managers",), scope=("SREs",)),
    Case("backup retention policy other than S3 before:2024-06-01", exclude=("S3",), time=(None, D(2024, 6, 1))),
    Case(
        "release notes from yesterday, not drafts",
        exclude=("drafts",),
        time=(D(2026, 11, 29), D(2026, 11, 30)),
    ),
    Case(
        "current on-call rotation channel:#SRE-oncall not including weekends",
        exclude=("weekends",),
        latest=True,
        containers=("channel:sre-oncall",),
    ),
    Case(
        "Q3 2023 board deck, not the Q2 deck",
        exclude=("Q2 deck",),
        scope=("board deck",),
        time=(D(2023, 7, 1), D(2023, 10, 1)),
    ),
    Case("Postgres upgrade runbook instead of MySQL", exclude=("MySQL",), scope=("runbook",)),
    Case(
        "travel reimbursement, except international trips, in 2025",
        exclude=("international trips",),
        time=(D(2025, 1, 1), D(2026, 1, 1)),
    ),
    Case("API rate limits for v2, not v1, space:ENG", exclude=("v1",), scope=("v2",), containers=("space:ENG",)),
    Case(
        "status of the migration last 3 months -staging -qa",
        exclude=("staging", "qa"),
        time=(D(2026, 8, 30), D(2026, 12, 1)),
    ),
    Case(
        "most recent pricing sheet excluding discounts site:sales",
        exclude=("discounts",),
        latest=True,
        containers=("site:sales",),
    ),
    Case(
        "laptop policy, without BYOD, source:sharepoint source:upload",
        exclude=("BYOD",),
        sources=("sharepoint", "upload"),
    ),
    Case(
        "support escalations today but not P3 tickets",
        exclude=("P3 tickets",),
        time=(D(2026, 11, 30), D(2026, 12, 1)),
    ),
    Case(
        "quarterly OKRs for the data team, not marketing, last year",
        exclude=("marketing",),
        scope=("team",),
        time=(D(2025, 1, 1), D(2026, 1, 1)),
    ),
    Case(
        'up to date "incident severity" matrix, not the 2022 version',
        exclude=("2022 version",),
        scope=("matrix",),
        phrases=("incident severity",),
        latest=True,
    ),
    Case(
        "logical replication changes for subscribers, excluding publishers, since 2024",
        exclude=("publishers",),
        time=(D(2024, 1, 1), None),
    ),
    Case(
        "subscribers (not publishers) today",
        exclude=("publishers",),
        scope=("subscribers",),
        time=(D(2026, 11, 30), D(2026, 12, 1)),
    ),
    Case("k8s ingress docs, not “service mesh”", exclude=("service mesh",), scope=("docs",)),
    Case(
        "I'm not using a password manager like KeePassXC. Where should I save my signing key?",
        exclude=("password manager", "KeePassXC"),
    ),
    Case("We don't use Slack. How do we share files with partners?", exclude=("Slack",)),
    Case("I want to preview my edits, but I don't want to use Docker. What's the other option?", exclude=("Docker",)),
    Case("We do not want to use Slack for this. How else can we reach partners?", exclude=("Slack",)),
    Case("I don't want to use up my leave before the move. What can I take instead?"),
    Case("Leaving Azure aside, how did server products revenue do?", exclude=("Azure",)),
    Case("Apart from specific event invites, what can I share with partners?", exclude=("specific event invites",)),
    Case("Aside from DHS, which agency blocks Google Forms?", exclude=("DHS",)),
    Case("I am leaving the office early; who approves it?"),
    # A statement about something else's use is ordinary negation.
    Case("Why is the nightly sync not using the proxy?"),
    Case("Which tools are not using single sign-on yet?"),
    Case(
        "2023 Q4 revenue report, excluding forecasts",
        exclude=("forecasts",),
        time=(D(2023, 10, 1), D(2024, 1, 1)),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.query for c in CASES])
def test_constraint_bearing_questions_yield_their_exclusions_scope_and_time(case: Case) -> None:
    parsed = parse(case.query)

    assert parsed.exclude == case.exclude
    assert parsed.scope_terms == case.scope
    assert parsed.phrases == case.phrases
    assert parsed.wants_latest is case.latest
    assert parsed.sources == case.sources
    assert parsed.containers == case.containers
    if case.time is None:
        assert parsed.time is None
    else:
        assert parsed.time is not None
        assert (parsed.time.after, parsed.time.before) == case.time


@pytest.mark.parametrize("case", CASES, ids=[c.query for c in CASES])
def test_text_is_a_safe_positive_query_for_every_constraint_bearing_question(case: Case) -> None:
    parsed = parse(case.query)
    reparsed = parse(parsed.text)

    # The negative words and their cues are gone, so re-parsing finds no exclusion ...
    assert reparsed.exclude == ()
    # ... while the positive words, phrases and scope survive.
    assert reparsed.phrases == parsed.phrases
    assert validate_rewrite(parsed, parsed.text).ok
    assert parsed.original == case.query


def test_seed_question_keeps_subscribers_and_drops_the_publisher_words_from_text() -> None:
    parsed = parse(SEED)

    assert parsed.text == "latest PostgreSQL logical replication changes that affect subscribers"
    assert parsed.entities == (("PostgreSQL", "postgresql"),)
    assert parsed.original == SEED


# --------------------------------------------------------------------------- rewrite validation


def test_seed_rewrite_that_adds_publisher_is_flagged_and_repaired_without_it() -> None:
    parsed = parse(SEED)
    rewrite = "postgresql logical replication publisher subscriber changes release notes"

    check = validate_rewrite(parsed, rewrite)

    assert check == RewriteCheck(
        ok=False,
        repaired="postgresql logical replication subscriber changes release notes",
        violations=("excluded:publishers",),
    )
    assert validate_rewrite(parsed, check.repaired or "").ok


def test_rewrite_matching_an_exclusion_case_insensitively_and_across_plural_forms_is_caught() -> None:
    parsed = parse("webhook docs for subscribers, not publisher")

    check = validate_rewrite(parsed, "webhook docs Subscribers PUBLISHERS")

    assert check.violations == ("excluded:publisher",)
    assert check.repaired == "webhook docs Subscribers"


def test_rewrite_that_mentions_the_excluded_term_only_negatively_is_accepted() -> None:
    parsed = parse(SEED)

    assert validate_rewrite(parsed, "postgresql logical replication subscriber changes -publisher").ok
    assert validate_rewrite(parsed, "postgresql subscriber changes, not publishers").ok


def test_rewrite_missing_scope_phrase_and_entity_is_repaired_by_appending_them() -> None:
    parsed = parse('pg "logical decoding" changes for subscribers, not publishers')

    check = validate_rewrite(parsed, "replication changes")

    assert not check.ok
    assert set(check.violations) == {
        "missing_phrase:logical decoding",
        "missing_scope:subscribers",
        "missing_entity:postgresql",
    }
    assert check.repaired == 'replication changes "logical decoding" subscribers pg'
    assert validate_rewrite(parsed, check.repaired).ok


def test_entity_counts_as_present_in_either_surface_or_canonical_form() -> None:
    parsed = parse("pg vacuum tuning")

    assert validate_rewrite(parsed, "postgresql autovacuum tuning vacuum").ok
    assert validate_rewrite(parsed, "PG vacuum settings").ok
    assert validate_rewrite(parsed, "vacuum tuning").violations == ("missing_entity:postgresql",)


def test_phrase_must_appear_verbatim_not_just_as_scattered_words() -> None:
    parsed = parse('"logical decoding" plugins')

    check = validate_rewrite(parsed, "decoding plugins for logical slots")

    assert check.violations == ("missing_phrase:logical decoding",)
    assert check.repaired == 'decoding plugins for logical slots "logical decoding"'


def test_rewrite_whose_repair_still_violates_is_rejected() -> None:
    # The required phrase itself contains the excluded word, so no repair can satisfy both.
    parsed = parse('"publisher api" changes, not publishers')

    check = validate_rewrite(parsed, "changes for publishers")

    assert check.ok is False
    assert check.repaired is None
    assert "excluded:publishers" in check.violations


def test_empty_rewrite_is_replaced_by_the_positive_text() -> None:
    parsed = parse(SEED)

    check = validate_rewrite(parsed, "   ")

    assert check.violations[0] == "empty_rewrite"
    assert check.repaired == parsed.text


def test_constraints_enforced_as_filters_names_only_the_constraints_present() -> None:
    full = parse('"blue green" deploy -staging source:slack channel:#ops after:2026-10-01')

    assert constraints_enforced_as_filters(full) == ("exclusions", "phrases", "sources", "containers", "time")
    # A time phrase names the period the content describes: a period constraint, not an updated-date filter.
    assert constraints_enforced_as_filters(parse("deploy -staging last month")) == ("exclusions",)
    assert constraints_enforced_as_filters(parse("Apple revenue in Q2 2023")) == ("periods",)
    assert constraints_enforced_as_filters(parse(SEED)) == ("exclusions",)
    assert constraints_enforced_as_filters(parse("how do I rotate keys")) == ()


# --------------------------------------------------------------------------- operators


def test_operators_are_removed_from_text_and_collected() -> None:
    parsed = parse('deploy -staging "blue green" source:Slack channel:#ops space:ENG site:"Finance Team" after:2024-03')

    assert parsed.text == 'deploy "blue green"'
    assert parsed.phrases == ("blue green",)
    assert parsed.exclude == ("staging",)
    assert parsed.sources == ("slack",)
    assert parsed.containers == ("channel:ops", "space:ENG", "site:Finance Team")
    assert parsed.time == TimeScope(after=date(2024, 3, 1), before=None, label="after:2024-03")


def test_operator_inside_a_quoted_phrase_stays_part_of_the_phrase() -> None:
    parsed = parse('"how to use source:slack" guide')

    assert parsed.phrases == ("how to use source:slack",)
    assert parsed.sources == ()


def test_hyphenated_words_and_negation_inside_a_phrase_are_not_exclusions() -> None:
    parsed = parse('e-mail retention for well-known vendors "not publishers"')

    assert parsed.exclude == ()
    assert parsed.phrases == ("not publishers",)
    assert parsed.text == 'e-mail retention for well-known vendors "not publishers"'


@pytest.mark.parametrize(
    "query",
    [
        "why is replication not working",
        "whether or not to upgrade the cluster",
        "the connector does not support publishers",
        "not only subscribers but publishers too",
    ],
)
def test_ordinary_negation_is_not_mistaken_for_an_exclusion(query: str) -> None:
    parsed = parse(query)

    assert parsed.exclude == ()
    assert parsed.text == query


def test_a_cue_with_nothing_to_exclude_is_dropped_so_it_cannot_bind_to_a_new_neighbour() -> None:
    parsed = parse("replication guide except -draft pg")

    assert parsed.exclude == ("draft",)
    assert parsed.text == "replication guide pg"
    assert parse(parsed.text).exclude == ()


def test_exclusion_object_is_capped_at_three_words_and_stops_at_a_clause_word() -> None:
    assert parse("policies excluding old legacy billing system docs").exclude == ("old legacy billing",)
    assert parse("changes without downtime that affect users").exclude == ("downtime",)


def test_negated_time_phrase_is_not_turned_into_the_opposite_time_filter() -> None:
    parsed = parse("incident reports excluding last year")

    assert parsed.time is None
    assert parsed.text == "incident reports excluding last year"


def test_operator_dates_accept_year_month_and_day_precision() -> None:
    assert parse("x after:2024").time == TimeScope(date(2024, 1, 1), None, "after:2024")
    assert parse("x before:2024-02").time == TimeScope(None, date(2024, 2, 1), "before:2024-02")
    assert parse("x after:2024-02-29").time == TimeScope(date(2024, 2, 29), None, "after:2024-02-29")


def test_operator_and_natural_time_intersect_to_the_narrowest_window() -> None:
    parsed = parse("incidents last year after:2025-06-01")

    assert parsed.time == TimeScope(date(2025, 6, 1), date(2026, 1, 1), "last year, after:2025-06-01")


# --------------------------------------------------------------------------- natural time


@pytest.mark.parametrize(
    ("phrase", "after", "before"),
    [
        ("last quarter", date(2026, 7, 1), date(2026, 10, 1)),
        ("this quarter", date(2026, 10, 1), date(2027, 1, 1)),
        ("this year", date(2026, 1, 1), date(2027, 1, 1)),
        ("last year", date(2025, 1, 1), date(2026, 1, 1)),
        ("this month", date(2026, 11, 1), date(2026, 12, 1)),
        ("last month", date(2026, 10, 1), date(2026, 11, 1)),
        ("this week", date(2026, 11, 30), date(2026, 12, 7)),
        ("last week", date(2026, 11, 23), date(2026, 11, 30)),
        ("last 7 days", date(2026, 11, 23), date(2026, 12, 1)),
        ("last two weeks", date(2026, 11, 16), date(2026, 12, 1)),
        ("past 6 months", date(2026, 5, 30), date(2026, 12, 1)),
        ("since 2024", date(2024, 1, 1), None),
        ("since March 2024", date(2024, 3, 1), None),
        ("in 2023", date(2023, 1, 1), date(2024, 1, 1)),
        ("in Q3 2023", date(2023, 7, 1), date(2023, 10, 1)),
        ("2023 Q3", date(2023, 7, 1), date(2023, 10, 1)),
        ("yesterday", date(2026, 11, 29), date(2026, 11, 30)),
        ("today", date(2026, 11, 30), date(2026, 12, 1)),
    ],
)
def test_time_phrases_resolve_against_as_of_and_keep_the_words_as_label(
    phrase: str, after: date | None, before: date | None
) -> None:
    parsed = parse(f"incident reports {phrase}")

    assert parsed.time == TimeScope(after=after, before=before, label=phrase)
    assert phrase in parsed.text  # time words stay part of the retrieval query


def test_calendar_periods_roll_back_across_a_year_boundary() -> None:
    january = datetime(2026, 1, 15)

    assert parse("x last quarter", january).time == TimeScope(date(2025, 10, 1), date(2026, 1, 1), "last quarter")
    assert parse("x last month", january).time == TimeScope(date(2025, 12, 1), date(2026, 1, 1), "last month")


def test_rolling_months_clamp_to_the_end_of_a_shorter_month() -> None:
    parsed = parse("x last 1 month", datetime(2026, 3, 31))

    assert parsed.time is not None and parsed.time.after == date(2026, 2, 28)


def test_year_inside_a_phrase_or_a_non_year_number_is_not_a_time_filter() -> None:
    assert parse('"in 2023" retro notes').time is None
    assert parse("rows in 5000 batches").time is None


# --------------------------------------------------------------------------- latest and entities


@pytest.mark.parametrize(
    "query",
    ["latest SLA", "current SLA", "newest SLA", "most recent SLA", "up to date SLA", "up-to-date SLA"],
)
def test_freshness_words_set_wants_latest(query: str) -> None:
    assert parse(query).wants_latest is True


def test_plain_question_does_not_want_latest() -> None:
    assert parse("SLA for enterprise customers").wants_latest is False


def test_alias_keys_match_as_whole_words_case_insensitively_and_keep_the_surface_form() -> None:
    parsed = parse("PG and Postgres tuning, pgadmin and k8s")

    assert parsed.entities == (("PG", "postgresql"), ("Postgres", "postgresql"), ("k8s", "kubernetes"))


def test_longest_multi_word_alias_wins_over_its_prefix() -> None:
    aliases = {"pg": "postgresql", "pg bouncer": "pgbouncer"}

    parsed = parse_query("pg  bouncer pool size for PG", AS_OF, aliases)

    # Surfaces come from the whitespace-collapsed text.
    assert parsed.entities == (("pg bouncer", "pgbouncer"), ("PG", "postgresql"))


def test_canonical_name_typed_verbatim_is_recognised_as_the_entity() -> None:
    assert parse("PostgreSQL 17 release notes").entities == (("PostgreSQL", "postgresql"),)


def test_entity_inside_an_exclusion_is_not_required_of_rewrites() -> None:
    parsed = parse("connection pooling for k8s, not postgres")

    assert parsed.entities == (("k8s", "kubernetes"),)
    assert parsed.exclude == ("postgres",)


def test_no_aliases_means_no_entities() -> None:
    assert parse_query("pg tuning", AS_OF).entities == ()


# --------------------------------------------------------------------------- unicode and original


def test_curly_quotes_make_phrases_and_text_uses_straight_quotes() -> None:
    parsed = parse("“logical decoding” plugins -“test decoding”")

    assert parsed.phrases == ("logical decoding",)
    assert parsed.exclude == ("test decoding",)
    assert parsed.text == '"logical decoding" plugins'


def test_unbalanced_quote_is_a_literal_not_an_error_and_is_dropped_from_text() -> None:
    parsed = parse('"logical decoding" plugins for 6" pipes')

    assert parsed.phrases == ("logical decoding",)
    assert parsed.text == '"logical decoding" plugins for 6 pipes'
    assert parse(parsed.text).phrases == ("logical decoding",)


def test_quotes_pair_left_to_right_so_an_operator_inside_them_is_phrase_text() -> None:
    parsed = parse('" deploy source:slack "blue green"')

    assert parsed.phrases == ("deploy source:slack",)
    assert parsed.sources == ()
    # The third quote is unpaired: a literal, dropped from text so nothing re-pairs it.
    assert parsed.text == '"deploy source:slack" blue green'


def test_phrase_punctuation_survives_text_clean_up_verbatim() -> None:
    parsed = parse('release notes "v2 , beta" , not drafts')

    assert parsed.phrases == ("v2 , beta",)
    assert parsed.text == 'release notes "v2 , beta"'


def test_text_is_nfc_normalised_but_original_is_byte_for_byte_unchanged() -> None:
    raw = "cafe\u0301  menu\u00a0\tpolicy\nlatest"

    parsed = parse(raw)

    assert parsed.text == "caf\u00e9 menu policy latest"
    assert parsed.original == raw


def test_windows_line_endings_are_accepted_as_newlines() -> None:
    assert parse("vpn setup\r\nfor contractors").text == "vpn setup for contractors"


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        ("", "empty_query"),
        ("   \n\t ", "empty_query"),
        ("source:slack after:2024", "empty_query"),
        ("-publishers", "empty_query"),
        ('" ( after:2024', "empty_query"),
        ("x" * 1001, "query_too_long"),
        ("x after:2024-13-01", "invalid_date"),
        ("x after:2024-02-30", "invalid_date"),
        ("x before:yesterday", "invalid_date"),
        ("x since 2025-02-30", "invalid_date"),
        ("x source:jira", "unknown_source"),
        ("x source:slack,drive", "unknown_source"),
        ("x after:2025 before:2024", "invalid_range"),
        ("x after:2024-01-01 before:2024-01-01", "invalid_range"),
        ("x in 2023 since 2024", "invalid_range"),
        ("bad\x00byte", "control_characters"),
        ("escape \x1b[31m", "control_characters"),
        ("delete\x7f", "control_characters"),
        ("x -source:slack", "unsupported_operator"),
        ("release notes excluding source:slack", "unsupported_operator"),
    ],
)
def test_bad_input_raises_query_error_with_a_stable_code(raw: str, code: str) -> None:
    with pytest.raises(QueryError) as excinfo:
        parse(raw)

    assert excinfo.value.code == code
    assert excinfo.value.message
    assert isinstance(excinfo.value, ValueError)


def test_two_named_periods_are_a_comparison_not_a_contradiction() -> None:
    parsed = parse("What was Intel's total revenue in Q2 2023, and how much was it down from Q2 2022?")
    assert [p.label for p in parsed.periods] == ["Q2 2023", "Q2 2022"]
    assert parsed.time_filter is None  # time words never filter on updated dates


def test_a_quarter_named_after_its_year_or_by_the_date_it_ended_is_that_quarter() -> None:
    parsed = parse("NVIDIA's revenue in its fiscal 2024 second quarter, the one that ended July 30, 2023?")
    assert [(p.unit, p.year, p.quarter, p.fiscal, p.end) for p in parsed.periods] == [
        ("quarter", 2024, 2, True, ""),
        ("quarter", 2023, None, None, "2023-07-30"),
    ]
    assert [p.end for p in parse("Revenue for the quarter that ended March 31, 2023").periods] == ["2023-03-31"]
    assert [p.end for p in parse("Revenue in the quarter ending March 31, 2023").periods] == ["2023-03-31"]
    assert parse("Who is the one that ended our meeting?").periods == ()


def test_a_query_of_exactly_the_maximum_length_is_accepted() -> None:
    assert len(parse("x" * 1000).text) == 1000


def test_tab_and_newline_are_allowed_control_characters() -> None:
    assert parse("a\tb\nc").text == "a b c"


def test_an_article_does_not_cut_an_excluded_phrase_short() -> None:
    parsed = parse("Other than creating a public repo, what can I do in GitHub without approval?")

    assert "creating a public repo" in parsed.exclude


def test_without_in_a_question_is_the_case_asked_about_not_something_set_aside() -> None:
    assert parse("Can partners join a mural without an account of their own?").exclude == ()
    assert parse("How long can a repo sit without activity before it is archived?").exclude == ()
    assert parse("Is it OK to split my leave into chunks without getting my supervisor to sign off?").exclude == ()
    assert parse("My Mac won't let me log in without it. What can I do?").exclude == ()
    parsed = parse("Other than creating a public repo, what can I do in GitHub without asking for approval?")
    assert parsed.exclude == ("creating a public repo",)
    assert "without asking for approval" in parsed.text
    # A statement of what is measured sets the term aside, as does "without using X".
    assert parse("Amazon segment net sales in 2023 without AWS: what were they?").exclude == ("AWS",)
    assert parse("VPN setup without using WireGuard").exclude == ("using WireGuard",)


def test_the_rest_of_a_fronted_set_aside_clause_is_not_a_question_word() -> None:
    parsed = parse("Other than running npm deprecate for npm packages, how should I mark a Python package?")

    assert parsed.exclude == ("running npm deprecate",)
    assert parsed.text == "how should I mark a Python package?"
    # Mid-sentence, the words after the set-aside term stay the question's.
    assert "for npm packages" in parse("How do I deprecate, other than npm deprecate for npm packages?").text
