"""Stage 1, query understanding: the raw question becomes a ``QueryPlan``.

Everything here is deterministic.  Operators and constraints come from
``parse_query`` (never from a rewriter); rewritten retrieval queries are
proposals that must pass ``validate_rewrite``: a proposal that drops an
exclusion, a phrase, a scope term or an entity is repaired or dropped, and the
trace records which.  The user's original string is always the first retrieval
leg, so a bad rewrite can only add noise, never remove the user's words.

The plan also decides the *shape* of the answer:

* ``navigational``: the user wants a page, not a paragraph: the engine returns the
  ranked list directly.
* ``multi_hop``: "the framework behind orders-api ..." is two lookups: hop 1 finds
  the value (``framework orders-api``), hop 2 searches with that value bound in.
* ``current_version``: "latest / current / newest": the engine first finds the
  newest version the index knows about (metadata, not a model's memory), then
  scopes the answer to it and checks it against the tenant's freshness feed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import date, datetime
from typing import Any

from answers.comparisons import split_comparison
from answers.compound import split_compound
from answers.contracts import Comparison, Hop, ParsedQuery, QueryPlan, RewriteRecord, to_jsonable
from answers.lexicon import STOPWORDS, asked_clause, without_sales_modifiers
from answers.models import EntityAlias
from answers.query_parser import constraints_enforced_as_filters, parse_query, validate_rewrite

# A rewriter proposes extra retrieval queries (a model, a synonym table...): (name, query) pairs.
Rewriter = Callable[[ParsedQuery], list[tuple[str, str]]]

MAX_HOPS = 3


@dataclass(frozen=True)
class RequestFilters:
    sources: tuple[str, ...] = ()
    containers: tuple[str, ...] = ()
    after: Any = None
    before: Any = None
    official_only: bool = False


def load_aliases() -> dict[str, str]:
    """The current tenant's alias list (surface form -> canonical); call inside tenant_context."""

    return {a.alias: a.canonical for a in EntityAlias.objects.all().only("alias", "canonical")}


# --------------------------------------------------------------------------- rewrites

_QUESTION_WORDS = frozenset({"please", "tell", "know", "explain", "describe", "show", "give", "find", "me"})
_TOKEN_OR_PHRASE_RE = re.compile(r'"[^"]*"|[^\s"]+')


def keyword_rewrite(parsed: ParsedQuery) -> str:
    """The discriminating terms of ``parsed.text`` (quoted phrases kept whole)."""
    out: list[str] = []
    for tok in _TOKEN_OR_PHRASE_RE.findall(parsed.text):
        if tok.startswith('"'):
            out.append(tok)
            continue
        word = tok.strip(".,;:!?()[]{}")
        if word and word.lower() not in STOPWORDS and word.lower() not in _QUESTION_WORDS:
            out.append(word)
    return " ".join(out)


def latest_turns_rewrite(parsed: ParsedQuery) -> str:
    """The terms of a resolved follow-up's last two questions, or "" for any other question.

    "What if I land at Oakland instead: How much is that BART fare: I'm flying into SFO to visit the San
    Francisco office. What's the easiest way …?" is searched as "land Oakland instead BART fare" too: with
    every earlier turn's words, the legs rank the pages about the first question (SFO) above the section
    the last one asks for (Oakland)."""
    head = asked_clause(parsed.text)
    if head == parsed.text:
        return ""
    tail = parsed.text[len(head) :].lstrip(": ")
    before = asked_clause(tail)
    if before == tail:
        return ""  # two turns: the keywords leg has these words already
    return keyword_rewrite(replace(parsed, text=f"{head} {before}"))


def alias_rewrite(parsed: ParsedQuery) -> str:
    """``parsed.text`` with each aliased entity replaced by its canonical name (PG -> PostgreSQL)."""
    text = parsed.text
    for surface, canonical in parsed.entities:
        if surface.casefold() != canonical.casefold():
            text = re.sub(rf"(?<!\w){re.escape(surface)}(?!\w)", canonical, text)
    return text


# What people ask for, in the words financial statements print (a 10-Q's row is "Total net sales", not
# "revenue"): a leg with these words finds the statement row that the question's words never match.
_FILING_TERMS: dict[str, str] = {
    "revenue": "total net sales revenue", "revenues": "total net sales revenue", "sales": "total net sales",
    "profit": "net income", "profits": "net income", "earnings": "net income",
    "r&d": "research and development", "sg&a": "selling general and administrative",
}  # fmt: skip


# "Did that segment make money?", "make or lose money at the operating level": a statement's operating income.
_MONEY_RE = re.compile(r"\b(?:make|makes|made|making|lose|loses|lost|losing)\s+(?:any\s+)?money\b", re.I)


def filing_terms_rewrite(parsed: ParsedQuery) -> str:
    """The keywords plus the statement words for the asked attribute ("" when none is asked)."""
    text = without_sales_modifiers(parsed.text)  # "sales and marketing" is not revenue
    words = {re.sub(r"['\u2019]s$", "", w.lower().strip('.,;:!?()"')) for w in text.split()}
    extra = [phrase for word, phrase in _FILING_TERMS.items() if word in words]
    if _MONEY_RE.search(text):
        extra.append("operating income loss")
    if not extra:
        return ""
    return f"{keyword_rewrite(parsed)} {extra[0]}"


def default_rewriter(parsed: ParsedQuery) -> list[tuple[str, str]]:
    proposals = [("keywords", keyword_rewrite(parsed))]
    if any(s.casefold() != c.casefold() for s, c in parsed.entities):
        proposals.append(("aliases", alias_rewrite(parsed)))
    latest = latest_turns_rewrite(parsed)
    if latest:
        proposals.append(("latest_turns", latest))
    filing = filing_terms_rewrite(parsed)
    if filing:
        proposals.append(("filing_terms", filing))
    return proposals


def checked_rewrite(parsed: ParsedQuery, source: str, proposed: str) -> RewriteRecord:
    """Run one proposal through the validator: keep it, keep its repair, or drop it."""
    check = validate_rewrite(parsed, proposed)
    used = proposed if check.ok else check.repaired
    return RewriteRecord(source=source, proposed=proposed, used=used, violations=check.violations)


# --------------------------------------------------------------------------- intents

_NAV_PREFIX_RE = re.compile(
    r"^\s*(?:go\s+to|open|take\s+me\s+to|link\s+to|navigate\s+to|where\s+is\s+the\s+.+\s+(?:page|site))\b", re.I
)
_NAV_SUFFIX_RE = re.compile(r"\b(?:page|homepage|home\s+page|site|portal|dashboard|login)\s*$", re.I)
_QUESTION_START_RE = re.compile(
    r"^\s*(?:who|what|when|where|why|how|which|is|are|does|do|did|can|could|should|will|would)\b", re.I
)


def is_navigational(parsed: ParsedQuery) -> bool:
    """The user wants a page ("go to the travel page", "VPN setup page"), not an answer."""
    text = parsed.original.strip()
    if _NAV_PREFIX_RE.search(text):
        return True
    words = text.split()
    return (
        "?" not in text
        and len(words) <= 6
        and bool(_NAV_SUFFIX_RE.search(text.rstrip(".!")))
        and not _QUESTION_START_RE.search(text)
    )


# Relations a first hop can look up; the value is then bound into the second hop.
RELATION_CUES: dict[str, tuple[str, ...]] = {
    "framework": ("framework", "runtime", "stack"),
    "runtime": ("runtime", "framework"),
    "language": ("language", "runtime", "written in"),
    "database": ("database", "datastore", "db"),
    "library": ("library", "dependency"),
    "platform": ("platform", "runtime"),
    "owner": ("owner", "owned by", "team"),
    "team": ("team", "owner", "owned by"),
    "vendor": ("vendor", "supplier"),
    "version": ("version", "runtime"),
    "region": ("region",),
}
_REL_ALT = "|".join(sorted(RELATION_CUES, key=len, reverse=True))
_HOP_RE = re.compile(
    rf"\bthe\s+(?P<rel>{_REL_ALT})\s+(?:behind|of|used\s+by|that\s+runs|running|powering|that\s+powers|for)\s+"
    r"(?P<subj>[A-Za-z0-9][\w.\-/]*[\w])",
    re.IGNORECASE,
)
_MONTHS = {
    m: i
    for i, m in enumerate(
        ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
         "november", "december"], start=1)
}  # fmt: skip
_DATE_RE = re.compile(
    r"\b(?P<op>on|by|until|through|after|before)\s+"
    r"(?:(?P<iso>\d{4}-\d{2}-\d{2})|(?P<mon>[A-Za-z]+)\s+(?P<day>\d{1,2}),?\s+(?P<year>\d{4})"
    r"|(?P<day2>\d{1,2})\s+(?P<mon2>[A-Za-z]+)\s+(?P<year2>\d{4}))\b",
    re.IGNORECASE,
)
_FILLER = frozenset({"still", "ever", "yet", "currently", "actually", "really"})


def _comparison(text: str) -> Comparison | None:
    m = _DATE_RE.search(text)
    if m is None:
        return None
    try:
        if m.group("iso"):
            value = date.fromisoformat(m.group("iso"))
        elif m.group("mon"):
            value = date(int(m.group("year")), _MONTHS[m.group("mon").lower()], int(m.group("day")))
        else:
            value = date(int(m.group("year2")), _MONTHS[m.group("mon2").lower()], int(m.group("day2")))
    except (KeyError, ValueError):
        return None
    op = m.group("op").lower()
    operator = {"after": "after", "before": "before"}.get(op, "on_or_before")
    return Comparison(kind="date", operator=operator, value=value, surface=m.group())  # type: ignore[arg-type]


def _content_words(text: str) -> list[str]:
    words = [w.strip(".,;:!?()\"'") for w in text.split()]
    return [w for w in words if w and w.lower() not in STOPWORDS and w.lower() not in _FILLER]


def decompose(parsed: ParsedQuery, comparison: Comparison | None) -> tuple[Hop, ...]:
    """Split "the <relation> behind <subject> ..." into a lookup hop and a dependent hop."""
    m = _HOP_RE.search(parsed.text)
    if m is None:
        return ()
    rest = parsed.text[: m.start()] + " " + parsed.text[m.end() :]
    if comparison is not None:
        rest = rest.replace(comparison.surface, " ")
    remainder = [w for w in _content_words(rest) if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", w)]
    if not remainder:
        return ()  # "who is the owner of orders-api?" is a single lookup
    rel, subj = m.group("rel").lower(), m.group("subj")
    return (
        Hop(id="h1", query=f"{rel} {subj}", extracts=rel, subject=subj),
        Hop(id="h2", query="{value} " + " ".join(remainder), depends_on="h1"),
    )


# --------------------------------------------------------------------------- the stage


def plan_question(
    question: str,
    as_of: datetime,
    extra: RequestFilters | None = None,
    *,
    aliases: Mapping[str, str] | None = None,
    rewriter: Rewriter | None = None,
) -> QueryPlan:
    """Parse, decompose, rewrite and validate.  Raises ``QueryError`` for bad input."""
    extra = extra or RequestFilters()
    parsed = parse_query(question, as_of, aliases)
    records: list[RewriteRecord] = []
    proposals = (rewriter or default_rewriter)(parsed)
    for source, proposed in proposals:
        records.append(checked_rewrite(parsed, source, proposed))
    queries: list[str] = [parsed.original]  # always the first leg
    for rec in records:
        if rec.used and rec.used.strip() and rec.used not in queries:
            queries.append(rec.used)

    comparison = _comparison(parsed.original)
    hops = decompose(parsed, comparison)
    if hops:
        first = checked_rewrite(parsed, f"hop:{hops[0].id}", hops[0].query)
        records.append(first)
        hops = (replace(hops[0], query=first.used or hops[0].query), *hops[1:])
    intent = "answer"
    if is_navigational(parsed):
        intent = "navigational"
    elif hops:
        intent = "multi_hop"
    elif split_comparison(parsed.original, parsed) is not None:
        intent = "compare"  # two figures, each looked up on its own, compared in code (answers/comparisons.py)
    elif split_compound(parsed.original) is not None:
        intent = "compound"  # two or three questions joined by "and", each answered on its own (answers/compound.py)
    elif parsed.wants_latest:
        intent = "current_version"

    # Only an explicit request filters on the documents' updated date: the request's filters
    # or the after:/before: operators.  Time words ("Q2 2023", "last year") name the period
    # the content describes and are resolved against document metadata by the engine.
    window = parsed.time_filter
    after = extra.after or (window.after if window else None)
    before = extra.before or (window.before if window else None)
    filters = {
        "sources": sorted(set(parsed.sources) | set(extra.sources)),
        "containers": sorted(set(parsed.containers) | set(extra.containers)),
        "after": after,
        "before": before,
        "exclude": list(parsed.exclude),
        "phrases": list(parsed.phrases),
        "official_only": extra.official_only,
    }
    return QueryPlan(
        parsed=parsed,
        as_of=as_of,
        retrieval_queries=tuple(queries),
        filters=filters,
        intent=intent,
        rewrites=tuple(records),
        enforced_as_filters=constraints_enforced_as_filters(parsed),
        hops=hops[:MAX_HOPS],
        comparison=comparison,
        needs_current_version=parsed.wants_latest,
    )


def time_applied(plan: QueryPlan) -> list[str]:
    """What the plan applies as time constraints: the content period and/or an updated-date window."""
    out: list[str] = []
    if plan.period_scope:
        out.append(f"content period: {plan.period_label or ', '.join(plan.period_scope)}")
    elif plan.parsed.periods:
        out.append("content period: " + ", ".join(p.label for p in plan.parsed.periods) + " (not resolved)")
    if plan.filters.get("after") or plan.filters.get("before"):
        a, b = plan.filters.get("after"), plan.filters.get("before")
        out.append(f"updated date: {a.isoformat() if a else '…'} to {b.isoformat() if b else '…'}")
    return out


def plan_json(plan: QueryPlan) -> dict[str, Any]:
    p = plan.parsed
    return {
        "original": p.original,
        "normalized": p.text,
        "intent": plan.intent,
        "phrases": list(p.phrases),
        "exclude": list(p.exclude),
        "sources": list(p.sources),
        "containers": list(p.containers),
        "time": to_jsonable(p.time_filter) if p.time_filter else None,
        "time_words": to_jsonable(p.time) if p.time else None,
        "periods": [to_jsonable(x) for x in p.periods],
        # Which time constraint was applied, in words, for the plan shown to the user.
        "time_applied": time_applied(plan),
        "entity_scope": list(plan.entity_scope),
        "period_scope": list(plan.period_scope),
        "period_label": plan.period_label,
        "wants_latest": p.wants_latest,
        "needs_current_version": plan.needs_current_version,
        "version_scope": plan.version_scope,
        "scope_terms": list(p.scope_terms),
        "entities": [list(e) for e in p.entities],
        "retrieval_queries": list(plan.retrieval_queries),
        "rewrites": [to_jsonable(r) for r in plan.rewrites],
        "enforced_as_filters": list(plan.enforced_as_filters),
        "hops": [to_jsonable(h) for h in plan.hops],
        "comparison": to_jsonable(plan.comparison) if plan.comparison else None,
        "filters": to_jsonable(plan.filters),
        "as_of": plan.as_of.isoformat(),
    }


__all__ = [
    "MAX_HOPS",
    "RequestFilters",
    "Rewriter",
    "alias_rewrite",
    "checked_rewrite",
    "decompose",
    "default_rewriter",
    "is_navigational",
    "keyword_rewrite",
    "load_aliases",
    "plan_json",
    "plan_question",
]
